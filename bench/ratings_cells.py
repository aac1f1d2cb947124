"""The table's fit where real leagues are: coverage of its 95% intervals and calibration of its
P(>next) in cells outside the 4-bot grid, side by side with the targets.

Each cell draws leagues from TrueSkill's model with one thing changed, fits each with the
table's own fit (``harness.league.ratings_fit.fit_batches``) and counts the intervals on mu
that contain the truth (each bot's skill relative to the mean of the league's bots, plus the
prior's mean: what mu is relative to) and, for every adjacent pair of the fitted order, the
claimed P(>next) against whether the pair is truly in that order. A league's sets: the
``seats`` bots of a set are drawn so that every bot plays about equally often, and play one
deal in every seat order; each seat's luck N(0, 3^2) is shared by the set's games (the
duplicate deal), the rest of the noise keeps each performance's total at N(0, beta^2).

Cells: the reference (4 bots, spread beta/2, 384 games, 3 seats); sparse (100 bots with about
10 sets each, 2 and 3 seats, spread beta); spread 2 beta (the fixed prior's own spread); a first-seat
advantage of +beta/2 and +beta; one noisy bot (twice the usual performance noise) among 4
bots and among 10 bots spread beta at 3 seats, and among 4 at 2 seats (where its noise can be measured: the noisy cells also
print that bot's own coverage and in how many leagues the noises were fitted); 10 close bots
(spread beta/4).

Run: python bench/ratings_cells.py [--leagues 200] [--cells "NAME;..."] [--seed 1] [--sets-per-bot N]
     [--noisy X] [--field-weight] [--tiny]
(``bench/ratings.py --parts cells`` runs the same; ``--tiny``: 2 leagues a cell, seconds.)
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.league import ratings_local  # noqa: E402
from harness.league.ratings_fit import TableBatch, TableFit, fit_batches  # noqa: E402

MU, SIGMA, BETA = 25.0, 25 / 3, 25 / 6
LUCK = 3.0
TARGET = (0.93, 0.97)
TENTHS = (0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass(frozen=True)
class Cell:
    """A kind of league: ``bots`` with skills N(0, spread^2) (in beta), ``sets_per_bot`` sets
    each at ``seats`` seats; ``seat_edge`` added to the first seat's performance (in beta);
    ``noisy``: bot 0's performance noise is this many times beta."""

    name: str
    bots: int
    seats: int
    sets_per_bot: float
    spread: float = 0.5
    seat_edge: float = 0.0
    noisy: float = 1.0


CELLS = (
    Cell("reference: 4 bots, 3 seats, 64 sets", 4, 3, 48),
    Cell("sparse: 100 bots x 10 sets, 2 seats", 100, 2, 10, spread=1.0),
    Cell("sparse: 100 bots x 10 sets, 3 seats", 100, 3, 10, spread=1.0),
    Cell("spread 2 beta: 8 bots, 3 seats", 8, 3, 24, spread=2.0),
    Cell("seat edge +beta/2: 4 bots, 3 seats", 4, 3, 48, seat_edge=0.5),
    Cell("seat edge +beta: 4 bots, 3 seats", 4, 3, 48, seat_edge=1.0),
    Cell("a noisy bot (2 beta): 4 bots, 3 seats", 4, 3, 48, noisy=2.0),
    Cell("a noisy bot (2 beta): 10 bots spread beta, 3 seats", 10, 3, 60, spread=1.0, noisy=2.0),
    Cell("10 close bots (beta/4), 2 seats", 10, 2, 40, spread=0.25),
    Cell("a noisy bot (2 beta): 4 bots, 2 seats", 4, 2, 48, noisy=2.0),
)


def draw_league(rng: np.random.Generator, cell: Cell) -> tuple[np.ndarray, TableBatch]:
    """(true skills, the games as one batch)."""
    k, n = cell.bots, cell.seats
    true = MU + rng.normal(0, cell.spread * BETA, k)
    n_sets = max(1, round(k * cell.sets_per_bot / n))
    # every bot about equally often: shuffled rounds of the bots cut into tables (a table that
    # would seat a bot twice, across two rounds, is drawn afresh)
    order = np.concatenate([rng.permutation(k) for _ in range(math.ceil(n_sets * n / k) + 1)])
    tables = [order[i * n:(i + 1) * n] for i in range(n_sets)]
    tables = [t if len(set(t.tolist())) == n else rng.choice(k, n, replace=False) for t in tables]
    perms = np.array(list(itertools.permutations(range(n))))
    versions = np.concatenate([np.asarray(t)[perms] for t in tables])  # (sets * n!, n)
    sets = np.repeat(np.arange(len(tables)), len(perms))
    luck = rng.normal(0, LUCK, (len(tables), n))[sets]  # each seat's luck, shared by the set
    noise_sd = np.where(versions == 0, cell.noisy, 1.0) * BETA
    rest = np.sqrt(noise_sd ** 2 - LUCK ** 2)
    perf = true[versions] + luck + rng.normal(0, 1, versions.shape) * rest
    perf[:, 0] += cell.seat_edge * BETA
    ranks = np.argsort(np.argsort(-perf, axis=1), axis=1)
    return true, TableBatch(versions, ranks, sets)


