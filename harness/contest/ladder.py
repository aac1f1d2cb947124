"""The ladder: an ordinary league over every team's current version, kept playing as teams upload.

``DIR/ladder.yaml`` is written from the roster (each team's current version: bot name = the team,
version = ``s<submission id>``, run in its upload's directory) and played by the league runner into
``DIR/ladder.sqlite``. :func:`play_ladder` is the one place that decides what to play next: until
the adaptive schedule for a changing roster lands, it re-plans a round robin over the current
versions whenever the roster changes (the runner is asked to stop, games in flight are recorded,
games of replaced versions are dropped by the re-plan) and adds a round when one is finished.

The leaderboard never reads the games: :class:`Standings` adds each recorded game to the
contest database's ``standings`` summary (games, wins, rank sum, forfeits, and the version's
current rating, which the runner writes through), in one short transaction per second. A full
rebuild from the store (:meth:`Standings.rebuild`) runs when the ladder starts, so a crash never
leaves the summary wrong for long.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.contest.config import ContestConfig
from harness.contest.db import ContestDB
from harness.contest.pace import Pace
from harness.contest.rows import RosterEntry
from harness.league import queries
from harness.league.config import LeagueConfig, games_per_round, load_config
from harness.league.ratings import conservative
from harness.league.run_settings import ScheduleKind
from harness.league.store import LeagueStore
from harness.league.store_record import GameOutcome

__all__ = ["write_ladder_config", "play_ladder", "Standings", "roster_key", "LADDER_CONFIG", "LADDER_STORE",
           "version_label", "leaderboard_rows"]

LADDER_CONFIG = "ladder.yaml"
LADDER_STORE = "ladder.sqlite"
#: Games the ladder plans at least each time it adds rounds.
ROUND_GAMES = 200
#: How often the ladder looks for a changed roster (seconds).
ROSTER_POLL = 2.0


def version_label(submission_id: int) -> str:
    return f"s{submission_id}"


def submission_of(label: str) -> int | None:
    return int(label[1:]) if label.startswith("s") and label[1:].isdigit() else None


def roster_key(db: ContestDB) -> tuple[tuple[str, int], ...]:
    return tuple((r.team, r.submission_id) for r in db.roster())


def table_sizes(cfg: ContestConfig, teams: int) -> list[int]:
    """The contest's table sizes that ``teams`` teams can fill (a ladder of 3 teams plays the
    tables of 2 and 3 until a fourth team arrives)."""
    return [n for n in cfg.players if n <= teams]


def league_data(cfg: ContestConfig, roster: Sequence[RosterEntry], *, name: str, rounds: int, store: str,
                adaptive: bool = False) -> dict[str, Any]:
    """A league config (as YAML data) playing ``roster`` (rows of team, submission_id, runtime):
    ``rounds`` of the round robin, or the adaptive schedule (every table size of the contest)."""
    bots = []
    for r in roster:
        runtime = cfg.runtimes.get(r.runtime)
        if runtime is None:
            continue
        bots.append({"name": r.team, "command": " ".join(runtime.run), "version": version_label(r.submission_id),
                     "cwd": str(cfg.submissions_dir / str(r.submission_id))})
    data: dict[str, Any] = {"name": name, "game": cfg.game, "players": table_sizes(cfg, len(bots)), "bots": bots,
                            "rounds": rounds, "time": dict(cfg.time), "limits": dict(cfg.limits),
                            "workers": cfg.workers, "store": store, "logs": dict(cfg.logs)}
    if adaptive:
        del data["rounds"]
        data["players"] = list(cfg.players)  # fixed for the life of an adaptive run
        data["schedule"] = ScheduleKind.ADAPTIVE.value
    if cfg.options:
        data["options"] = dict(cfg.options)
    if cfg.executor:
        data["executor"] = dict(cfg.executor)
    return data


def write_config(path: Path, data: dict[str, Any]) -> LeagueConfig:
    """Write a league config (atomically) and load it back, checked as ``harness run`` checks it."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text("# written by harness contest from the roster: edit contest.yaml, not this file\n"
                   + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    tmp.replace(path)
    return load_config(path)


