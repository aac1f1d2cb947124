"""The league's table and the index's statistics kept up to date as games are recorded, for
``harness serve`` (:mod:`harness.report.live`), where recomputing them from every game at each
new state took 16-29 s at 1,000 bots and 1,000,000 games.

:class:`Standing` reads the store once whole (as ``harness table`` does), then at each
:meth:`Standing.refresh` only what changed since:

- **the games finished since**: those with a seq above the last one read (a range of the status
  index), and those among the games that were not finished below it (games finish out of
  schedule order; a few in flight, usually). Done games never change, so these are all the new
  games. Many open games below the last seq (a ladder's dropped rounds) are checked by one count
  instead; a count that disagrees, or a store file replaced, reads the store whole again;
- **the per-bot counts** (games, wins, rank sum, forfeits: :meth:`LeagueStore.seat_stats`) add the
  new games' seats; violations are counted by id;
- **the fit** is :class:`harness.league.ratings_live.LiveFit`, warm-started from the last;
- **the intervals**: past ``MAX_BOOTSTRAP_SETS`` duplicate sets the delta method's sums
  (:class:`harness.report.live_sums.LiveSums`); below, from every game kept in memory (the
  bootstrap, as :mod:`harness.report.statistics` computes it: a small league).

The rows are made by the same code as ``harness table`` (:func:`harness.report.tables.table_rows`
and :func:`~harness.report.tables.finish_rows`); tests/test_live_standing.py compares them with a
table from scratch after incremental updates. Anything the incremental path cannot take (a new
table size, numbers too large to pack) reads the store whole again.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.league import queries
from harness.league.config import LeagueConfig, RatingParams
from harness.league.queries import GameArrays
from harness.league.ratings_fit import TableFit
from harness.league.ratings_live import LiveFit
from harness.league.store import LeagueStore
from harness.report import statistics
from harness.report.history import History, rating_history
from harness.report.live_sums import LiveSums
from harness.report.tables import TableRow, finish_rows, table_rows

__all__ = ["Standing", "MANY_OPEN"]

#: open games below the last seq read checked one by one up to this many; past it, by one count
MANY_OPEN = 2000
#: the rating history's chart is fitted again, after a page is made (never delaying it), when the
#: games grew by this share since its last fit, or this many seconds passed: its newest point, the
#: plain fit of every game, took 1-3 s at 1,000,000 games under load; 0.1% more games move no line
#: by a pixel
HISTORY_GROWTH, HISTORY_SECONDS = 0.001, 10.0
#: ... and before the page when the games grew by this share (a small league's every game)
HISTORY_NOW = 0.01
_FIELDS = ("versions", "ranks", "scores", "seqs", "rounds", "seeds")


@dataclass
class _State:
    """What the store held at the last refresh, and the sums kept over it."""

    identity: tuple[int, int]
    last_seq: int
    open_below: list[int]  # games not finished with a seq below last_seq
    done: int
    violation_id: int
    seat_stats: dict[int, dict[str, float]]
    parts: dict[int, list[GameArrays]]  # per table size, in the order read
    fit: LiveFit
    sums: LiveSums
    fitted: TableFit | None = None
    per_bot: dict[int, dict[str, Any]] = field(default_factory=dict)


def _identity(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_dev, st.st_ino)


def _concat(parts: list[GameArrays]) -> GameArrays:
    """One table size's parts as one, in schedule order (the statistics number sets by it)."""
    if len(parts) == 1:
        return parts[0]
    joined = {f: np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS}
    order = np.argsort(joined["seqs"], kind="stable")
    return GameArrays(*(joined[f][order] for f in _FIELDS))


