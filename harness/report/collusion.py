"""The collusion report: pairs of bots whose results at shared tables depart from the table's fit.

Two bots of one author (or two authors who agree) may play for each other: one *feeding* the
other (losing to it, or playing so that it finishes ahead of the third), or *both gaining*
against the others at their table (passing what they hold through their play or their timing).
The report looks at every duplicate set (one deal, every seat order, the same versions) at
a table of 3 or more where both sat, and in each game compares each one's result against every
third seat c with that pair's own record in the games the partner did not play (how often a
finishes ahead of c without b: the expectation, with no model of the game's luck). Per set,
two residuals (observed minus expected) of a pair {a, b}:

- ``joint``: a's and b's summed against the third seats (both gaining);
- ``feed``: a's minus b's (b feeding a; negative: a feeding b).

Each is averaged over the pair's sets and judged by its z-score (the set is the unit, its spread
measured across sets and shrunk toward the league's, so the games of a set may depend on one
another). A pair is flagged when some |z| passes the Bonferroni bound for ``alpha`` over every
pair and statistic, scaled by the spread of the league's own z-scores (:func:`null_scale`);
the most suspicious pairs get a second look with their shared sets out of every baseline
(:func:`analyse`). A league of honest bots is flagged with probability about ``alpha`` or less
(bench/collusion.py measures it, and the detection rate, on simulated and real leagues). Not covered: two bots at a table of 2 (one losing to the
other on purpose) have no third seat to compare against.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["PairFinding", "SetGames", "analyse", "bound_for", "describe", "null_scale", "store_sets", "used_bound"]

#: One duplicate set: its games, each a list of (version id, rank) by seat.
SetGames = list[list[tuple[int, int]]]
STATS = ("joint", "feed")
#: A pair is judged on this many shared sets at least (fewer: listed, never flagged).
MIN_SETS = 5
#: The league's spread of a statistic counts as this many sets of each pair's own.
PRIOR_DF = 200
#: How many of the most suspicious pairs are judged again without their shared sets in the baselines.
CANDIDATES = 3


@dataclass
class PairFinding:
    """One pair's residuals: per statistic the mean per set, its z-score; whether it is flagged."""

    a: int
    b: int
    sets: int
    mean: dict[str, float]
    z: dict[str, float]
    flagged: bool = False
    #: The |z| it had to pass (inf: not judged, too few shared sets).
    bound: float = math.inf

    @property
    def worst(self) -> str:
        return max(STATS, key=lambda k: abs(self.z[k]))


def _outcome(rx: int, ry: int) -> float:
    return 1.0 if rx < ry else 0.5 if rx == ry else 0.0


class _Baseline:
    """How often x finishes ahead of c in the games where a given third bot is *not* at the table:
    each pair's own record is its expectation, so no model of the game's luck is assumed (the
    fit's P(ahead) misjudged duplicate deals' luck: 28% of simulated honest leagues flagged)."""

    def __init__(self, sets: Sequence[SetGames]) -> None:
        self.total: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0])
        self.with_: dict[tuple[int, int, int], list[float]] = defaultdict(lambda: [0.0, 0])
        for games in sets:
            for game in games:
                for (x, rx), (c, rc) in itertools.permutations(game, 2):
                    o = _outcome(rx, rc)
                    t = self.total[(x, c)]
                    t[0] += o
                    t[1] += 1
                    for b, _ in game:
                        if b != x and b != c:
                            w = self.with_[(x, c, b)]
                            w[0] += o
                            w[1] += 1

    def p(self, x: int, c: int, without: int) -> float | None:
        t, w = self.total[(x, c)], self.with_.get((x, c, without), [0.0, 0])
        n = t[1] - w[1]
        return (t[0] - w[0]) / n if n > 0 else None

    def variance(self, x: int, c: int, without: int) -> float:
        """The sampling variance of :meth:`p` (a proportion's, p (1 - p) / games, at least a
        quarter's over the games when p is 0 or 1: a record of a few games can be all wins)."""
        t, w = self.total[(x, c)], self.with_.get((x, c, without), [0.0, 0])
        n = t[1] - w[1]
        p = (t[0] - w[0]) / n
        return max(p * (1 - p), 0.25 / n) / n


#: How often each baseline (x, third seat, without) entered a pair's residuals: what the
#: baselines' own errors add to the pair's mean (the same for both statistics, whose terms
#: differ only in sign, and no two baselines share a game).
Uses = dict[tuple[int, int, int], int]