def measure(cell: Cell, leagues: int, seed: int = 1) -> dict[str, object]:
    """Coverage (covered, intervals) and per-tenth calibration (claimed sum, right, pairs) over ``leagues``."""
    rng = np.random.default_rng(seed)
    covered = total = 0
    shares: list[float] = []  # each league's share covered: the standard error is over leagues
    tenths = np.zeros((len(TENTHS), 3))
    flagged = fitted = own = 0
    for _ in range(leagues):
        true, batch = draw_league(rng, cell)
        fit: TableFit = fit_batches([batch], mu=MU, sigma=SIGMA, beta=BETA)
        truth = true - true.mean() + MU
        inside = [bool(fit.interval(bot)[0] <= truth[bot] <= fit.interval(bot)[1]) for bot in fit.mu]
        covered += sum(inside)
        total += len(inside)
        shares.append(sum(inside) / len(inside))
        flagged += len(getattr(fit, "noisy", {}) or {})
        fitted += bool(fit.noise)
        own += inside[list(fit.mu).index(0)] if 0 in fit.mu else 0
        for a, b, p in zip(fit.order, fit.order[1:], fit.p_next):
            t = min(int((p - 0.5) * 10), 4)
            tenths[t] += (p, float(true[a] > true[b]), 1.0)
    se = float(np.std(shares, ddof=1) / math.sqrt(len(shares))) if len(shares) > 1 else float("nan")
    return {"covered": covered, "total": total, "tenths": tenths, "flagged": flagged, "se": se, "fitted": fitted,
            "own": own}


def report(cell: Cell, got: dict[str, object], leagues: int) -> list[str]:
    covered, total = int(got["covered"]), int(got["total"])  # type: ignore[call-overload]
    rate = covered / total
    se = float(got["se"])  # type: ignore[arg-type]  # over leagues: one league's intervals are not independent
    ok = "ok" if TARGET[0] <= rate <= TARGET[1] else ("near" if abs(rate - sum(TARGET) / 2) < 0.02 + 2 * se else "OUT")
    lines = [f"   {cell.name:<40} coverage {100 * rate:5.1f}% +-{100 * se:.1f} (target 93-97%: {ok}; "
             f"{leagues} leagues, {total} intervals; noisy flagged {got['flagged']}; noises fitted in {got['fitted']} "
             f"leagues)"]
    if cell.noisy != 1.0:
        lines.append(f"      the noisy bot's own interval: {100 * int(got['own']) / leagues:.1f}% of {leagues}")  # type: ignore[call-overload]
    tenths = got["tenths"]
    assert isinstance(tenths, np.ndarray)
    cells = []
    for low, (claimed, right, pairs) in zip(TENTHS, tenths):
        if pairs:
            c, o = claimed / pairs, right / pairs
            se_o = math.sqrt(max(o * (1 - o), 0.01) / pairs)
            cells.append(f"{low:.1f}: {c:.3f}->{o:.3f}+-{se_o:.3f} ({int(pairs)})")
    lines.append("      P(>next) claimed->observed per tenth (target +-0.03): " + "; ".join(cells))
    return lines


def run(leagues: int, names: list[str] | None = None, seed: int = 1, sets_per_bot: float | None = None,
        noisy: float | None = None) -> None:
    """Every cell (or those whose name contains one of ``names``), printed as it finishes;
    ``sets_per_bot``, ``noisy``: those of the chosen cells replaced (a ladder of sizes)."""
    print(f"cells: {leagues} leagues each, seed {seed}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for cell in CELLS:
        if names and not any(n in cell.name for n in names):
            continue
        if sets_per_bot is not None:
            cell = replace(cell, name=f"{cell.name} [{sets_per_bot:g} sets each]", sets_per_bot=sets_per_bot)
        if noisy is not None:
            cell = replace(cell, name=f"{cell.name} [noise {noisy:g} beta]", noisy=noisy)
        start = time.perf_counter()
        got = measure(cell, leagues, seed)
        print("\n".join(report(cell, got, leagues)) + f"  ({time.perf_counter() - start:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--leagues", type=int, default=200)
    parser.add_argument("--cells", default="", help="parts of cell names, separated by ';' (the names have commas; "
                        "default: all)")
    parser.add_argument("--tiny", action="store_true", help="2 leagues a cell: a check that it runs (seconds; its figures mean nothing)")
    parser.add_argument("--seed", type=int, default=1, help="the leagues' seed (another draws other leagues)")
    parser.add_argument("--sets-per-bot", type=float, help="replace the chosen cells' sets per bot")
    parser.add_argument("--noisy", type=float, help="replace the chosen cells' noisy bot's noise (in beta; 1: honest)")
    parser.add_argument("--field-weight", action="store_true", help="every bot at the field's data weight and "
                        "P(>next) from the normal alone (the fit before each bot's own weight, for a side by side)")
    args = parser.parse_args()
    ratings_local.LOCAL_WEIGHTS = not args.field_weight
    run(2 if args.tiny else args.leagues, [c for c in args.cells.split(";") if c] or None, args.seed,
        args.sets_per_bot, args.noisy)


if __name__ == "__main__":
    main()
