"""Is A better than B? Elo with an interval, likelihood of superiority and a sequential test.

The unit is the **duplicate set**: one deal played in every seat order of A, B and the fixed
opponents (2 games for two players, 6 for three, 24 for four). Its games share the deal's
luck, so they are not independent; a set's score, A's mean score against B over its games
(1 if A finishes ahead of B, 0.5 level, 0 behind), is one observation. For two players a set
has five possible scores (0, 1/4, 1/2, 3/4, 1): fastchess's and fishtest's *pentanomial*
counts; a set of g games has 2g + 1 (13 at three seats, 49 at four).

**The sequential test** is the generalised SPRT (GSPRT) on the exact likelihood of the set
scores, as fishtest's ``LLR_logistic`` and fastchess compute it for pentanomial counts. The
set scores are a multinomial over the values they take; H0 says their expected value is s0 =
E(elo0), H1 says s1 = E(elo1), with E(elo) = 1 / (1 + 10^(-elo/400)). Each hypothesis is
represented by the maximum-likelihood multinomial with that expected score, which by a
Lagrange multiplier x is p_i = f_i / (1 + x (a_i - s)) (f_i the observed frequency of value
a_i), x the root of the secular equation sum_i f_i (a_i - s) / (1 + x (a_i - s)) = 0, unique
on the interval where every 1 + x (a_i - s) > 0 (the sum decreases in x there). Then

    LLR = N sum_i f_i ln(p1_i / p0_i)

and the test stops at LLR >= ln((1 - beta) / alpha) (accept H1) or LLR <= ln(beta / (1 -
alpha)) (accept H0). The root is found by Newton's method kept inside a bisection bracket.

**Empty cells.** The maximum-likelihood multinomial gives no mass to a value never observed, so
ten sets of two wins alone admit no distribution with expected score 0.5 (the LLR would be
infinite). fishtest puts 1e-3 of a count into each empty pentanomial cell; this does the same,
and at three and four seats keeps the same five anchors: the support is the values observed
plus 0, 1/4, 1/2, 3/4 and 1, each of those five that was not observed holding 1e-3. At two
seats that is fishtest's computation exactly; at three and four, the finer values (k/12,
k/48) enter when observed, and the regularisation is the same 5e-3 of a count at most, at the
same places, whatever the table size: so a streak of identical sets gives the same LLR at
every table size (tests/test_sprt_exact.py), and no fixed grid of 49 cells would add 0.05 of
a pseudo-set of its own. (Putting 1e-3 into every one of the 13 or 49 possible values was the
other choice: it moves the LLR by about 1e-3 per empty cell over N, but it makes a streak's
LLR depend on the table size for no reason in the data.)

Ten sets of two wins (elo0 = 0, elo1 = 20) give LLR 0.56, not a decision (the normal
approximation that this replaced, with one pseudo-set, gave 3.21 and stopped there; against
fishtest its 90th-percentile difference was 5.7% at 25 sets).

Using whole sets as the observations, not games, is what makes the test valid for duplicate
deals, and what lets it stop early: duplicate sets cancel the deal's luck, so their scores
vary little (docs/ratings.md measures the games saved).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ANCHORS", "EMPTY_CELL", "SprtParams", "constrained_mle", "elo_from_score", "expected_score", "llr",
           "llr_bounds", "match_summary", "multinomial", "parse_sprt"]


@dataclass(frozen=True)
class SprtParams:
    """H0: Elo difference elo0, H1: elo1; alpha and beta the error rates."""

    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05


def parse_sprt(text: str) -> SprtParams:
    """``elo0=0,elo1=10,alpha=0.05,beta=0.05`` (any subset; the rest default); ValueError naming the fault."""
    values: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, raw = item.partition("=")
        if not sep or key not in ("elo0", "elo1", "alpha", "beta"):
            raise ValueError(f"{item!r} is not KEY=VALUE with KEY one of elo0, elo1, alpha, beta")
        try:
            values[key] = float(raw)
        except ValueError:
            raise ValueError(f"{key}: {raw!r} is not a number") from None
    params = SprtParams(**values)
    if not params.elo1 > params.elo0:
        raise ValueError(f"elo1 ({params.elo1:g}) must be greater than elo0 ({params.elo0:g})")
    if not (0 < params.alpha < 0.5 and 0 < params.beta < 0.5):
        raise ValueError("alpha and beta are error rates between 0 and 0.5")
    return params


def expected_score(elo: float) -> float:
    """The expected score of a player rated ``elo`` above its opponent (logistic Elo)."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def elo_from_score(score: float) -> float:
    """The Elo difference that expects ``score`` (clamped away from 0 and 1, where it is infinite)."""
    score = min(max(score, 1e-6), 1 - 1e-6)
    return -400.0 * math.log10(1.0 / score - 1.0)


def llr_bounds(params: SprtParams) -> tuple[float, float]:
    """(lower, upper): accept H0 at or below lower, H1 at or above upper."""
    return math.log(params.beta / (1 - params.alpha)), math.log((1 - params.beta) / params.alpha)


