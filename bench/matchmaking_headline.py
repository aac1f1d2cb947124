"""The matchmaking headline with its uncertainty: games adaptive / games uniform for the right
top-10 set in 95% of leagues, with a bootstrap interval over the leagues, and the true gap
between the 10th and 11th bots of those leagues beside the gap's distribution over many drawn
leagues (a league's top 10 is hard to get right mostly when that gap is small: a run whose
leagues were an easy draw reports a smaller ratio). Used by bench/matchmaking.py's report.
"""

from __future__ import annotations

import numpy as np

TOP = 10


def stays_from(rungs: list[int], right: np.ndarray) -> int | None:
    """The first rung from which the share of leagues right (``right``: leagues x rungs, bool)
    stays at 95% or more to the end of the ladder (None: never)."""
    at = None
    shares = right.mean(axis=0)
    for i in range(len(rungs) - 1, -1, -1):
        if shares[i] < 0.95:
            break
        at = rungs[i]
    return at


def first_at(rungs: list[int], right: np.ndarray) -> int | None:
    """The first rung where the share of leagues right is 95% or more (None: never)."""
    hits = np.flatnonzero(right.mean(axis=0) >= 0.95)
    return rungs[int(hits[0])] if hits.size else None


def bootstrap_ratio(rungs: list[int], adaptive: np.ndarray, uniform: np.ndarray, draws: int = 1000,
                    seed: int = 0, rule: str = "stays", uniform_rungs: list[int] | None = None
                    ) -> tuple[float | None, float | None, float | None, int]:
    """(ratio, 5th, 95th percentile of the ratio over leagues resampled with replacement, the
    resamples where both reached 95%): the same leagues for both schedules in each resample
    (they share the skills). ``rule``: "stays" (the rung from which a schedule stays at 95%,
    the headline's) or "first" (the first rung at 95%). ``uniform_rungs``: uniform's own ladder
    when it was run further than adaptive's (default ``rungs``)."""
    at = stays_from if rule == "stays" else first_at
    u_rungs = rungs if uniform_rungs is None else uniform_rungs

    def ratio(a: np.ndarray, u: np.ndarray) -> float | None:
        ga, gu = at(rungs, a), at(u_rungs, u)
        return None if ga is None or gu is None else ga / gu

    rng = np.random.default_rng(seed)
    n = adaptive.shape[0]
    got = [ratio(adaptive[idx], uniform[idx]) for idx in (rng.integers(0, n, n) for _ in range(draws))]
    values = np.array([g for g in got if g is not None])
    low, high = (float(np.quantile(values, 0.05)), float(np.quantile(values, 0.95))) if values.size else (None, None)
    return ratio(adaptive, uniform), low, high, int(values.size)


def gap_quantiles(gaps: np.ndarray) -> str:
    """The share of gaps under 0.05 beta and their quartiles, as one phrase."""
    q = np.quantile(gaps, [0.25, 0.5, 0.75])
    return f"{100 * float(np.mean(gaps < 0.05)):.1f}% under 0.05 beta, quartiles {q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f}"


def population_gaps(bots: int, mu: float, sigma: float, beta: float, leagues: int = 20_000, seed: int = 0) -> np.ndarray:
    """The true gap (in beta) between the 10th and 11th of ``bots`` skills N(mu, sigma^2), over many draws."""
    skills = np.sort(np.random.default_rng(seed).normal(mu, sigma, (leagues, bots)), axis=1)[:, ::-1]
    return (skills[:, TOP - 1] - skills[:, TOP]) / beta


def headline_lines(rungs: list[int], results: dict[str, list[list[tuple[bool, bool] | None]]],
                   gaps: list[float] | None, bots: int, mu: float, sigma: float, beta: float) -> list[str]:
    """The lines the report prints under a table size's ladder."""
    def matrix(name: str) -> np.ndarray:
        return np.array([[bool(cell and cell[0]) for cell in league] for league in results[name]])

    if not results.get("adaptive") or not results.get("uniform"):
        return []
    ratio, low, high, usable = bootstrap_ratio(rungs, matrix("adaptive"), matrix("uniform"))
    leagues = len(results["adaptive"])
    if ratio is None:
        head = "  headline with its uncertainty: one schedule never reached 95% of leagues on this ladder"
    else:
        interval = "-" if low is None else f"{low:.3f}-{high:.3f}"
        head = (f"  headline with its uncertainty: games adaptive / uniform for the right top-{TOP} set {ratio:.3f}, "
                f"bootstrap 90% interval over the {leagues} leagues {interval} ({usable} of 1,000 resamples where both "
                f"reached 95%; the rungs are a factor apart, so the ratio moves in their steps)")
    first, first_low, first_high, first_usable = bootstrap_ratio(rungs, matrix("adaptive"), matrix("uniform"),
                                                                 rule="first")
    lines = [head]
    if first is not None:
        interval = "-" if first_low is None else f"{first_low:.3f}-{first_high:.3f}"
        lines.append(f"    the same with the first rung at 95% (not where it stays): {first:.3f}, bootstrap 90% interval "
                     f"{interval} ({first_usable} resamples); a single league that turns wrong late moves the rung a "
                     f"schedule stays from, so with few leagues the first ratio is the steadier")
    if gaps:
        lines.append(f"    true {TOP}th/{TOP + 1}th gap of these leagues: {gap_quantiles(np.array(gaps))}; over 20,000 "
                     f"drawn leagues: {gap_quantiles(population_gaps(bots, mu, sigma, beta))}")
    return lines
