"""The table's fit kept up to date as games are recorded (``harness serve``'s live page).

:func:`harness.league.ratings_fit.fit_batches` aggregates every game from scratch: at 1,000 bots
and 1,000,000 games the aggregation alone (``pairs_of``) takes seconds, and Newton's method
starts every skill at mu. :class:`LiveFit` keeps the same aggregates as games come in, and fits
from the last fit:

- **the likelihood's entries** (per pair of bots and their seat positions: a's total result and
  the count, :class:`~harness.league.ratings_model.Pairs`) are sums: new games add to them. Each
  entry, pair of bots and bot keeps the index it got first (:class:`KeyIndex`), so nothing is
  renumbered when new ones appear;
- **the sandwich's meat** needs each duplicate set's score per bot at the fitted skills: each
  seat pair is kept as (its set, its entry, a's result), and the per-set scores are two
  ``np.bincount`` over them at the fit (linear in the results: a set recorded in two parts sums
  to the whole set's score);
- **the fit starts from the last one** (:class:`~harness.league.ratings_fit.Warm`): the skills,
  the seat effects, the prior's spread and the data's weight (measured at the last fit's
  maximum, where from scratch it is measured at a first maximum under the configured prior).

The fit is then :func:`~harness.league.ratings_fit.fit_pairs`, the same steps and stopping rules
as from scratch: the first :meth:`LiveFit.fit` equals ``fit_batches`` of the same games (to the
order of floating-point sums); a later one differs from a fit from scratch by where the EM of the
prior's spread stops (both stop at a change under 1%) and by the data's weight measured at
this maximum: tests/test_live_standing.py bounds the difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from harness.league.queries import GameArrays
from harness.league.ratings_fit import TableFit, Warm, fit_pairs, table_fit
from harness.league.ratings_model import Hessian, Pairs, TableBatch, pair_terms
from harness.league.ratings_noise import SWAP_MAX_ENTRIES
from harness.league.ratings_swaps import swaps_of
from harness.league.ratings_triples import triples_of

__all__ = ["KeyIndex", "GameSink", "LiveFit", "add_at", "pack", "unpack"]

#: a fit keeps the last full fit's data weight and prior spread while the games grew by less than
#: this share since it (ratings_fit.Warm.quick); then every step is fitted again
QUICK_GROWTH = 0.05
#: bit widths of the packed keys (a key must fit in 63 bits): bot indices, rounds, table sizes
_BOT_BITS, _ROUND_BITS, _SIZE_BITS = 20, 31, 4


class KeyIndex:
    """Integer keys -> ids 0, 1, 2, ... in the order they were first seen (ties: by key), never
    renumbered: lookups and additions are vectorised (a sorted copy of the keys, searched)."""

    def __init__(self) -> None:
        self.keys = np.empty(0, dtype=np.int64)  # sorted
        self.ids = np.empty(0, dtype=np.int64)  # the id of each sorted key

    def __len__(self) -> int:
        return int(self.keys.size)

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The id of each of ``keys`` (keys not seen get new ids) and the new keys, in id order."""
        keys = np.asarray(keys, dtype=np.int64)
        if keys.size == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        distinct, inverse = np.unique(keys, return_inverse=True)
        at = np.searchsorted(self.keys, distinct)
        found = np.zeros(distinct.size, dtype=bool)
        inside = at < self.keys.size
        found[inside] = self.keys[at[inside]] == distinct[inside]
        out = np.empty(distinct.size, dtype=np.int64)
        out[found] = self.ids[at[found]]
        fresh = ~found
        out[fresh] = np.arange(len(self), len(self) + int(fresh.sum()))
        self.keys = np.insert(self.keys, at[fresh], distinct[fresh])
        self.ids = np.insert(self.ids, at[fresh], out[fresh])
        return out[inverse], distinct[fresh]