#: fishtest's regularisation: an empty anchor cell holds this much of a count
EMPTY_CELL = 1e-3
#: the pentanomial values, kept in the support at any table size (see the module's text)
ANCHORS = (0.0, 0.25, 0.5, 0.75, 1.0)


def multinomial(set_scores: Sequence[float]) -> tuple[list[float], list[float]]:
    """(values, counts): the distinct set scores with their counts, plus each of the five
    :data:`ANCHORS` not observed holding :data:`EMPTY_CELL` (values rounded to 1e-9, so that
    k/12 computed two ways is one value)."""
    counts: dict[float, float] = {}
    for x in set_scores:
        key = round(float(x), 9)
        counts[key] = counts.get(key, 0.0) + 1.0
    for anchor in ANCHORS:
        counts.setdefault(anchor, EMPTY_CELL)
    values = sorted(counts)
    return values, [counts[v] for v in values]


def _secular_root(shifted: Sequence[float], freqs: Sequence[float]) -> float:
    """The root x of sum_i f_i a_i / (1 + x a_i) = 0 on the interval where every 1 + x a_i > 0
    (min a < 0 < max a): Newton's method from 0, kept inside a bracket that bisection shrinks."""
    lo, hi = -1.0 / max(shifted), -1.0 / min(shifted)
    x = 0.0
    for _ in range(200):
        value = slope = 0.0
        for a, f in zip(shifted, freqs):
            d = 1.0 + x * a
            value += f * a / d
            slope -= f * a * a / (d * d)
        if value > 0:  # the sum decreases in x: the root is above
            lo = x
        else:
            hi = x
        if value == 0.0 or hi - lo <= 1e-15 * max(1.0, abs(x)):
            break
        step = x - value / slope
        new = step if lo < step < hi else 0.5 * (lo + hi)
        if abs(new - x) <= 1e-16 * max(1.0, abs(x)):
            break
        x = new
    return x


def constrained_mle(values: Sequence[float], freqs: Sequence[float], s: float) -> list[float]:
    """The maximum-likelihood distribution on ``values`` given observed frequencies ``freqs``
    (summing to 1) under the constraint that its expected value is ``s`` (strictly between the
    smallest and the largest value): p_i = f_i / (1 + x (a_i - s)), x the secular equation's root."""
    shifted = [a - s for a in values]
    x = _secular_root(shifted, freqs)
    return [f / (1.0 + x * a) for a, f in zip(shifted, freqs)]


def llr(set_scores: Sequence[float], params: SprtParams) -> float:
    """The GSPRT log-likelihood ratio of H1 against H0 for these set scores (0 with no sets):
    the exact multinomial likelihood of the module's text (fishtest's ``LLR_logistic`` at two
    seats)."""
    if not set_scores:
        return 0.0
    values, counts = multinomial(set_scores)
    total = sum(counts)
    freqs = [c / total for c in counts]
    p0 = constrained_mle(values, freqs, expected_score(params.elo0))
    p1 = constrained_mle(values, freqs, expected_score(params.elo1))
    return total * sum(f * math.log(b / a) for f, a, b in zip(freqs, p0, p1))


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def match_summary(set_scores: Sequence[float], games: int, params: SprtParams | None,
                  set_size: int) -> dict[str, Any]:
    """Everything ``harness match`` prints: games, A's score share, Elo with its 95% interval,
    likelihood of superiority, the distribution of set scores, and the SPRT's LLR and verdict."""
    n = len(set_scores)
    mean = sum(set_scores) / n if n else 0.5
    var = sum((x - mean) ** 2 for x in set_scores) / n if n else 0.0
    se = math.sqrt(var / n) if n else float("inf")
    elo = elo_from_score(mean) if n else 0.0
    elo_ci: list[float | None]
    if n and se > 0:
        elo_ci = [elo_from_score(mean - 1.96 * se), elo_from_score(mean + 1.96 * se)]
        los = _phi((mean - 0.5) / se)
    else:
        elo_ci = [elo, elo] if n else [None, None]
        los = 1.0 if mean > 0.5 else 0.0 if mean < 0.5 else 0.5
    counts: dict[str, int] = {}
    for x in set_scores:  # pentanomial for 2-player sets: 0, 1/4, 1/2, 3/4, 1
        key = f"{x:.3f}".rstrip("0").rstrip(".") if x not in (0, 1) else str(int(x))
        counts[key] = counts.get(key, 0) + 1
    out: dict[str, Any] = {"verdict": "none", "games": games, "sets": n, "set_size": set_size, "score": mean,
                           "elo": elo, "elo_ci": elo_ci, "los": los,
                           "set_scores": dict(sorted(counts.items(), key=lambda kv: float(kv[0])))}
    if params is not None:
        lower, upper = llr_bounds(params)
        value = llr(set_scores, params)
        out.update({"llr": value, "llr_bounds": [lower, upper],
                    "sprt": {"elo0": params.elo0, "elo1": params.elo1, "alpha": params.alpha, "beta": params.beta}})
        out["verdict"] = "H1" if value >= upper else "H0" if value <= lower else "none"
    return out
