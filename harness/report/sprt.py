"""Is A better than B? Elo with an interval, likelihood of superiority and a sequential test.

The unit is the **duplicate set**: one deal played in every seat order of A, B and the fixed
opponents (2 games for two players, 6 for three, 24 for four). Its games share the deal's
luck, so they are not independent; a set's score, A's mean score against B over its games
(1 if A finishes ahead of B, 0.5 level, 0 behind), is one observation. For two players a set
has five possible scores (0, 1/4, 1/2, 3/4, 1): fastchess's *pentanomial* counts.

The sequential test is a generalised SPRT (GSPRT: each hypothesis' likelihood at its best
distribution of set scores with the given expected score) in its **normal approximation**, as
Michel Van den Bergh derived it for fishtest: with N sets of mean score x and variance v, H0:
the expected score is s0 = E(elo0), H1: s1 = E(elo1), where E(elo) = 1 / (1 + 10^(-elo/400)),

    LLR = N (s1 - s0) (2 x - s0 - s1) / (2 v)

and the test stops at LLR >= ln((1 - beta) / alpha) (accept H1) or LLR <= ln(beta / (1 -
alpha)) (accept H0). It is not literally what the reference tools compute: fastchess and
fishtest (``LLR_logistic``) solve the exact multinomial GSPRT over the pentanomial counts
(the maximum-likelihood distribution under each hypothesis, by Van den Bergh's secular
equation), and cutechess runs a trinomial SPRT in BayesElo. The approximation is theirs to
second order in (s1 - s0), and it extends unchanged to 3- and 4-seat sets, whose scores take
7 or 25 values rather than 5. Measured against fishtest's formula (bench/ratings.py, part 7,
pentanomial sets around the hypotheses): the two LLRs differ by a median of 0.1-0.3% of
max(|LLR|, 1) and by 1-4% at the 90th percentile, from 25 sets on (docs/ratings.md). Far from
both hypotheses the approximation is larger (100 sets at about +115 Elo for elo1 = 10: 3.58
against fishtest's 2.42), so a clear match is decided a few sets sooner, in the same direction;
the error rates at the design points are unchanged (5.1% and 95.1%, measured in simulation).

One pseudo-set of half a win and half a loss is added to N, x and v, so that a few identical
sets (no variance) cannot decide: the project's own rule, not fishtest's (fishtest puts 1e-3
into each empty pentanomial cell). Using the observed variance of whole sets, not of games, is
what makes the test valid for duplicate deals, and what lets it stop early: duplicate sets
cancel the deal's luck, so their variance is small (docs/ratings.md measures the games saved).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SprtParams", "elo_from_score", "expected_score", "llr", "llr_bounds", "match_summary", "parse_sprt"]


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
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def elo_from_score(score: float) -> float:
    """The Elo difference that expects ``score`` (clamped away from 0 and 1, where it is infinite)."""
    score = min(max(score, 1e-6), 1 - 1e-6)
    return -400.0 * math.log10(1.0 / score - 1.0)


def llr_bounds(params: SprtParams) -> tuple[float, float]:
    """(lower, upper): accept H0 at or below lower, H1 at or above upper."""
    return math.log(params.beta / (1 - params.alpha)), math.log((1 - params.beta) / params.alpha)


def llr(set_scores: Sequence[float], params: SprtParams) -> float:
    """The GSPRT log-likelihood ratio of H1 against H0 for these set scores (0 with < 2 sets).

    One pseudo-set, half a win and half a loss, is added to the mean and the variance: without
    it two identical sets have no variance and would decide the test at once."""
    n = len(set_scores)
    if n < 2:
        return 0.0
    total = n + 1
    mean = (sum(set_scores) + 0.5) / total
    var = (sum((x - mean) ** 2 for x in set_scores) + 0.5 * mean ** 2 + 0.5 * (1 - mean) ** 2) / total
    s0, s1 = expected_score(params.elo0), expected_score(params.elo1)
    return total * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)


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