def write_ladder_config(cfg: ContestConfig, db: ContestDB, rounds: int) -> LeagueConfig | None:
    """The ladder's league config for the current roster; None while it has too few teams."""
    roster = db.roster()
    if len(roster) < 2 or not table_sizes(cfg, len(roster)):
        return None
    data = league_data(cfg, roster, name=f"{cfg.name}-ladder", rounds=rounds, store=LADDER_STORE)
    return write_config(cfg.root / LADDER_CONFIG, data)


class Standings:
    """Keeps the contest's ``standings`` summary up to date as the runner records games."""

    def __init__(self, db: ContestDB, store_path: Path, after_flush: Callable[[], object] | None = None) -> None:
        self.db = db
        self.store_path = store_path
        self.after_flush = after_flush  # e.g. the auto-pause (harness.contest.autopause)
        self._seqs: list[int] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._local = threading.local()  # one store connection per thread: sqlite3's stay in theirs

    def _read(self) -> LeagueStore:
        store: LeagueStore | None = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = LeagueStore(self.store_path, create=False)
        return store

    def _close(self) -> None:
        store: LeagueStore | None = getattr(self._local, "store", None)
        if store is not None:
            store.close()
            self._local.store = None

    def on_game(self, seq: int, outcome: GameOutcome) -> None:
        """The runner's callback (its transaction is not committed yet: the game is read later)."""
        with self._lock:
            self._seqs.append(seq)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="contest-standings", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.flush()
        self._close()

    def _loop(self) -> None:
        try:
            while not self._stop.wait(1.0):
                self.flush()
        finally:
            self._close()

    def flush(self) -> int:
        """Add the games recorded since the last flush; return how many."""
        with self._lock:
            seqs, self._seqs = self._seqs, []
        if not seqs or not self.store_path.exists():
            return 0
        totals, found = queries.seat_totals(self._read(), seqs)
        missing = [s for s in seqs if s not in found]
        if missing:  # not committed yet when read: next time
            with self._lock:
                self._seqs.extend(missing)
        rows, ratings = self._rows(totals)
        self.db.add_results(rows, ratings, games=len(found))
        if self.after_flush is not None:
            self.after_flush()
        return len(found)

    def _rows(self, totals: dict[int, list[int]]) -> tuple[list[list[int]], dict[int, tuple[float, float]]]:
        """Summary rows keyed by submission id, and the current ratings of every version in the
        summary: a game rated late (it waited behind one in flight) moves the rating of a version
        that played nothing since, so the batch's versions alone would leave it stale."""
        store = self._read()
        labels = {vid: sid for vid, label in queries.version_labels(store, list(totals)).items()
                  if (sid := submission_of(label)) is not None}
        rated = {**self.db.standing_versions(), **labels}
        ratings = {rated[vid]: r for vid, r in store.load_ratings(list(rated)).items()}
        return [[labels[vid], vid, *t] for vid, t in totals.items() if vid in labels], ratings

    def rebuild(self) -> None:
        """Recompute the whole summary from the store (once, when the ladder starts)."""
        if not self.store_path.exists():
            return
        totals, _ = queries.seat_totals(self._read())
        rows, ratings = self._rows(totals)
        self.db.reset_standings(rows, ratings, games=self._read().counts()["done"])


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{int(seconds)} s"
    if seconds < 7200:
        return f"{int(seconds // 60)} min"
    if seconds < 172800:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