def add_at(target: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    """``target[at] += values`` with repeated indices summed: ``np.add.at`` for a few (it costs
    the indices), ``np.bincount`` for many (``np.add.at`` is tens of times slower per index)."""
    if at.size > target.size // 8:
        target += np.bincount(at, weights=values, minlength=target.size)
    else:
        np.add.at(target, at, values)


def pack(high: np.ndarray, low: np.ndarray | int, bits: int, what: str | None = None) -> np.ndarray:
    """One int64 key per row of two non-negative integer columns: ``low`` in the lowest ``bits``
    bits, ``high`` above (numbered apart again by :func:`unpack`; keys of a :class:`KeyIndex`).
    With ``what``, a ``ValueError`` naming it when either does not fit (the caller then reads every
    game afresh); without, the caller knows they fit (ids of a :class:`KeyIndex`)."""
    high = np.asarray(high, dtype=np.int64)
    low = np.asarray(low, dtype=np.int64)
    if what is not None and high.size and (int(low.max()) >> bits or int(high.max()) >> (63 - bits)
                                           or min(int(low.min()), int(high.min())) < 0):
        raise ValueError(f"{what} too large to pack")
    packed: np.ndarray = (high << bits) | low
    return packed


def unpack(keys: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The (high, low) columns :func:`pack` put in ``keys``."""
    return keys >> bits, keys & ((1 << bits) - 1)


class _Column:
    """An array that grows at its end, its storage doubled when full (appending to a 3,000,000-row
    array by concatenation copied it whole on every refresh)."""

    def __init__(self, dtype: type) -> None:
        self.data: np.ndarray = np.zeros(16, dtype=dtype)
        self.size = 0

    def append(self, values: np.ndarray) -> None:
        if self.size + len(values) > self.data.size:
            bigger = np.zeros(max(2 * self.data.size, self.size + len(values)), dtype=self.data.dtype)
            bigger[:self.size] = self.data[:self.size]
            self.data = bigger
        self.data[self.size:self.size + len(values)] = values
        self.size += len(values)

    @property
    def view(self) -> np.ndarray:
        return self.data[:self.size]


#: the kept columns: the version id of each bot index; per pair of bots its two bots; per entry its
#: bots, seat positions, pair, a's total result and count; per seat pair its entry, a's result
#: and the (set, bot) slots of a and b; per slot its set and bot
_COLUMNS = ("vid", "ppa", "ppb", "pa", "pb", "sa", "sb", "pair", "wins", "count", "cell_entry", "cell_win", "cell_a",
            "cell_b", "slot_cluster", "slot_bot")
_FLOAT = ("wins", "count", "cell_win")


class GameSink:
    """What takes finished games as they are read, one table size at a time (as
    :func:`harness.league.queries.done_game_arrays` gives them): the live fit, the report's kept sums."""

    def add(self, tables: Sequence[GameArrays]) -> None:
        """Add finished games (any table sizes given when made)."""
        for t in tables:
            if len(t.seqs):
                self._add(t)

    def _add(self, t: GameArrays) -> None:
        raise NotImplementedError


class LiveFit(GameSink):
    """The fit of :func:`~harness.league.ratings_fit.fit_batches` over games added in any number
    of parts (:meth:`add`), each :meth:`fit` started from the last. Table sizes are fixed when it
    is made (``sizes``, every size in the league; :meth:`add` of another size raises
    ``ValueError``: the caller starts again from every game)."""

    def __init__(self, sizes: Sequence[int], *, mu: float, sigma: float, beta: float) -> None:
        self.mu, self.sigma, self.beta = mu, sigma, beta
        self.base: dict[int, int] = {}
        total = 0
        for n in sorted(sizes):
            self.base[n], total = total, total + n
        self.seats = max(total, 1)
        self.games = 0
        self.versions, self.pairs, self.entries = KeyIndex(), KeyIndex(), KeyIndex()
        self.deals, self.clusters, self.slots = KeyIndex(), KeyIndex(), KeyIndex()
        self.columns = {name: _Column(np.float64 if name in _FLOAT else np.int64) for name in _COLUMNS}
        self.model_warm: Warm | None = None
        # each table size's games as bot indices, ranks and sets, kept while the fit reads its
        # swapped games: the orders of three are read from them (ratings_triples) and the
        # consistency check replays them (ratings_dispersion); past that, never again
        self.tables: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.keep_tables = True
        self.full_games = 0  # the games of the last fit that measured the data's weight
        #: the last fit's test of the noises' spread, left for later (:meth:`test_noises`), with the games then
        self.noise_test: tuple[Callable[[], bool], float, int] | None = None
        self.hessian: Hessian | None = None  # the last fit's pattern of the Hessian (reused while the pairs stay)

    def _add(self, t: GameArrays) -> None:
        g, n = t.versions.shape
        if n not in self.base:
            raise ValueError(f"a table of {n} seats, not among the sizes the fit was made for")
        bot, new_vids = self.versions.lookup(t.versions.ravel())
        col = self.columns
        col["vid"].append(new_vids)  # new keys come in the order of their ids
        bot = bot.reshape(g, n)
        deal, _ = self.deals.lookup(t.seeds)
        cluster, _ = self.clusters.lookup(pack(pack(deal, t.rounds, _ROUND_BITS, "a round number"), n, _SIZE_BITS))
        # every (set, bot) of every seat: each bot's sets (a bot seated only against itself too)
        seat_slot, new_slots = self.slots.lookup(pack(np.repeat(cluster, n), bot.ravel(), _BOT_BITS))
        slot_cluster, slot_bot = unpack(new_slots, _BOT_BITS)
        col["slot_cluster"].append(slot_cluster)
        col["slot_bot"].append(slot_bot)
        seat_slot = seat_slot.reshape(g, n)
        for i in range(n):  # loops over seats only
            for j in range(i + 1, n):
                self._add_seat_pair(bot, t.ranks, seat_slot, i, j, self.base[n])
        if self.keep_tables:
            self.tables.setdefault(n, []).append((bot, np.asarray(t.ranks), cluster))
        self.games += g

    def _add_seat_pair(self, bot: np.ndarray, ranks: np.ndarray, slot: np.ndarray, i: int, j: int, base: int) -> None:
        a, b, ri, rj = bot[:, i], bot[:, j], ranks[:, i], ranks[:, j]
        result = np.where(ri < rj, 1.0, np.where(ri == rj, 0.5, 0.0))
        keep = a != b  # a version against itself says nothing about its skill
        flip = (a > b)[keep]
        low, high = np.where(flip, b[keep], a[keep]), np.where(flip, a[keep], b[keep])
        seat_a = np.where(flip, base + j, base + i)
        seat_b = np.where(flip, base + i, base + j)
        won = np.where(flip, 1.0 - result[keep], result[keep])
        slot_a = np.where(flip, slot[keep, j], slot[keep, i])
        slot_b = np.where(flip, slot[keep, i], slot[keep, j])
        col = self.columns
        pair, new_pairs = self.pairs.lookup(pack(low, high, _BOT_BITS))
        pair_low, pair_high = unpack(new_pairs, _BOT_BITS)
        col["ppa"].append(pair_low)
        col["ppb"].append(pair_high)
        s = self.seats
        entry, new_entries = self.entries.lookup((pair * s + seat_a) * s + seat_b)
        if new_entries.size:
            new_pair = new_entries // (s * s)
            col["pair"].append(new_pair)
            col["pa"].append(col["ppa"].view[new_pair])
            col["pb"].append(col["ppb"].view[new_pair])
            col["sa"].append((new_entries // s) % s)
            col["sb"].append(new_entries % s)
            col["wins"].append(np.zeros(new_entries.size))
            col["count"].append(np.zeros(new_entries.size))
        add_at(col["wins"].view, entry, won)
        add_at(col["count"].view, entry, np.ones(entry.size))
        col["cell_entry"].append(entry)
        col["cell_win"].append(won)
        col["cell_a"].append(slot_a)
        col["cell_b"].append(slot_b)

    def _pairs(self) -> Pairs:
        e, f = np.empty(0, dtype=np.int64), np.empty(0)
        c = {name: column.view for name, column in self.columns.items()}
        return Pairs(e, f, f, c["pa"], c["pb"], c["sa"], c["sb"], c["wins"], c["count"], c["pair"], c["ppa"], c["ppb"],
                     self.seats)

    def fit(self, defer_test: bool = False) -> TableFit:
        """The fit of every game added, started from the last fit (the first from scratch).
        ``defer_test``: a quick fit due to test the noises' spread again (0.4 s at 1,000,000
        games) leaves it to :meth:`test_noises` (a page shown first, then tested)."""
        k = len(self.versions)
        if not self.games or k == 0:
            return TableFit({}, {}, [], [], 0, 0, np.zeros((0, 0)), {})
        pairs = self._pairs()
        n_sets, n_slots = len(self.clusters), len(self.slots)

        c = {name: column.view for name, column in self.columns.items()}

        def meat_at(skills: np.ndarray, seat: np.ndarray, scales: float | np.ndarray
                    ) -> tuple[np.ndarray, int, np.ndarray]:
            _, up, down, _ = pair_terms(pairs, skills, seat, scales, 1)
            per = scales[c["cell_entry"]] if isinstance(scales, np.ndarray) else scales  # one per entry when fitted
            entry = c["cell_entry"]  # (np.take and in place: 3,000,000 cells at 1,000,000 games)
            score = np.take(up + down, entry)
            score *= c["cell_win"]
            score -= np.take(down, entry)
            score /= per
            per_slot = (np.bincount(c["cell_a"], weights=score, minlength=n_slots)
                        - np.bincount(c["cell_b"], weights=score, minlength=n_slots))
            matrix = sp.csr_matrix((per_slot, (c["slot_cluster"], c["slot_bot"])), shape=(n_sets, k))
            return (matrix.T @ matrix).toarray(), n_sets, np.bincount(c["slot_bot"], minlength=k)

        warm = self.model_warm
        if warm is not None:
            more = np.full(k - warm.skills.size, self.mu)  # bots new since start at mu
            quick = self.games < (1 + QUICK_GROWTH) * self.full_games
            warm = dataclasses.replace(warm, first_skills=np.concatenate([warm.first_skills, more]),
                                       skills=np.concatenate([warm.skills, more]), quick=quick)
        # one BLAS thread: on two shared cores OpenBLAS's threads made the Cholesky factorisations
        # several times slower (as for the adaptive schedule's fits)
        # the swapped games (ratings_swaps), from the same kept seat pairs, where the fit reads them
        past = pairs.pa.size > 2 * SWAP_MAX_ENTRIES
        swaps = None if past else swaps_of(pairs, c["cell_entry"], c["slot_cluster"][c["cell_a"]], c["cell_win"])
        if past:
            self.tables, self.keep_tables = {}, False
        batches = None if not self.tables else [  # (none are kept past the limit)
            TableBatch(*(np.concatenate([part[i] for part in parts]) for i in range(3)))
            for _, parts in sorted(self.tables.items())]
        triples = None if batches is None else triples_of([b for b in batches if b.versions.shape[1] >= 3], k,
                                                          self.base)
        self.hessian = Hessian(pairs, k) if self.hessian is None else self.hessian.on(pairs, k)
        with threadpool_limits(limits=1, user_api="blas"):
            model = fit_pairs(pairs, k, meat_at, self.base, mu=self.mu, sigma=self.sigma, beta=self.beta, warm=warm,
                              swaps=swaps, triples=triples, batches=batches, defer_test=defer_test,
                              hessian=self.hessian, parallel=True)
        assert model.warm is not None
        self.noise_test = None if model.noise_test is None else (*model.noise_test, self.games)
        if warm is None or not warm.quick or model.warm.first_skills is not warm.first_skills:
            self.full_games = self.games  # every step was fitted (a quick fit keeps the first maximum as it was)
        self.model_warm = model.warm
        return table_fit(model, self.columns["vid"].view, self.games)

    def test_noises(self) -> bool | None:
        """Run the test the last fit left (:meth:`fit`'s ``defer_test``): True when the noises'
        spread is still too small to fit each bot's own (the next quick fit tests again at 1% more
        pairs of seats), False when it is not (the next fit fits every step: call :meth:`fit`
        again), None when there was none to run or games were added since (the next fit tests)."""
        pending, self.noise_test = self.noise_test, None
        if pending is None or pending[2] != self.games or self.model_warm is None:
            return None
        test, seen, _ = pending
        with threadpool_limits(limits=1, user_api="blas"):
            still = test()
        if still:
            self.model_warm = dataclasses.replace(self.model_warm, tested=seen)
        else:
            self.full_games = 0  # not quick: every step, the noises too
        return still
