"""The index's statistics kept up to date as games are recorded (``harness serve``'s live page).

:mod:`harness.report.statistics` computes each interval from every game; past
``MAX_BOOTSTRAP_SETS`` duplicate sets its intervals are the delta method's, which needs, per bot
(per pair of bots, per seat), only sums over the sets: of x, of n, and of x^2, x n and n^2 over
each set's totals x (a score, a rank, a win) and n (games), since

    sum_s (x_s - r n_s)^2 = Sxx - 2 r Sxn + r^2 Snn,   r = sum x / sum n.

:class:`LiveSums` keeps each set's totals per bot, per pair and per seat (a set recorded in two
parts: its totals before are taken out of the squares and its totals after put in), so new
games cost their own seats, never the league's. While a league has at most
``MAX_BOOTSTRAP_SETS`` sets (the bootstrap's side) the caller computes the statistics from
every game, as :mod:`harness.report.statistics` does (a small league: a fraction of a second).
A duplicate set is the statistics' own (one round, one deal, the same bot versions, one table
size), numbered in the order first seen: the delta method does not depend on the numbering.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from harness.league.queries import GameArrays
from harness.league.ratings_live import GameSink, KeyIndex, add_at, pack, unpack
from harness.report.statistics import Z95

__all__ = ["LiveSums"]

_BITS = 24  # a packed column: rounds, deals, versions below 2^24
_VERSION_BITS = 31  # a pair of version ids


class _Sums:
    """Per key (a bot, a pair, a seat): running totals of x and n, and over its cells (key, set)
    the sums of x^2, x n and n^2 of each cell's totals, for ``columns`` quantities x."""

    def __init__(self, columns: int) -> None:
        self.keys, self.cells = KeyIndex(), KeyIndex()
        self.columns = columns
        self.cell_key = np.empty(0, dtype=np.int64)
        self.cell = np.zeros((0, columns + 1))  # each cell's totals: x..., n
        self.total = np.zeros((0, columns + 1))  # per key: sum x..., sum n
        self.square = np.zeros((0, 2 * columns + 1))  # per key: sum xx..., sum xn..., sum nn

    def add(self, key: np.ndarray, set_id: np.ndarray, values: np.ndarray) -> None:
        """Add one row of ``values`` (x..., n) per (``key``, ``set_id``)."""
        if not len(key):
            return
        key_id, _ = self.keys.lookup(key)
        if len(self.keys) > len(self.total):
            grow = len(self.keys) - len(self.total)
            self.total = np.vstack([self.total, np.zeros((grow, self.columns + 1))])
            self.square = np.vstack([self.square, np.zeros((grow, 2 * self.columns + 1))])
        cell_id, _ = self.cells.lookup(pack(set_id, key_id, _BITS + 8))
        fresh = len(self.cells) - len(self.cell)
        if fresh:
            self.cell = np.vstack([self.cell, np.zeros((fresh, self.columns + 1))])
            self.cell_key = np.concatenate([self.cell_key, np.zeros(fresh, dtype=np.int64)])
        touched, at = np.unique(cell_id, return_inverse=True)
        added = np.stack([np.bincount(at, weights=values[:, c], minlength=touched.size)
                          for c in range(self.columns + 1)], axis=1)
        owner = np.zeros(touched.size, dtype=np.int64)
        owner[at] = key_id
        self.cell_key[touched] = owner
        before, after = self.cell[touched], self.cell[touched] + added
        self.cell[touched] = after
        change = self._squares(after) - self._squares(before)
        for c in range(self.columns + 1):
            add_at(self.total[:, c], owner, added[:, c])
        for c in range(2 * self.columns + 1):
            add_at(self.square[:, c], owner, change[:, c])

    def _squares(self, cell: np.ndarray) -> np.ndarray:
        n = cell[:, -1:]
        return np.concatenate([cell[:, :-1] ** 2, cell[:, :-1] * n, n ** 2], axis=1)

    def estimates(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per key: its key value, sum n, each ratio sum x / sum n, and each ratio's 95% half-width."""
        c = self.columns
        n = self.total[:, c]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = self.total[:, :c] / n[:, None]
            residual = self.square[:, :c] - 2 * ratio * self.square[:, c:2 * c] + ratio ** 2 * self.square[:, 2 * c:]
            half = Z95 * np.sqrt(np.maximum(residual, 0.0)) / n[:, None]
        order = np.argsort(self.keys.ids)
        return self.keys.keys[order], n, ratio, half


class LiveSums(GameSink):
    """The per-set sums of :func:`statistics.bot_intervals`, :func:`statistics.head_to_head` and
    :func:`statistics.seat_bias` (the delta method), kept as games are added."""

    def __init__(self) -> None:
        self.levels: list[KeyIndex] = []
        self.sets = 0
        self.sets_of_size: dict[int, KeyIndex] = {}
        self.bots = _Sums(2)  # score, rank (1 = first); n = games
        self.pairs = _Sums(2)  # a's score minus b's, a's result against b; n = games together
        self.seats: dict[int, _Sums] = {}  # per table size: first places; n = games

    def _set_ids(self, t: GameArrays, versions: np.ndarray) -> np.ndarray:
        """Each game's duplicate set, numbered over every table size in the order first seen."""
        columns: list[np.ndarray] = [np.full(len(t.seqs), versions.shape[1]), t.rounds, t.seeds, *versions.T]
        for i, column in enumerate(columns[1:], 1):
            if i == 2:  # a deal's seed: numbered first (seeds are 53-bit)
                if not self.levels:
                    self.levels.append(KeyIndex())
                column, _ = self.levels[0].lookup(column)
            columns[i] = column
        ids = columns[0].astype(np.int64)
        for depth, column in enumerate(columns[1:], 1):
            while len(self.levels) <= depth:
                self.levels.append(KeyIndex())
            ids, _ = self.levels[depth].lookup(pack(ids, column, _BITS, "a round, deal, version or set number"))
        return ids

    def _add(self, t: GameArrays) -> None:
        g, n = t.versions.shape
        order = np.argsort(t.versions, axis=1, kind="stable")
        versions, ranks, scores = (np.take_along_axis(x, order, axis=1) for x in (t.versions, t.ranks, t.scores))
        sets = self._set_ids(t, versions)
        known = self.sets_of_size.setdefault(n, KeyIndex())
        known.lookup(sets)
        self.sets = sum(len(k) for k in self.sets_of_size.values())
        ones = np.ones(g * n)
        self.bots.add(versions.ravel(), np.repeat(sets, n),
                      np.stack([scores.ravel().astype(np.float64), ranks.ravel() + 1.0, ones], axis=1))
        for i in range(n):
            for j in range(i + 1, n):
                a, b = versions[:, i], versions[:, j]
                keep = a != b
                won = np.where(ranks[:, i] < ranks[:, j], 1.0, np.where(ranks[:, i] == ranks[:, j], 0.5, 0.0))
                diff = (scores[:, i] - scores[:, j]).astype(np.float64)
                self.pairs.add(pack(a[keep], b[keep], _VERSION_BITS, "a version id"), sets[keep],
                               np.stack([diff[keep], won[keep], np.ones(int(keep.sum()))], axis=1))
        seat = self.seats.setdefault(n, _Sums(1))
        seat.add(np.tile(np.arange(n), g), np.repeat(sets, n),
                 np.stack([(t.ranks == 0).ravel().astype(np.float64), ones], axis=1))

    def bot_intervals(self) -> dict[int, dict[str, Any]]:
        """:func:`statistics.bot_intervals` by the delta method."""
        keys, n, ratio, half = self.bots.estimates()
        return {v: {"games": int(g), "mean_score": s, "mean_score_ci": [s - hs, s + hs], "mean_rank": r,
                    "mean_rank_ci": [r - hr, r + hr]}
                for v, g, s, r, hs, hr in zip(keys.tolist(), n.tolist(), ratio[:, 0].tolist(), ratio[:, 1].tolist(),
                                              half[:, 0].tolist(), half[:, 1].tolist())}

    def head_to_head(self, among: Collection[int]) -> list[dict[str, Any]]:
        """:func:`statistics.head_to_head` by the delta method, of the pairs within ``among``."""
        keys, n, ratio, half = self.pairs.estimates()
        wanted = np.fromiter(among, dtype=np.int64)
        a, b = unpack(keys, _VERSION_BITS)
        mine = np.flatnonzero(np.isin(a, wanted) & np.isin(b, wanted))
        mine = mine[np.argsort(keys[mine])]
        return [{"a": int(a[i]), "b": int(b[i]), "games": int(n[i]), "a_won_share": float(ratio[i, 1]),
                 "score_diff": float(ratio[i, 0]),
                 "score_diff_ci": [float(ratio[i, 0] - half[i, 0]), float(ratio[i, 0] + half[i, 0])]}
                for i in mine.tolist()]

    def seat_bias(self, sizes: Collection[int]) -> dict[int, list[dict[str, Any]]]:
        """:func:`statistics.seat_bias` by the delta method, for the table ``sizes``."""
        out: dict[int, list[dict[str, Any]]] = {}
        for size in sorted(sizes):
            keys, n, ratio, half = self.seats[size].estimates()
            order = np.argsort(keys)
            out[size] = [{"seat": int(keys[i]), "games": int(n[i]), "win_rate": float(ratio[i, 0]),
                          "win_rate_ci": [float(ratio[i, 0] - half[i, 0]), float(ratio[i, 0] + half[i, 0])]}
                         for i in order.tolist()]
        return out

    def sets_of(self, size: int) -> int:
        """The duplicate sets of the table ``size``."""
        return len(self.sets_of_size.get(size, ()))