def leaderboard_rows(db: ContestDB) -> list[dict[str, Any]]:
    """Every team, best first by the batch fit (``harness table``'s order: mu, from
    :mod:`.board_fit`); versions the last fit has not seen after, by the incremental rating's
    mu - 3 sigma; teams without a checked version last (``version`` None), by name."""
    now = time.time()
    rows: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []
    default_mu, default_sigma = 25.0, 25.0 / 3
    for r in db.leaderboard():
        if r.submission_id is None:
            waiting.append({"team": r.team, "submission_id": None, "version": None, "disabled": r.disabled})
            continue
        fitted = r.fit_mu is not None and r.fit_sigma is not None  # (board_fit has both or neither)
        if r.fit_mu is not None and r.fit_sigma is not None:
            mu, sigma = r.fit_mu, r.fit_sigma
        else:
            mu = r.mu if r.mu is not None else default_mu
            sigma = r.sigma if r.sigma is not None else default_sigma
        games = r.games or 0
        rows.append({"team": r.team, "submission_id": r.submission_id, "version": version_label(r.submission_id),
                     "runtime": r.runtime, "mu": mu, "sigma": sigma, "rating": conservative(mu, sigma),
                     "games": games, "wins": r.wins or 0, "forfeits": r.forfeits or 0,
                     "violations": r.violations or 0, "mean_rank": ((r.rank_sum or 0) / games + 1) if games else None,
                     "age": _age(now - (r.activated_at or now)), "disabled": r.disabled, "fitted": fitted,
                     "fit_rank": r.fit_rank, "p_better": r.p_better if fitted else None,
                     "noisy": r.noisy, "widened": r.widened, "noise": r.noise})
    rows.sort(key=lambda x: (not x["fitted"], x["fit_rank"] or 0, -x["rating"]))
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    for row, below in zip(rows, [*rows[1:], None]):
        # the fit's P(>next) holds between the fit's neighbours only
        if below is None or not below["fitted"] or below["fit_rank"] != (row["fit_rank"] or 0) + 1:
            row["p_better"] = None
    return rows + sorted(waiting, key=lambda x: x["team"])


def play_ladder(cfg: ContestConfig, db: ContestDB, *, should_stop: Callable[[], bool],
                on_game: Callable[[int, GameOutcome], None] | None = None, progress: bool = False,
                max_games: int | None = None, echo: Callable[[str], None] = print, dask: str | None = None,
                pace: Pace | None = None, between_rounds: Callable[[], object] | None = None) -> int:
    """Play the ladder until ``should_stop()``; return the games played.

    With the adaptive schedule (``ladder: adaptive``), one ``run_league`` call re-reads the
    roster between rounds and plays on; else a loop of round robins re-planned when the roster
    changes. Either way the runner stops whenever the pace's bucket is empty (``ladder.games_per_hour``,
    :mod:`.pace`), the ladder sleeps until a game is allowed and starts it again.
    """
    pace = pace or Pace(cfg.games_per_hour)
    caller_stop, outer_on_game = should_stop, on_game
    counted: list[int] = []
    interrupted = threading.Event()  # Ctrl-C inside the runner: the games in flight were recorded

    def outer_stop() -> bool:
        return interrupted.is_set() or caller_stop()

    settled = _Settled(cfg, db)

    def paced_stop() -> bool:
        return (outer_stop() or pace.exhausted() or (max_games is not None and len(counted) >= max_games)
                or settled())

    def counted_game(seq: int, outcome: GameOutcome) -> None:
        counted.append(seq)
        pace.take()
        if outer_on_game is not None:
            outer_on_game(seq, outcome)

    def rest() -> bool:
        """Sleep while the pace allows no game or the order is settled; False once the caller wants to stop."""
        if outer_stop() or (max_games is not None and len(counted) >= max_games):
            return False
        if between_rounds is not None:  # e.g. the challenges (harness.contest.challenges)
            between_rounds()
        if settled():
            db.set_meta("ladder_state", json.dumps({"state": "settled", "confidence": cfg.settle_confidence}))
            echo(f"the order is settled (every team above the next with probability >= {cfg.settle_confidence}): "
                 f"resting until a team's version changes")
            _sleep_until(lambda: outer_stop() or not settled(), 24 * 3600.0)
        wait = pace.wait_seconds()
        if wait > 0:
            db.set_meta("ladder_state", json.dumps({"state": "paced", "until": time.time() + wait,
                                                    "games_per_hour": cfg.games_per_hour}))
            echo(f"at the pace of {cfg.games_per_hour} games an hour: the next game in {wait:.0f} s")
            _sleep_until(outer_stop, wait)
        if outer_stop():
            return False
        db.set_meta("ladder_state", json.dumps({"state": "playing", "games_per_hour": cfg.games_per_hour}))
        return True

    try:
        if cfg.ladder == ScheduleKind.ADAPTIVE:
            while rest():
                _play_adaptive(cfg, db, should_stop=paced_stop, on_game=counted_game, progress=progress, echo=echo,
                               dask=dask, interrupted=interrupted, between_rounds=between_rounds)
        else:
            left = None if max_games is None else (lambda: max_games - len(counted))
            _play_round_robin(cfg, db, should_stop=paced_stop, on_game=counted_game, progress=progress, echo=echo,
                              dask=dask, rest=rest, pace=pace, interrupted=interrupted, left=left)
    finally:
        db.set_meta("ladder_state", json.dumps({"state": "stopped", "at": time.time()}))
    return len(counted)