def _set_residuals(games: SetGames, a: int, b: int, base: _Baseline, uses: Uses) -> dict[str, float] | None:
    """The set's residuals of the pair; None where no third seat has a baseline. Each baseline
    used is counted into ``uses``."""
    out = dict.fromkeys(STATS, 0.0)
    compared = False
    for game in games:
        rank = dict(game)
        for v, r in game:
            if v in (a, b):
                continue
            pa, pb = base.p(a, v, b), base.p(b, v, a)
            if pa is None or pb is None:
                continue
            ga = _outcome(rank[a], r) - pa
            gb = _outcome(rank[b], r) - pb
            out["joint"] += ga + gb
            out["feed"] += ga - gb
            uses[(a, v, b)] = uses.get((a, v, b), 0) + 1
            uses[(b, v, a)] = uses.get((b, v, a), 0) + 1
            compared = True
    return out if compared else None


def analyse(sets: Iterable[SetGames], alpha: float = 0.001) -> list[PairFinding]:
    """Every pair that shared a table with a third bot, most suspicious first; flagged where a
    |z| passes the Bonferroni bound for ``alpha`` over the judged pairs and the statistics
    (scaled by :func:`null_scale`; :func:`used_bound` gives the bound used).

    A colluding pair spills onto its neighbours: the sets where it sat together enter the
    baselines of every other pair with one of them (a feeder's partner seems to beat everyone a
    little more), which moved honest pairs' z-scores past 4 and, through the median, the bound
    itself. So each of the ``CANDIDATES`` most suspicious pairs is judged again with its shared
    sets left out of every baseline; one flagged then stays out, and the next are tried, until
    none is flagged."""
    sets = [s for s in sets if s and len({v for v, _ in s[0]}) == len(s[0]) >= 3]  # a third seat, no bot twice
    apart: set[tuple[int, int]] = set()
    alpha /= CANDIDATES + 1  # a pair may be judged CANDIDATES + 1 ways: their union keeps to alpha
    findings, spread = _judged(sets, apart, alpha)
    first = [f for f in findings if f.sets >= MIN_SETS]
    first_scale = null_scale(first)
    while True:
        for f in [f for f in findings if (f.a, f.b) not in apart and f.sets >= MIN_SETS][:CANDIDATES]:
            trial, _ = _judged(sets, apart | {(f.a, f.b)}, alpha, spread, first_scale, len(first))
            if any(t.flagged and (t.a, t.b) == (f.a, f.b) for t in trial):
                apart.add((f.a, f.b))
                findings = trial
                break
        else:
            return findings


#: The league's variance of each statistic per set, pooled over its pairs.
Spread = dict[str, float]


def _judged(sets: Sequence[SetGames], apart: set[tuple[int, int]], alpha: float, spread: Spread | None = None,
            scale: float = 1.0, family: int = 0) -> tuple[list[PairFinding], Spread]:
    """Every pair judged against baselines without the sets where a pair of ``apart`` sat together,
    and the league's spread it shrank each pair's toward (``spread``: the first look's, kept for a
    second; ``scale``: the null's spread where too few pairs are left to read one; ``family``:
    the pairs judged at first, a bound for at least that many)."""
    base = _Baseline([s for s in sets if not any({a, b} <= {v for v, _ in s[0]} for a, b in apart)])
    findings, spread = _pair_findings(sets, base, spread)
    return _judge(findings, alpha, scale, family), spread


def _pair_findings(sets: Sequence[SetGames], base: _Baseline, spread: Spread | None
                   ) -> tuple[list[PairFinding], Spread]:
    """Each pair's residuals and z-scores, each pair's spread shrunk toward ``spread``, or where
    None toward the one pooled over these pairs (returned with them). A second look keeps the
    first's: with a suspect's tables out of the baselines, few pairs (in a league of 4 bots, only
    the suspect) are left to pool, and a pair shrunk toward its own spread is not shrunk at all
    (14 of 10,000 honest leagues of 4 random bots were flagged at alpha 0.001, 7 on a second
    look alone; 6 with the first look's spread kept)."""
    per_pair: dict[tuple[int, int], list[dict[str, float]]] = defaultdict(list)
    uses: dict[tuple[int, int], Uses] = defaultdict(dict)
    for games in sets:
        versions = sorted(v for v, _ in games[0])
        for i, a in enumerate(versions):
            for b in versions[i + 1:]:
                row = _set_residuals(games, a, b, base, uses[(a, b)])
                if row is not None:
                    per_pair[(a, b)].append(row)
    per_stat: dict[tuple[int, int], dict[str, tuple[float, float, int]]] = {}
    pooled: dict[str, list[float]] = {k: [0.0, 0.0] for k in STATS}
    for pair, rows in per_pair.items():
        n = len(rows)
        per_stat[pair] = {}
        for k in STATS:
            m = sum(r[k] for r in rows) / n
            ss = sum((r[k] - m) ** 2 for r in rows)
            per_stat[pair][k] = (m, ss, n)
            pooled[k][0] += ss
            pooled[k][1] += n - 1
    if spread is None:
        spread = {k: total / max(df, 1) for k, (total, df) in pooled.items()}
    findings = []
    for (a, b), stats in per_stat.items():
        mean, z = {}, {}
        n = stats["joint"][2]
        # every set's residual shares the same estimated baselines, so their errors do not
        # average out over the sets: in a league of few bots a baseline rests on a few sets
        # and its error alone moved honest pairs' z-scores past 5
        shared = sum((used / n) ** 2 * base.variance(*key) for key, used in uses[(a, b)].items())
        for k, (m, ss, n) in stats.items():
            # the pair's variance shrunk toward the league's (worth PRIOR_DF sets): a pair whose
            # few sets happen to agree is not judged on a spread near 0 (heavy tails: 0.13% of
            # honest z-scores past 4, twenty times a normal's)
            var = (ss + PRIOR_DF * spread[k]) / (n - 1 + PRIOR_DF)
            mean[k] = m
            z[k] = m / math.sqrt(var / n + shared) if var / n + shared > 0 else 0.0
        findings.append(PairFinding(a, b, stats["joint"][2], mean, z))
    return findings, spread


