"""The table's P(>next) at the ends of a sparse two-seat field against exact posteriors.

For the adjacent pairs the table claims at ``--min`` or more (in ``bench/ratings_cells.py``'s
cell "100 bots x 10 sets, 2 seats": mostly the first or last pair, a bot that won or lost all
its 20 games beside one that won 80-95%), three probabilities are compared with the share truly
in that order:

- the table's claim, with every bot at the field's data weight (``--field-weight``: the fit
  before) or with each bot's own (:mod:`harness.league.ratings_local`);
- the exact posterior of the model the fit uses: the pairwise composite likelihood raised to the
  field's weight w, the prior N(mu0, tau^2) with the fitted tau, all 100 skills sampled together
  (Metropolis within Gibbs on a colouring of the bots, no two of a colour in one set);
- the exact posterior of the model that generated the games: each set's two results by the
  bivariate normal of their margins (correlation -2 l^2 / (2 beta^2), l the seat's luck shared
  by the set), the true prior N(mu0, beta^2). Averaged over any pairs chosen from the data, it is
  what the observed share estimates (Bayes' rule): the best any fit of these data can claim.

Run: python bench/ratings_exact.py [--seed 11] [--leagues 1500] [--min 0.85] [--field-weight] [--tiny]
(minutes: each chosen league samples the posteriors twice, 2,000 sweeps each).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np
from scipy.special import log_ndtr

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from ratings_cells import BETA, CELLS, LUCK, MU, SIGMA, draw_league  # noqa: E402

from harness.league import ratings_local  # noqa: E402
from harness.league.ratings_fit import fit_batches  # noqa: E402
from harness.league.ratings_swaps import bvn  # noqa: E402

SCALE = math.sqrt(2) * BETA
RHO = -2 * LUCK**2 / (2 * BETA**2)
GRID = np.linspace(-60, 60, 24001)  # a skill difference, for the tabulated likelihoods


def tables() -> tuple[np.ndarray, np.ndarray]:
    """Log-likelihood of a set whose two games bot a won 0, 1 (either order), 2 times, against
    the skill difference on ``GRID``: the composite (each game's Phi) and the generating model's."""
    z = GRID / SCALE
    coarse = np.linspace(-12, 12, 2401)
    both = bvn(coarse, coarse, np.full(coarse.size, RHO))
    won, lost = np.interp(z, coarse, both), np.interp(-z, coarse, both)
    true = np.log(np.maximum(np.stack([lost, 1 - won - lost, won]), 1e-300))
    composite = np.stack([2 * log_ndtr(-z), log_ndtr(z) + log_ndtr(-z), 2 * log_ndtr(z)])
    return composite, true


def sets_of(versions: np.ndarray, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each set's two bots (u first in seat 0, then in seat 1) and u's wins in it."""
    u, w = versions[0::2, 0], versions[0::2, 1]
    return u, w, (ranks[0::2, 0] < ranks[0::2, 1]).astype(int) + (ranks[1::2, 1] < ranks[1::2, 0]).astype(int)


def colours(u: np.ndarray, w: np.ndarray, k: int) -> list[np.ndarray]:
    """A greedy colouring of the bots: no two of one colour share a set (updated together)."""
    near: list[set[int]] = [set() for _ in range(k)]
    for a, b in zip(u.tolist(), w.tolist()):
        near[a].add(b)
        near[b].add(a)
    colour = -np.ones(k, dtype=int)
    for i in np.argsort([-len(n) for n in near]):
        used = {int(colour[j]) for j in near[i]}
        colour[i] = next(c for c in range(k) if c not in used)
    return [np.flatnonzero(colour == c) for c in range(colour.max() + 1)]


def sample(u: np.ndarray, w: np.ndarray, won: np.ndarray, k: int, table: np.ndarray, weight: float, prior_sd: float,
           start: np.ndarray, rng: np.random.Generator, sweeps: int = 2300, burn: int = 300) -> np.ndarray:
    """Draws of all k skills from weight x log-likelihood + log N(MU, prior_sd^2)."""
    x = start.copy()
    groups = colours(u, w, k)

    def per_bot(s: np.ndarray) -> np.ndarray:
        at = np.clip(np.rint((s[u] - s[w] + 60) / 120 * 24000).astype(int), 0, 24000)
        value = weight * table[won, at]
        return np.bincount(u, value, k) + np.bincount(w, value, k)

    draws = []
    for sweep in range(sweeps):
        for group in groups:
            proposal = x.copy()
            proposal[group] += rng.normal(0, 1.6, group.size)
            log_ratio = per_bot(proposal) - per_bot(x) - 0.5 * ((proposal - MU) ** 2 - (x - MU) ** 2) / prior_sd**2
            keep = group[np.log(rng.random(group.size)) < log_ratio[group]]
            x[keep] = proposal[keep]
        if sweep >= burn:
            draws.append(x.copy())
    return np.array(draws)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--leagues", type=int, default=1500)
    parser.add_argument("--min", type=float, default=0.85, help="the pairs claimed at least this")
    parser.add_argument("--field-weight", action="store_true", help="the table at the field's weight (the fit before)")
    parser.add_argument("--tiny", action="store_true", help="40 leagues, short chains: a check that it runs (seconds)")
    args = parser.parse_args()
    sweeps = (150, 50) if args.tiny else (2300, 300)
    if args.tiny:
        args.leagues, args.min = 40, 0.8
    ratings_local.LOCAL_WEIGHTS = not args.field_weight
    composite, true_table = tables()
    rng, chain = np.random.default_rng(args.seed), np.random.default_rng(99)
    rows = []
    for _ in range(args.leagues):
        true, batch = draw_league(rng, CELLS[1])
        fit = fit_batches([batch], mu=MU, sigma=SIGMA, beta=BETA)
        chosen = [(a, b, p) for a, b, p in zip(fit.order, fit.order[1:], fit.p_next) if p >= args.min]
        if not chosen:
            continue
        u, w, won = sets_of(batch.versions, batch.ranks)
        start = np.array([fit.mu[i] for i in range(true.size)])
        comp = sample(u, w, won, true.size, composite, fit.data_weight, fit.prior_sd, start, chain, *sweeps)
        exact = sample(u, w, won, true.size, true_table, 1.0, BETA, start, chain, *sweeps)
        rows += [(p, float(np.mean(comp[:, a] > comp[:, b])), float(np.mean(exact[:, a] > exact[:, b])),
                  float(true[a] > true[b])) for a, b, p in chosen]
    print(f"seed {args.seed}, {args.leagues} leagues, {'field weight' if args.field_weight else 'own weights'}; "
          f"load average {os.getloadavg()[0]:.1f}")
    table = np.array(rows).reshape(-1, 4)
    for low, high in ((args.min, 0.9), (0.9, 1.01), (args.min, 1.01)):
        mask = (table[:, 0] >= low) & (table[:, 0] < high)
        if mask.any():
            c, comp_p, exact_p, seen = table[mask].mean(axis=0)
            se = math.sqrt(max(seen * (1 - seen), 0.01) / mask.sum())
            print(f"   claimed {low:.2f}-{min(high, 1):.2f}: {mask.sum()} pairs; claimed {c:.3f}, exact posterior of the "
                  f"fit's model {comp_p:.3f}, of the generating model {exact_p:.3f}, observed {seen:.3f} (s.e. {se:.3f})")


if __name__ == "__main__":
    main()
