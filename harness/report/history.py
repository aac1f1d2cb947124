"""The rating history: every bot's mu as the league's games came in, kept cheap at any size.

A point of the chart is the table's order-free fit (TrueSkill's model, pairwise composite
likelihood: :mod:`harness.league.ratings_fit`) of the **first n finished games in schedule
order** (seq order). Three choices keep it cheap at 1,000 bots and 1,000,000 games, where
fitting 30 prefixes from scratch costs about a minute (docs/performance.md):

- **Marks at fixed game counts.** The points are at multiples of a step that is a power of two,
  the smallest giving at most ``points`` of them, plus the current count. A doubled step's marks
  are all marks of the smaller step, so as the league grows every point fitted once stays a point
  of the chart: nothing is refitted.
- **The fit needs only each pair of bots' totals** (games together, results against each other)
  over the prefix: the games are read as arrays after the last cached point, their seat pairs
  added to the totals mark by mark (``np.bincount``), and each mark's Newton iterations start
  from the previous mark's mu (a few steps instead of six to eight).
- **A cache in the store** (table ``rating_history``): the fitted points, and the pairs' totals
  at the latest *settled* prefix (every game of a lower seq is finished: no game can still join
  it), so the next report or page load reads only the games recorded since.

**When a cached prefix is valid.** Games finish out of schedule order (several workers, Dask), and
a dropped game can be planned again and finish later with a lower seq. A cached point of n
games records the seq L of its last game; it is the first n finished games today exactly when
the finished games with a seq of at most L are still n: games only ever go from pending (or
dropped) to done, so the set of finished games up to L can only grow, and a count unchanged
means the set unchanged. A later game of lower seq raises that count, and the point, with every
point after it (validity is monotone in n), is fitted again. Only settled prefixes are stored,
so in a league playing in order that does not happen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from harness.league import queries
from harness.league.store import LeagueStore
from harness.league.store_rows import HistoryEntry

if TYPE_CHECKING:
    from harness.league.config import RatingParams

__all__ = ["POINTS", "History", "marks", "rating_history"]

POINTS = 30
#: Newton's last step moves no mu by more (the error is then ~1e-5: the chart shows mu to 0.1;
#: the last step of 1e-4 the table's fit takes is a quarter of a warm-started history's steps)
TOLERANCE = 1e-2
History = dict[int, list[tuple[int, float]]]


def marks(total: int, points: int = POINTS) -> list[int]:
    """The game counts of the chart's points for ``total`` finished games, the current count
    last: multiples of the smallest power of two giving at most ``points`` of them."""
    if total <= 0:
        return []
    step = 1
    while total // step > points:
        step *= 2
    out = list(range(step, total + 1, step))
    return out if out and out[-1] == total else [*out, total]


@dataclass
class _Totals:
    """Each pair of bots' totals over a prefix (``keys``: a << 32 | b for version ids a < b;
    ``wins``: a's result against b, 1 ahead and 1/2 level; ``count``: seat pairs) and each bot's
    games (``bots`` sorted, ``games``)."""

    keys: np.ndarray
    wins: np.ndarray
    count: np.ndarray
    bots: np.ndarray
    games: np.ndarray

    @staticmethod
    def empty() -> _Totals:
        i, f = np.empty(0, dtype=np.int64), np.empty(0)
        return _Totals(i, f, f, i, i)

    def pack(self) -> bytes:
        """The pairs and bots counts, then the five arrays' bytes (little-endian, 8 bytes a
        value): read back without a copy (npz's zip and checksums cost 0.1 s at 500,000 pairs)."""
        head = np.array([self.keys.size, self.bots.size], dtype="<i8")
        return b"".join(a.astype(t).tobytes() for a, t in ((head, "<i8"), (self.keys, "<i8"), (self.wins, "<f8"),
                                                            (self.count, "<f8"), (self.bots, "<i8"),
                                                            (self.games, "<i8")))

    @staticmethod
    def unpack(data: bytes) -> _Totals:
        pairs, bots = np.frombuffer(data, dtype="<i8", count=2).tolist()
        ends = np.cumsum([16, 8 * pairs, 8 * pairs, 8 * pairs, 8 * bots, 8 * bots]).tolist()
        keys, wins, count, ids, games = (np.frombuffer(data, dtype=t, count=(b - a) // 8, offset=a) for a, b, t in
                                         zip(ends, ends[1:], ("<i8", "<f8", "<f8", "<i8", "<i8")))
        return _Totals(keys, wins, count, ids, games)


def _pack_mu(bots: np.ndarray, mu: np.ndarray) -> bytes:
    """A point: the version ids, then their mu (little-endian, 8 bytes a value)."""
    return bots.astype("<i8").tobytes() + mu.astype("<f8").tobytes()


def _unpack_mu(data: bytes) -> dict[int, float]:
    half = len(data) // 16
    return dict(zip(np.frombuffer(data, dtype="<i8", count=half).tolist(),
                    np.frombuffer(data, dtype="<f8", count=half, offset=8 * half).tolist()))


@dataclass
class _Tail:
    """The finished games after the cached totals, in schedule order: each game's seq; each
    seat pair of two different bots (key, a's result) and each seat (version), with the seq of
    its game, sorted by it."""

    seqs: np.ndarray
    pair_seq: np.ndarray
    pair_key: np.ndarray
    pair_win: np.ndarray
    seat_seq: np.ndarray
    seat_bot: np.ndarray


def _tail(tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> _Tail:
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    seats: list[tuple[np.ndarray, np.ndarray]] = []
    for seqs, versions, ranks in tables:
        n = versions.shape[1]
        seats.append((np.repeat(seqs, n), versions.ravel()))
        for i in range(n):  # loops over seats only
            for j in range(i + 1, n):
                a, b = versions[:, i], versions[:, j]
                won = np.where(ranks[:, i] < ranks[:, j], 1.0, np.where(ranks[:, i] == ranks[:, j], 0.5, 0.0))
                flip, other = a > b, a != b  # a version against itself says nothing about its skill
                key = (np.minimum(a, b) << 32) | np.maximum(a, b)
                parts.append((seqs[other], key[other], np.where(flip, 1.0 - won, won)[other]))
    if not parts:
        none, nothing = np.empty(0, dtype=np.int64), np.empty(0)
        return _Tail(none, none, none, nothing, none, none)
    pair_seq, pair_key, pair_win = (np.concatenate([p[c] for p in parts]) for c in range(3))
    seat_seq, seat_bot = (np.concatenate([s[c] for s in seats]) for c in range(2))
    by_seq = np.argsort(pair_seq, kind="stable")  # one table size: already in order, a cheap pass
    by_seat = np.argsort(seat_seq, kind="stable")
    return _Tail(np.sort(np.concatenate([t[0] for t in tables])), pair_seq[by_seq], pair_key[by_seq],
                 pair_win[by_seq], seat_seq[by_seat], seat_bot[by_seat])


def _params(rating: RatingParams) -> str:
    return json.dumps({"mu": rating.mu, "sigma": rating.sigma, "beta": rating.beta}, sort_keys=True)


def _valid_prefix(store: LeagueStore, entries: list[tuple[int, int]], total: int) -> int:
    """How many of the cached ``(games, last_seq)`` entries, fewest games first, are still the
    first finished games (``total`` finished now): the last one checked first (a short count of
    the games after it), then a binary search, validity being monotone (see the module docstring)."""
    def valid(i: int) -> bool:
        games, last_seq = entries[i]
        return total - queries.done_count_after(store, last_seq) == games

    if not entries or valid(len(entries) - 1):
        return len(entries)
    low, high = 0, len(entries) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if valid(mid - 1):
            low = mid
        else:
            high = mid - 1
    return low


@dataclass
class _Plan:
    """What a call fits: the points known from the cache, the totals it resumes from (at
    ``first`` games), the games after them, the chart's points and the settled prefix."""

    known: dict[int, dict[int, float]]
    totals: _Totals
    first: int
    tail: _Tail
    wanted: list[int]
    settled: int


def _plan(store: LeagueStore, rows: list[HistoryEntry],
          points: int) -> tuple[_Plan, list[HistoryEntry], HistoryEntry | None]:
    """Read, in one snapshot of the store, what is valid in the cache and the games after it:
    (the plan, the valid rows, the row the totals come from)."""
    with queries.read_snapshot(store):
        total = queries.done_count_after(store, 0)
        valid = rows[:_valid_prefix(store, [(r.games, r.last_seq) for r in rows], total)]
        pending = queries.first_pending_seq(store)
        wanted = marks(total, points)
        known = {r.games: _unpack_mu(r.mu) for r in valid if r.mu is not None}
        base = next((r for r in reversed(valid) if r.totals is not None), None)
        if base is not None and any(m <= base.games and m not in known for m in wanted):
            base = None  # a point below the cached totals is missing: read every game
        first = base.games if base is not None else 0
        tail = _tail(queries.done_results_after(store, base.last_seq if base is not None else 0))
    if first + tail.seqs.size != total:  # (one snapshot: only if the cache lied about its games)
        total = first + tail.seqs.size
        wanted = [m for m in marks(total, points) if m > first or m in known]
    settled = first + int(np.searchsorted(tail.seqs, pending, "left")) if pending is not None else total
    needs_totals = settled > first or any(m > first and m not in known for m in wanted)
    from_base = base.totals if base is not None and needs_totals else None  # (base has totals: chosen so)
    totals = _Totals.unpack(from_base) if from_base is not None else _Totals.empty()
    return _Plan(known, totals, first, tail, wanted, settled), valid, base


def rating_history(store: LeagueStore, rating: RatingParams, *, points: int = POINTS,
                   cache: bool = True) -> History:
    """Every bot's mu at each of the chart's points (:func:`marks`), in schedule order:
    version -> [(games of the league so far, mu)], a bot from the first point after its first
    game. Fitted prefixes are read from and written to the store's cache (``cache``; a store
    that cannot be written is only read)."""
    params = _params(rating)
    rows = store.history_cache(params) if cache else []
    plan, valid, base = _plan(store, rows, points)
    new_entries = _fit(plan, rating)
    if cache and (new_entries or len(valid) < len(rows)):
        keep = [r.games for r in valid if r.games in plan.wanted]  # the points still on the chart
        if base is not None and not any(e[3] is not None for e in new_entries):
            keep.append(base.games)  # (no newer settled prefix: resume from the same totals)
        store.save_history_cache(params, new_entries, keep)
    out: History = {}
    for n in plan.wanted:
        for vid, m in plan.known[n].items():
            out.setdefault(vid, []).append((n, m))
    return out


def _fit(plan: _Plan, rating: RatingParams) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Fit the points the cache lacks, in order, each from the last (``plan.known`` gains them);
    return the entries to cache: the settled points, and the totals at the settled prefix."""
    from harness.league.ratings_fit import fit_skills  # here: scipy costs ~0.3 s to import

    known, totals, first, tail = plan.known, plan.totals, plan.first, plan.tail
    fit_at = [m for m in plan.wanted if m > first and m not in known]
    cuts = sorted({*fit_at, *([plan.settled] if plan.settled > first else [])})
    if not cuts:
        return []
    # the pairs: the cached ones (sorted) first, then those new in the tail, so that matching the
    # tail's pairs to them costs a search in the cached keys, not a sort of them all
    tail_keys, tail_inverse = np.unique(tail.pair_key, return_inverse=True)
    at = np.minimum(np.searchsorted(totals.keys, tail_keys), max(totals.keys.size - 1, 0))
    old = (totals.keys[at] == tail_keys) if totals.keys.size else np.zeros(tail_keys.size, dtype=bool)
    keys = np.concatenate([totals.keys, tail_keys[~old]])
    slot = np.where(old, at, totals.keys.size + np.cumsum(~old) - 1)
    pair_at = slot[tail_inverse]
    bots = np.union1d(totals.bots, tail.seat_bot)
    pa, pb = np.searchsorted(bots, keys >> 32), np.searchsorted(bots, keys & 0xFFFFFFFF)
    wins, count, games = np.zeros(keys.size), np.zeros(keys.size), np.zeros(bots.size, dtype=np.int64)
    wins[:totals.keys.size], count[:totals.keys.size] = totals.wins, totals.count
    games[np.searchsorted(bots, totals.bots)] = totals.games
    seat_at = np.searchsorted(bots, tail.seat_bot)
    skills = np.full(bots.size, float(rating.mu))
    for m, mu in sorted(known.items()):  # start from the latest point cached below the first to fit
        if m <= first:
            skills[np.searchsorted(bots, list(mu))] = list(mu.values())
    done_pairs = done_seats = 0
    new_entries: list[tuple[int, int, bytes | None, bytes | None]] = []
    for n in cuts:
        last_seq = int(tail.seqs[n - first - 1])
        upto_pairs = int(np.searchsorted(tail.pair_seq, last_seq, "right"))
        upto_seats = int(np.searchsorted(tail.seat_seq, last_seq, "right"))
        wins += np.bincount(pair_at[done_pairs:upto_pairs], tail.pair_win[done_pairs:upto_pairs], keys.size)
        count += np.bincount(pair_at[done_pairs:upto_pairs], minlength=keys.size)
        games += np.bincount(seat_at[done_seats:upto_seats], minlength=bots.size)
        done_pairs, done_seats = upto_pairs, upto_seats
        mu_blob = totals_blob = None
        if n in fit_at:
            met = count > 0
            skills = fit_skills(pa[met], pb[met], wins[met], count[met], bots.size, mu=rating.mu, sigma=rating.sigma,
                                beta=rating.beta, start=skills, tolerance=TOLERANCE)
            played = games > 0
            known[n] = dict(zip(bots[played].tolist(), skills[played].tolist()))
            mu_blob = _pack_mu(bots[played], skills[played])
        if n == plan.settled:
            met, played = count > 0, games > 0
            by_key = np.argsort(keys[met])  # (the cached keys are kept sorted)
            totals_blob = _Totals(keys[met][by_key], wins[met][by_key], count[met][by_key], bots[played],
                                  games[played]).pack()
        if n <= plan.settled and (mu_blob is not None or totals_blob is not None):
            new_entries.append((n, last_seq, mu_blob, totals_blob))  # only settled prefixes are kept
    return new_entries