def _play_round_robin(cfg: ContestConfig, db: ContestDB, *, should_stop: Callable[[], bool],
                      on_game: Callable[[int, GameOutcome], None], progress: bool, echo: Callable[[str], None],
                      dask: str | None, rest: Callable[[], bool], pace: Pace, interrupted: threading.Event,
                      left: Callable[[], int] | None) -> None:
    """Round robins over the current roster, re-planned when it changes, more rounds planned when played."""
    from harness.league.runner import LeagueInterrupted, RunHooks, RunOptions, run_league

    rounds = int(db.get_meta("ladder_rounds", "1") or 1)
    while rest():
        key = roster_key(db)
        league = write_ladder_config(cfg, db, rounds)
        if league is None:
            echo(f"waiting for teams: {len(key)} with a checked version, the ladder needs {max(2, min(cfg.players))}")
            _sleep_until(_RosterWatch(db, key, should_stop, poll=0.5), 5.0)
            continue
        stop_now = _RosterWatch(db, key, should_stop, poll=ROSTER_POLL)
        try:
            summary = run_league(league, progress=progress,
                                 options=RunOptions(dask=dask, max_games=None if left is None else left()),
                                 hooks=RunHooks(on_game=on_game, should_stop=stop_now))
        except LeagueInterrupted:
            echo("interrupted: the games in flight were recorded")
            interrupted.set()
            break
        if stop_now.changed:
            echo(f"roster changed: re-planning ({len(roster_key(db))} teams)")
        elif summary.played == 0 and not summary.errors and not pace.exhausted():
            # every round played: plan more, at least ROUND_GAMES games, so that a small ladder does
            # not pay a plan and the workers' start for every two games
            per_round = games_per_round(len(league.bots), league.table_sizes)
            rounds += max(1, -(-ROUND_GAMES // max(1, per_round)))
            db.set_meta("ladder_rounds", str(rounds))
            echo(f"all rounds played: planning up to round {rounds} ({per_round:,} games a round)")
        elif summary.errors:
            echo(f"the runner reported {len(summary.errors)} error(s): {summary.errors[-1].strip().splitlines()[-1]}")
            _sleep_until(should_stop, 5.0)


def _play_adaptive(cfg: ContestConfig, db: ContestDB, *, should_stop: Callable[[], bool],
                   on_game: Callable[[int, GameOutcome], None] | None, progress: bool, echo: Callable[[str], None],
                   dask: str | None, interrupted: threading.Event,
                   between_rounds: Callable[[], object] | None = None) -> int:
    """The ladder on the league's adaptive schedule: one run that plays on, the roster polled
    between its rounds (:class:`_AdaptiveRoster` rewrites ``ladder.yaml`` when it changed);
    returns when ``should_stop()`` (the pace's bucket is empty, or the caller stops)."""
    from harness.league.runner import LeagueInterrupted, RunHooks, RunOptions, run_league

    played = 0
    need = max(2, max(cfg.players))
    while not should_stop():
        key = roster_key(db)
        if len(key) < need:
            echo(f"waiting for teams: {len(key)} with a checked version, the adaptive ladder needs {need}")
            _sleep_until(_RosterWatch(db, key, interrupted.is_set, poll=0.5), 5.0)
            continue
        path = cfg.root / LADDER_CONFIG
        league = write_config(path, league_data(cfg, db.roster(), name=f"{cfg.name}-ladder", rounds=1,
                                                store=LADDER_STORE, adaptive=True))
        try:
            summary = run_league(league, progress=progress, options=RunOptions(dask=dask, forever=True),
                                 hooks=RunHooks(on_game=on_game, should_stop=should_stop, notify=echo,
                                                roster=_AdaptiveRoster(cfg, db, key, between_rounds)))
        except LeagueInterrupted as exc:
            played += exc.summary.played
            echo("interrupted: the games in flight were recorded")
            interrupted.set()
            break
        played += summary.played
        if summary.errors:
            echo(f"the runner reported {len(summary.errors)} error(s): {summary.errors[-1].strip().splitlines()[-1]}")
            _sleep_until(should_stop, 5.0)
    return played


class _Settled:
    """True while the leaderboard's fit (:mod:`.board_fit`) covers exactly the roster and puts every
    team above the next with probability ``ladder.settle_confidence`` (looked up every 2 s)."""

    def __init__(self, cfg: ContestConfig, db: ContestDB) -> None:
        self.cfg, self.db = cfg, db
        self._at, self._value = -1e9, False

    def __call__(self) -> bool:
        if self.cfg.settle_confidence is None:
            return False
        if time.monotonic() - self._at > 2.0:
            self._at = time.monotonic()
            self._value = order_settled(self.db, self.cfg.settle_confidence)
        return self._value


def order_settled(db: ContestDB, confidence: float) -> bool:
    """Whether the last fit covers exactly the ladder's roster with every P(>next) >= ``confidence``
    (a new version is not in the fit: the order is open again)."""
    fit = db.fit_order()
    roster = {r.submission_id for r in db.roster()}
    if len(roster) < 2 or {r[0] for r in fit} != roster:
        return False
    return all(p is not None and p >= confidence for _, p in fit[:-1])


class _AdaptiveRoster:
    """``roster()`` for the adaptive schedule: the ladder's bots when a team's current version
    changed since the last call (``ladder.yaml`` rewritten), else None."""

    def __init__(self, cfg: ContestConfig, db: ContestDB, key: tuple[tuple[str, int], ...],
                 between_rounds: Callable[[], object] | None = None) -> None:
        self.cfg, self.db, self.key, self.between_rounds = cfg, db, key, between_rounds

    def __call__(self) -> Any:
        if self.between_rounds is not None:
            self.between_rounds()
        key = roster_key(self.db)
        if key == self.key or len(key) < max(2, max(self.cfg.players)):
            return None
        self.key = key
        path = self.cfg.root / LADDER_CONFIG
        data = league_data(self.cfg, self.db.roster(), name=f"{self.cfg.name}-ladder", rounds=1, store=LADDER_STORE,
                           adaptive=True)
        return write_config(path, data).bots


class _RosterWatch:
    """True once the caller wants to stop or the roster differs from ``key`` (looked up every ``poll`` s)."""

    def __init__(self, db: ContestDB, key: tuple[tuple[str, int], ...], should_stop: Callable[[], bool],
                 poll: float) -> None:
        self.db, self.key, self.should_stop, self.poll = db, key, should_stop, poll
        self.changed = False
        self._last = time.monotonic()

    def __call__(self) -> bool:
        if self.should_stop() or self.changed:
            return True
        if time.monotonic() - self._last > self.poll:
            self._last = time.monotonic()
            self.changed = roster_key(self.db) != self.key
        return self.changed


def _sleep_until(done: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done():
        time.sleep(0.2)