class Standing:
    """One league's table and index statistics, kept current by :meth:`refresh` (thread-safe:
    one refresh at a time; what it computed is read under the same lock)."""

    def __init__(self, rating: RatingParams) -> None:
        self.rating = rating
        self.lock = threading.Lock()
        self.state: _State | None = None
        self.rebuilds = 0  # whole reads of the store (the first, then any the increments could not take)
        self._history: tuple[RatingParams, int, float, History] | None = None  # (params, games, when, chart)
        self.history_fits = 0  # how many times the chart was fitted (a page shows the last)
        self.refits = 0  # fits made again after a page (:meth:`after_page`): a page shows the last

    # -- reading --------------------------------------------------------------------------
    def _read_whole(self, store: LeagueStore, path: str) -> _State:
        self.rebuilds += 1
        with queries.read_snapshot(store):
            arrays = queries.done_game_arrays(store)
            seat_stats = store.seat_stats()
            _, violation_id = queries.violations_after(store, 0)
            last = max((int(t.seqs[-1]) for t in arrays if len(t.seqs)), default=0)
            open_below = queries.open_seqs_between(store, 0, last)
        r = self.rating
        fit = LiveFit([t.versions.shape[1] for t in arrays], mu=r.mu, sigma=r.sigma, beta=r.beta)
        sums = LiveSums()
        fit.add(arrays)
        sums.add(arrays)
        return _State(_identity(path), last, open_below, sum(len(t.seqs) for t in arrays), violation_id, seat_stats,
                      {t.versions.shape[1]: [t] for t in arrays}, fit, sums)

    def _new_games(self, store: LeagueStore, state: _State) -> tuple[list[int], list[int]] | None:
        """The games finished since ``state`` and the games still open below the new last seq;
        None when the increments cannot say (read the store whole)."""
        after = queries.done_seqs_after(store, state.last_seq)
        if len(state.open_below) <= MANY_OPEN:
            filled = queries.done_among(store, state.open_below)
        else:
            below = state.done + 0  # every game finished at or below the last seq was read
            now = queries.done_count_upto(store, state.last_seq)
            if now != below:
                return None
            filled = []
        last = max(after[-1] if after else 0, state.last_seq)
        still = sorted(set(state.open_below) - set(filled))
        if after:
            still += queries.open_seqs_between(store, state.last_seq, last)
        return after + filled, still

    def refresh(self, store: LeagueStore, path: str) -> bool:
        """Bring the table up to the store now; whether anything changed."""
        with self.lock:
            state = self.state
            if state is None or state.identity != _identity(path):
                self.state = self._read_whole(store, path)
                self._compute(self.state)
                return True
            with queries.read_snapshot(store):
                found = self._new_games(store, state)
                if found is None:
                    new: list[int] = []
                else:
                    new, still = found
                    tables = queries.game_arrays_of(store, new)
                    totals, _ = queries.seat_totals(store, new)
                violations, violation_id = queries.violations_after(store, state.violation_id)
            if found is None:
                self.state = self._read_whole(store, path)
                self._compute(self.state)
                return True
            if not new and violation_id == state.violation_id:
                return False
            try:
                self._add(state, new, still, tables, totals, violations, violation_id)
            except ValueError:  # a new table size, numbers too large to pack: from every game
                state = self.state = self._read_whole(store, path)
            self._compute(state)
            return True

    def _add(self, state: _State, new: list[int], still: list[int], tables: list[GameArrays],
             totals: dict[int, list[int]], violations: dict[int, int], violation_id: int) -> None:
        state.fit.add(tables)
        state.sums.add(tables)
        for t in tables:
            state.parts.setdefault(t.versions.shape[1], []).append(t)
        for vid, (games, wins, rank_sum, forfeits, _) in totals.items():
            s = state.seat_stats.setdefault(vid, {"games": 0, "wins": 0, "rank_sum": 0, "forfeits": 0})
            s["games"] += games
            s["wins"] += wins
            s["rank_sum"] += rank_sum
            s["forfeits"] += forfeits
        for vid, n in violations.items():
            s = state.seat_stats.setdefault(vid, {"games": 0, "wins": 0, "rank_sum": 0, "forfeits": 0})
            s["violations"] = s.get("violations", 0) + n
        state.violation_id = violation_id
        state.done += sum(len(t.seqs) for t in tables)
        state.last_seq = max([state.last_seq, *new])
        state.open_below = still

    def _compute(self, state: _State) -> None:
        if state.fit.games:
            state.fitted = state.fit.fit(defer_test=True)
        if state.sums.sets > statistics.MAX_BOOTSTRAP_SETS:
            state.per_bot = state.sums.bot_intervals()
        else:
            state.per_bot = statistics.bot_intervals(self.arrays(state))

    def after_page(self) -> bool:
        """What a refresh leaves until its page is shown: the fit's test of the noises' spread,
        due once the pairs of seats grew 1% (0.4 s at 1,000,000 games). When it finds a spread to
        fit each bot's own noise, the fit is made again, every step (a new page is due: counted
        in :attr:`refits`); whether it was."""
        with self.lock:
            state = self.state
            if state is None or state.fit.test_noises() is not False:
                return False
            self._compute(state)
            self.refits += 1
            return True

    # -- what the pages show ---------------------------------------------------------------
    @staticmethod
    def arrays(state: _State) -> list[GameArrays]:
        """Every game read, per table size, in schedule order."""
        return [_concat(state.parts[n]) for n in sorted(state.parts)]

    @property
    def done(self) -> int:
        """The finished games the table counts."""
        return self.state.done if self.state is not None else 0

    def rows(self, store: LeagueStore, config: LeagueConfig) -> list[TableRow]:
        """The table as ``harness table`` makes it (the fit's order and intervals)."""
        with self.lock:
            state = self.state
            assert state is not None, "refresh first"
            # the incremental ratings only matter for a row the fit has not: no games, so the
            # config's prior (harness table's rows would read the same)
            rows, ids = table_rows(store, config, state.seat_stats, {})
            if not rows or state.fitted is None:
                rows.sort(key=lambda r: (-r.rating, -r.mu, r.bot, r.version))
                return finish_rows(rows, ids, None, {})
            return finish_rows(rows, ids, state.fitted, state.per_bot)

    def history(self, store: LeagueStore, rating: RatingParams) -> History:
        """:func:`harness.report.history.rating_history` as last fitted (fitted now the first time,
        for other rating parameters, or when the games grew by :data:`HISTORY_NOW`);
        :meth:`refit_history` brings it up to date after the page."""
        kept = self._history
        if kept is None or kept[0] != rating or self.done >= kept[1] * (1 + HISTORY_NOW) + 1:
            kept = self._history = (rating, self.done, time.monotonic(), rating_history(store, rating))
            self.history_fits += 1
        return kept[3]

    def refit_history(self, store: LeagueStore, rating: RatingParams) -> bool:
        """Fit the chart again when the games grew by :data:`HISTORY_GROWTH` or
        :data:`HISTORY_SECONDS` passed since its last fit with games since; whether it did."""
        kept, done = self._history, self.done
        if kept is not None and kept[0] == rating and done < kept[1] * (1 + HISTORY_GROWTH) + 1 and \
                (done == kept[1] or time.monotonic() - kept[2] < HISTORY_SECONDS):
            return False
        self._history = (rating, done, time.monotonic(), rating_history(store, rating))
        self.history_fits += 1
        return True

    def head_to_head(self, among: list[int]) -> list[dict[str, Any]]:
        """:func:`statistics.head_to_head` of the pairs within ``among`` (200 resamples)."""
        with self.lock:
            state = self.state
            assert state is not None, "refresh first"
            if state.sums.sets > statistics.MAX_BOOTSTRAP_SETS:
                return state.sums.head_to_head(among)
            return statistics.head_to_head(self.arrays(state), resamples=200, among=among)

    def seat_bias(self) -> dict[int, list[dict[str, Any]]]:
        """:func:`statistics.seat_bias` (200 resamples)."""
        with self.lock:
            state = self.state
            assert state is not None, "refresh first"
            large = [n for n in state.parts if state.sums.sets_of(n) > statistics.MAX_BOOTSTRAP_SETS]
            small = [_concat(state.parts[n]) for n in sorted(state.parts) if n not in large]
            out = statistics.seat_bias(small, resamples=200) if small else {}
            out.update(state.sums.seat_bias(large))
            return dict(sorted(out.items()))
