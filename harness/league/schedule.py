"""The league schedule: round robin with every seat order on the same deal, repeated for rounds.

For each round, each table size, and each combination of bots of that size (in config order),
every permutation of the combination is a game, and all of them share one seed: a duplicate
deal, so the luck of the deal cancels out. Seeds and game ids are hashes of the league and the
table, so the schedule is the same every time it is computed, and its order (round, table size,
combination, seat order) is the canonical order ratings are applied in.

The seed depends on the bot *names* only, so a new version of a bot replays the same deals as
its previous version; the game id depends on the versions too, so it is a different game.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from harness.league.config import BotEntry, LeagueConfig

__all__ = ["ScheduledGame", "build_schedule", "games_per_round", "deal_seed", "game_id"]

SEED_LIMIT = 2**53  # seeds stay exact in every JSON reader


@dataclass(frozen=True)
class ScheduledGame:
    """One game of the schedule: its id, seed, round, and the bots in seat order."""

    game_id: str
    seed: int
    round: int
    seats: tuple[BotEntry, ...]

    @property
    def players(self) -> int:
        return len(self.seats)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(b.label for b in self.seats)


def _digest(*parts: object) -> bytes:
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).digest()


def deal_seed(league: str, league_seed: int, round_: int, names: Sequence[str]) -> int:
    """The seed of the deal played by the bots ``names`` (any order) in ``round_``."""
    return int.from_bytes(_digest("deal", league, league_seed, round_, sorted(names))[:8], "big") % SEED_LIMIT


def game_id(league: str, league_seed: int, round_: int, labels: Sequence[str]) -> str:
    """The id of the game with bots ``labels`` (``name@version``) in this seat order in ``round_``."""
    return "g-" + _digest("game", league, league_seed, round_, list(labels)).hex()[:12]


def games_per_round(n_bots: int, sizes: Sequence[int]) -> int:
    """How many games one round has: sum over table sizes k of C(n, k) * k!."""
    total = 0
    for k in sizes:
        perms = 1
        for i in range(k):
            perms *= n_bots - i
        total += perms
    return total


def iter_schedule(config: LeagueConfig, rounds: int | None = None) -> Iterator[ScheduledGame]:
    """The games of ``config`` in canonical order (lazily)."""
    n_rounds = config.rounds if rounds is None else rounds
    for r in range(n_rounds):
        for size in config.players:
            for combo in itertools.combinations(config.bots, size):
                seed = deal_seed(config.name, config.seed, r, [b.name for b in combo])
                for seats in itertools.permutations(combo):
                    gid = game_id(config.name, config.seed, r, [b.label for b in seats])
                    yield ScheduledGame(game_id=gid, seed=seed, round=r, seats=seats)


def build_schedule(config: LeagueConfig, rounds: int | None = None) -> list[ScheduledGame]:
    """Every game of ``config`` in canonical order: round, table size, combination, seat order."""
    return list(iter_schedule(config, rounds))
