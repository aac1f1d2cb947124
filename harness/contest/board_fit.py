"""One rating everywhere: the leaderboard, the finals' selection and ``harness table`` show the batch fit.

``harness table ladder.yaml`` fits TrueSkill's model to every game at once
(:func:`harness.report.tables.league_table`); the leaderboard shows that fit's mu, sigma, order
and P(>next) too, read from the ``board_fit`` table of ``contest.sqlite`` (one row per version),
which :class:`Refitter` rewrites in the ladder's process as games arrive: a fit when the games
changed, at most every :data:`REFIT_SECONDS` (sooner when the games doubled) and never more than
a tenth of the time (a fit at 1,000,000 games takes seconds). The page says how old the fit is; a version that played since
the last fit shows the incremental rating until the next one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.contest import db_ops
from harness.contest.config import ContestConfig
from harness.contest.db import ContestDB

__all__ = ["refit", "Refitter", "REFIT_SECONDS", "fit_note"]

REFIT_SECONDS = 30.0


def refit(cfg: ContestConfig, db: ContestDB, config_path: Path | None = None,
          store_path: Path | None = None) -> int:
    """Fit the ladder's games (as ``harness table`` does) into ``board_fit``; return the games fitted."""
    from harness.contest.ladder import LADDER_CONFIG, LADDER_STORE, submission_of
    from harness.league.config import ConfigError, load_config
    from harness.league.store import LeagueStore, StoreError
    from harness.report.tables import league_table

    config_path = config_path or cfg.root / LADDER_CONFIG
    store_path = store_path or cfg.root / LADDER_STORE
    if not config_path.exists() or not store_path.exists():
        return 0
    try:
        league = load_config(config_path)
        with LeagueStore(store_path, create=False) as store:
            games = store.counts()["done"]
            # the current versions (the roster), ordered and compared by a fit over every game
            rows = league_table(store, league, current_only=True) if games else []
    except (ConfigError, StoreError) as exc:  # a config being rewritten, a store being made: next time
        print(f"the leaderboard's fit waits: {exc}", flush=True)
        return 0
    fitted = [(sid, r.mu, r.sigma, r.rank, r.p_better, getattr(r, "noisy", None), getattr(r, "widened", None))
              for r in rows if (sid := submission_of(r.version)) is not None]
    db_ops.write_fit(db, fitted, int(games))
    return int(games)


class Refitter:
    """Refits the leaderboard on a thread of its own while the ladder plays."""

    def __init__(self, cfg: ContestConfig, db: ContestDB, games: Callable[[], int],
                 every: float = REFIT_SECONDS) -> None:
        self.cfg, self.db, self.games, self.every = cfg, db, games, every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="contest-refit", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _loop(self) -> None:
        fitted, due = 0, 0.0  # the games of the last fit; when the next may start
        while not self._stop.wait(1.0):
            games = self.games()
            # a fit when the games changed and its time came, or at once when they doubled (the
            # first games move the ratings most)
            if games == fitted or (time.monotonic() < due and games < 2 * fitted):
                continue
            started = time.monotonic()
            got = refit(self.cfg, self.db)
            if got:  # 0: no games, or the ladder's config not written yet: next second
                fitted = got
                due = time.monotonic() + max(self.every, 10 * (time.monotonic() - started))


def fit_note(db: ContestDB, now: float | None = None) -> str:
    """What the page says of its ratings: the fit's age and games, or that none was made yet."""
    from harness.contest.ladder import _age

    at, games = db.get_meta("fit_at"), db.get_meta("fit_games")
    if not at:
        return ("the incremental TrueSkill, until the ladder's first batch fit (harness table's, made in the "
                "background once games are played)")
    age = _age((time.time() if now is None else now) - float(at))
    return f"the batch fit of harness table, over {int(games or 0):,} games, made {age} ago"