def _judge(findings: list[PairFinding], alpha: float, scale: float = 1.0, family: int = 0) -> list[PairFinding]:
    # a second look judges the same pairs again, fewer of them judgeable without a suspect's
    # tables: the bound stays the first look's (a bound for the one pair left flagged honest
    # leagues of 4 bots)
    judged = [f for f in findings if f.sets >= MIN_SETS]
    if judged:
        bound = bound_for(max(len(judged), family), alpha) * (null_scale(judged) if len(judged) >= 3 else scale)
        for f in judged:
            f.flagged = any(abs(f.z[k]) > bound for k in STATS)
            f.bound = bound
    return sorted(findings, key=lambda f: (not f.flagged, -max(abs(v) for v in f.z.values())))


def null_scale(judged: Sequence[PairFinding]) -> float:
    """The spread of the z-scores of honest pairs, read from the league's own pairs (an
    empirical null): the median |z| over every judged pair and statistic, as a normal's
    standard deviation, never below 1. The baselines are estimated from finite records, which
    widens the z-scores (their spread was 1.2 in simulated honest leagues, and 18% of them had
    a pair flagged at alpha 0.01 without this); a colluding pair or two barely moves a median."""
    values = sorted(abs(f.z[k]) for f in judged for k in STATS)
    if len(values) < 6:  # too few pairs to read a spread from (the caller's fallback: 1)
        return 1.0
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return max(1.0, median / NormalDist().inv_cdf(0.75))


def used_bound(findings: Sequence[PairFinding]) -> float:
    """The |z| a judged pair had to pass in :func:`analyse`'s ``findings`` (inf: none judged)."""
    return min((f.bound for f in findings), default=math.inf)


def describe(f: PairFinding, a: str, b: str) -> str:
    """What ``f``'s largest z-score says of the pair named ``a`` and ``b``, in words."""
    if f.worst == "joint":
        return (f"{a} and {b} both finish ahead of the third seats more often together than apart" if f.z["joint"] > 0
                else f"{a} and {b} both do worse against the third seats together than apart")
    gainer, giver = (a, b) if f.z["feed"] > 0 else (b, a)
    return f"{gainer} gains against the third seats what {giver} loses when they share a table ({giver} feeding {gainer}?)"


def bound_for(pairs: int, alpha: float) -> float:
    """The |z| a pair must pass to be flagged among ``pairs`` judged pairs."""
    return NormalDist().inv_cdf(1 - alpha / (2 * len(STATS) * max(pairs, 1)))


def store_sets(rows: Iterable[Sequence[object]]) -> list[SetGames]:
    """Duplicate sets from finished seats ``(seq, round, seed, version_id, rank, ...)`` in game
    order (:func:`harness.league.queries.done_seats`): games grouped by round, deal and versions."""
    games: dict[int, list[tuple[int, int]]] = {}
    keys: dict[int, tuple[object, object]] = {}
    for seq, round_, seed, version, rank, *_ in rows:
        games.setdefault(int(seq), []).append((int(version), int(rank)))  # type: ignore[call-overload]
        keys[int(seq)] = (round_, seed)  # type: ignore[call-overload]
    sets: dict[tuple[object, ...], SetGames] = defaultdict(list)
    for seq, game in games.items():
        sets[(*keys[seq], tuple(sorted(v for v, _ in game)))].append(game)
    return list(sets.values())
