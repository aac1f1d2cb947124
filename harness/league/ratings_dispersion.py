"""What an honest bot's dispersion is expected to be under the model, for the consistency check
of :mod:`harness.league.ratings_fit`.

**Why.** A bot's dispersion is its sets' score variance over the model's information for it,
relative to the field's. The fit's likelihood treats a set's games as independent; they are
not: a duplicate set deals the same cards in every seat order, so a bot's results across the
set's games are correlated through the deal's luck, and how much depends on how lopsided its
games are (a bot far above or below its opponents has results that follow the deal less, the
correlation of two outcome indicators shrinking as their probabilities move away from 1/2).
Honest bots at the ends of a field therefore read up to 10-15% noisier than those in the
middle, and in a long league (1,536 sets a bot, where the check's one-in-a-thousand threshold
is 1.12) that difference alone flagged 2.5% of honest bots at 2 seats and 12% at 3.

**What.** For a bot the check would flag, its expected dispersion is measured by simulation
under the fitted model: the bot's own sets (a sample of at most :data:`SETS` of them, the same
bots in the same seats) are played again :data:`REPLICATES` times, each performance the bot's
fitted skill plus its seat's effect plus the deal's luck for that seat (shared by the set's
games, the share ``r`` of the common noise read from the swapped games) plus the bot's own
noise, and its score variance over its information is read exactly as the fit reads the real
games; the field's the same way on a sample of every set. The check then asks whether the
bot's dispersion exceeds what the model expects of it, not of the field's average bot. Where
the deal's share is unknown (no sets played in every seat order, or no sets of more than one
game) the expected dispersion is 1, the former check. The simulation's seed is fixed, so a
table's flags do not change from one reading to the next.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from harness.league.ratings_model import (
    Hessian,
    TableBatch,
    meat,
    pair_terms,
    pairs_of,
    seat_pair_scores,
    seat_positions,
)
from harness.league.ratings_noise import SWAP_MAX_ENTRIES
from harness.league.ratings_swaps import Swaps, luck_share, margins

__all__ = ["REPLICATES", "SETS", "Expect", "expectation", "expected_dispersion"]

#: each bot's dispersion expected of an honest bot in its place, at (the bots to read, skills,
#: seat effects): :func:`expectation`
Expect = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

#: sets sampled per flagged bot (and for the field), and their replays each
SETS = 64
REPLICATES = 100
#: the simulation's seed (fixed: the same games give the same flags)
SEED = 20261127


def _sample_sets(batches: Sequence[TableBatch], bot: int | None, rng: np.random.Generator) -> list[np.ndarray]:
    """Per batch, the indices of the games of at most :data:`SETS` sets (those holding ``bot``,
    or every set when None), chosen at random across batches."""
    labelled = []
    for index, batch in enumerate(batches):
        rows = np.arange(len(batch.sets)) if bot is None else np.flatnonzero((batch.versions == bot).any(axis=1))
        for key in np.unique(batch.sets[rows]):
            labelled.append((index, int(key)))
    chosen = set()
    if labelled:
        picks = rng.choice(len(labelled), size=min(SETS, len(labelled)), replace=False)
        chosen = {labelled[p] for p in picks}
    return [np.flatnonzero(np.isin(batch.sets, [key for b, key in chosen if b == index]))
            for index, batch in enumerate(batches)]


def _replay(batches: Sequence[TableBatch], base: dict[int, int], rows: list[np.ndarray], skills: np.ndarray,
            seat: np.ndarray, beta: float, luck: float, rng: np.random.Generator) -> list[TableBatch]:
    """The chosen games played :data:`REPLICATES` times under the model, every bot at the common
    beta (each replay its own sets; every table size kept, empty or not, in the batches' order:
    ``base``, each size's first seat effect, lines up with the fit's only so)."""
    out = []
    for batch, chosen in zip(batches, rows):
        n = batch.versions.shape[1]
        versions = np.tile(batch.versions[chosen], (REPLICATES, 1))
        keys, sets = np.unique(batch.sets[chosen], return_inverse=True)
        sets = (np.arange(REPLICATES)[:, None] * keys.size + sets[None, :]).ravel()
        deal = rng.normal(0.0, beta * np.sqrt(luck), (REPLICATES * keys.size, n))[sets]  # each seat's, per set
        own = rng.normal(0.0, beta * np.sqrt(1.0 - luck), versions.shape)
        perf = skills[versions] + seat[base[n]:base[n] + n] + deal + own
        ranks = np.argsort(np.argsort(-perf, axis=1), axis=1)
        out.append(TableBatch(versions, ranks, sets))
    return out


def _ratios(batches: list[TableBatch], k: int, skills: np.ndarray, seat: np.ndarray, scale: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """Each bot's score variance over its sets in ``batches``, and its information (the bots
    that play in them have some: every game they play adds to it)."""
    pairs = pairs_of(batches, k)
    meat_matrix, _, _ = meat(batches, seat_pair_scores(pairs, skills, seat, scale), k)
    information = Hessian(pairs, k).diagonal(pair_terms(pairs, skills, seat, scale, 2)[3][1])
    return np.diag(meat_matrix), information


def expected_dispersion(batches: Sequence[TableBatch], base: dict[int, int], k: int, bots: np.ndarray,
                        skills: np.ndarray, seat: np.ndarray, beta: float, luck: float | None) -> np.ndarray:
    """Each bot's dispersion expected of an honest bot (the common beta) in its place under the
    fitted model (see the module's text), for the bots in ``bots`` (indices); 1 for the others,
    and for all when ``luck`` (the deal's share r of the common noise) is None or 0.
    ``batches``: the games; ``base``: each table size's first seat effect in ``seat``."""
    expected = np.ones(k)
    present = {batch.versions.shape[1] for batch in batches}
    empty = [TableBatch(np.zeros((0, n), np.int64), np.zeros((0, n), np.int64), np.zeros(0, np.int64))
             for n in base if n not in present]
    batches = sorted([*batches, *empty], key=lambda batch: base.get(batch.versions.shape[1], -1))
    if luck is None or luck <= 0 or not len(bots) or seat_positions(batches) != base:
        return expected  # (replayed, the games' seat positions must be the fit's)
    luck = min(luck, 1.0)
    rng = np.random.default_rng(SEED)
    scale = float(np.sqrt(2.0) * beta)
    variance, information = _ratios(_replay(batches, base, _sample_sets(batches, None, rng), skills, seat, beta,
                                            luck, rng), k, skills, seat, scale)
    field = variance.sum() / information.sum()
    for bot in bots:
        replayed = _replay(batches, base, _sample_sets(batches, int(bot), rng), skills, seat, beta, luck, rng)
        variance, information = _ratios(replayed, k, skills, seat, scale)
        expected[bot] = variance[bot] / information[bot] / field
    return expected


def expectation(batches: Sequence[TableBatch] | None, swaps: Swaps | None, sizes: dict[int, int], k: int,
                beta: float) -> Expect | None:
    """The consistency check's expected dispersions (:func:`expected_dispersion` on ``batches``),
    where the deal's share of the noise can be read: from the swapped games ``swaps``, within the
    swaps' reading's limit; past it, or without them, None (every bot is held to the field's).
    ``sizes``: each table size's first seat effect."""
    if batches is None or swaps is None or swaps.pa.size > SWAP_MAX_ENTRIES or not swaps.pa.size:
        return None
    games = batches

    def expect(bots: np.ndarray, skills: np.ndarray, seat: np.ndarray) -> np.ndarray:
        common = np.zeros(k)
        luck = luck_share(swaps, margins(swaps, skills, seat, common, math.sqrt(2.0) * beta), common)
        return expected_dispersion(games, sizes, k, bots, skills, seat, beta, luck)

    return expect
