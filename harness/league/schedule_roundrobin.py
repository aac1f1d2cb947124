"""The round-robin schedule (pure, no store): every seat order of a table on one deal, repeated for rounds.

For each round, each table size, and each combination of bots of that size (in config order),
every permutation of the combination is a game, and all of them share one seed: a duplicate
deal, so the luck of the deal cancels out. Seeds and game ids are hashes of the league and the
table, so the schedule is the same every time it is computed, and its order (round, table size,
combination, seat order) is the canonical order ratings are applied in.

Fresh deals per version: the seed hashes the *versions* at the table (``name@version``), so no
game deals a deal that an earlier game dealt to another version: a new version is never dealt
a deal whose hands its author has seen in a replay of the earlier version's games. A league may
ask for the old rule, ``deals: per_bot`` (docs/leagues.md): the seed hashes the bot *names*, so a
new version replays the deals of its previous version (a same-deals comparison, for leagues
whose authors see no replays). The seat orders of a deal always share its seed (a duplicate set).

Game ids are opaque: in a store made with keyed ids (``meta.game_ids = keyed``, every store
made now) the id hashes the deal secret too, so a bot cannot recompute it from the league's name,
seed, round and the labels a leaderboard prints (it would learn its round, its opponents and
their seats). Stores made before keep their public ids, so that re-planning them finds their
games (:func:`game_id` with ``key=None``).

Deals are secret: a seed also hashes the league's *deal secret*, 32 random bytes made when its
store is created (:meth:`harness.league.store.LeagueStore.deal_secret`) and kept only there,
where no sandboxed bot can read it. Without it, the seed was a hash of public facts (league,
seed, round, names), and a bot that imports the engine rebuilt every deal: its opponents' hands
and the deck's order. The seed each game used is stored with it, so replays, ``violations
--replay`` and exports reproduce every game without the secret. ``secret=None`` gives the old
public seeds (stores made before the secret existed keep them for the games already played).

Planning scales to millions of games: :func:`schedule_chunks` yields lists of the store's rows
(no object per game) and hashes each id from a per-round prefix, with the same bytes as
:func:`game_id`; the store inserts them in bulk, and a re-run whose :func:`schedule_fingerprint`
matches the stored one skips planning altogether: a 1,000,000-game league plans in a few
seconds, and a re-run of a planned league starts in milliseconds (bench/league.py;
docs/performance.md).
A schedule past :data:`MAX_GAMES` is refused when the config is read.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from harness.league.config import MAX_GAMES, BotEntry, LeagueConfig, games_per_round

__all__ = ["MAX_GAMES", "ScheduledGame", "build_schedule", "deal_members", "deal_seed", "game_id", "games_per_round",
           "planned_chunks", "schedule_chunks", "schedule_fingerprint", "schedule_rows", "StoreRow"]

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


def _deal_head(league: str, league_seed: int, round_: int, secret: str | None) -> list[object]:
    """What a deal's hash starts with: the secret (when there is one) before the public facts."""
    return ["deal", league, league_seed, round_] if secret is None else ["deal", secret, league, league_seed, round_]


def deal_seed(league: str, league_seed: int, round_: int, names: Sequence[str], secret: str | None = None) -> int:
    """The seed of the deal played by the bots ``names`` (any order: their versions, or their
    names under ``deals: per_bot``, as :func:`deal_members` gives them) in ``round_``; ``secret``
    is the league's deal secret (None: the public seed of stores made before secrets existed)."""
    parts = [*_deal_head(league, league_seed, round_, secret), sorted(names)]
    return int.from_bytes(_digest(*parts)[:8], "big") % SEED_LIMIT


def _id_head(league: str, league_seed: int, round_: int, key: str | None) -> list[object]:
    """What a game id's hash starts with: the key (when the store's ids are keyed) before the public facts."""
    return ["game", league, league_seed, round_] if key is None else ["game", key, league, league_seed, round_]


def game_id(league: str, league_seed: int, round_: int, labels: Sequence[str], key: str | None = None) -> str:
    """The id of the game with bots ``labels`` (``name@version``) in this seat order in ``round_``;
    ``key``: the store's deal secret where its ids are keyed (None: the public ids of old stores)."""
    return "g-" + _digest(*_id_head(league, league_seed, round_, key), list(labels)).hex()[:12]


def deal_members(bots: Sequence[BotEntry], per_version: bool) -> list[str]:
    """What a deal's seed hashes of the bots at its table: their versions (``name@version``), or
    with ``deals: per_bot`` their names."""
    return sorted(b.label if per_version else b.name for b in bots)


def iter_schedule(config: LeagueConfig, rounds: int | None = None, secret: str | None = None,
                  id_key: str | None = None) -> Iterator[ScheduledGame]:
    """The games of ``config`` in canonical order (lazily), as objects: :func:`schedule_chunks`'s rows
    with each seat's bot (the one schedule builder; tests pin it against :func:`deal_seed` and
    :func:`game_id`)."""
    index = {b.label: i for i, b in enumerate(config.bots)}
    for chunk in schedule_chunks(config, index, rounds=None if rounds is None else range(rounds), secret=secret,
                                 id_key=id_key):
        for gid, round_, _players, seed, versions in chunk:
            yield ScheduledGame(game_id=gid, seed=seed, round=round_,
                                seats=tuple(config.bots[i] for i in json.loads(versions)))


#: One stored game as :meth:`harness.league.store.LeagueStore.plan_rows` takes it, in the games
#: table's column order: (game_id, round, players, seed, version ids by seat as a JSON list).
StoreRow = tuple[str, int, int, int, str]


def schedule_chunks(config: LeagueConfig, version_ids: dict[str, int], size: int = 50_000,
                    rounds: range | None = None, secret: str | None = None, id_key: str | None = None
                    ) -> Iterator[list[StoreRow]]:
    """The games of ``config`` in canonical order as lists of about ``size`` store rows: the same
    games as :func:`iter_schedule`, without an object per game. Each seed and id hashes exactly
    the JSON bytes :func:`deal_seed` and :func:`game_id` hash, assembled from a prefix per round
    and a suffix per table and seat order computed once; a round's rows are one list
    comprehension (per row: one hash, one tuple), which is what lets a 1,000,000-game league
    plan in a few seconds (bench/league.py part 4). ``rounds``: only these rounds; ``secret``: the
    deal secret; ``id_key``: the key of the store's game ids (None: public ids)."""
    dumps = json.dumps
    sha = hashlib.sha256
    deals = []  # per combination: its deal's JSON suffix
    orders = []  # per seat order: (index of its deal, id suffix, players, versions as JSON)
    for players in config.table_sizes:
        for combo in itertools.combinations(config.bots, players):
            members = deal_members(combo, config.deals_per_version)
            deals.append((dumps(members, separators=(",", ":")) + "]").encode())
            for seats in itertools.permutations(combo):
                orders.append((len(deals) - 1, (",".join(dumps(b.label) for b in seats) + "]]").encode(), players,
                               dumps([version_ids[b.label] for b in seats], separators=(",", ":"))))
    chunk: list[StoreRow] = []
    for r in range(config.rounds) if rounds is None else rounds:
        deal_prefix = (dumps(_deal_head(config.name, config.seed, r, secret), separators=(",", ":"))[:-1]
                       + ",").encode()
        id_prefix = (dumps(_id_head(config.name, config.seed, r, id_key), separators=(",", ":"))[:-1] + ",[").encode()
        seeds = [int.from_bytes(sha(deal_prefix + d).digest()[:8], "big") % SEED_LIMIT for d in deals]
        chunk += [("g-" + sha(id_prefix + suffix).hexdigest()[:12], r, players, seeds[deal], versions)
                  for deal, suffix, players, versions in orders]
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


#: From this many games on, :func:`planned_chunks` hashes them in a helper process.
PARALLEL_FROM = 200_000
#: Games per chunk handed over by the helper process.
_CHUNK_GAMES = 50_000


def _rounds_rows(config: LeagueConfig, version_ids: dict[str, int], start: int, stop: int,
                 secret: str | None = None, id_key: str | None = None) -> list[StoreRow]:
    """The store rows of rounds ``start`` to ``stop`` (in the helper process of :func:`planned_chunks`)."""
    return [row for chunk in schedule_chunks(config, version_ids, rounds=range(start, stop), secret=secret,
                                             id_key=id_key) for row in chunk]


def planned_chunks(config: LeagueConfig, version_ids: dict[str, int], secret: str | None = None,
                   id_key: str | None = None) -> Iterator[list[StoreRow]]:
    """:func:`schedule_chunks`, hashed ahead of the caller by a helper process for a big league.

    Hashing the ids and seeds is half of planning a new league, inserting the rows and building
    the indexes the other half: with the hashing on the other core the two overlap (a
    1,000,000-game league: bench/league.py part 4). Three chunks at most are in flight, so
    memory stays bounded whichever side is faster; the first chunk is hashed here while the
    helper starts. A league under :data:`PARALLEL_FROM` games is hashed in this process.
    """
    per_round = games_per_round(len(config.bots), config.table_sizes)
    if per_round * config.rounds < PARALLEL_FROM or len(os.sched_getaffinity(0)) < 2:
        yield from schedule_chunks(config, version_ids, secret=secret, id_key=id_key)
        return
    step = max(1, _CHUNK_GAMES // max(per_round, 1))
    spans = [(r, min(r + step, config.rounds)) for r in range(0, config.rounds, step)]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        ahead: deque[Future[list[StoreRow]]] = deque(
            pool.submit(_rounds_rows, config, version_ids, *span, secret, id_key) for span in spans[1:4])
        yield _rounds_rows(config, version_ids, *spans[0], secret, id_key)
        for i in range(1, len(spans)):
            try:
                rows = ahead.popleft().result()
                if i + 3 < len(spans):
                    ahead.append(pool.submit(_rounds_rows, config, version_ids, *spans[i + 3], secret, id_key))
            except (BrokenProcessPool, OSError):  # no helper process here: hash the rest in this one
                yield _rounds_rows(config, version_ids, spans[i][0], config.rounds, secret, id_key)
                return
            yield rows


def schedule_rows(config: LeagueConfig, version_ids: dict[str, int], secret: str | None = None,
                  id_key: str | None = None) -> Iterator[tuple[str, int, int, int, tuple[int, ...]]]:
    """The games of ``config`` in canonical order as ``(game_id, seed, round, players, version ids
    by seat)`` tuples (from :func:`schedule_chunks`)."""
    for chunk in schedule_chunks(config, version_ids, secret=secret, id_key=id_key):
        for gid, round_, players, seed, versions in chunk:
            yield gid, seed, round_, players, tuple(json.loads(versions))


def schedule_fingerprint(config: LeagueConfig) -> str:
    """A hash of everything that decides the schedule and its order: when the store holds a plan
    with this fingerprint, planning again would change nothing."""
    return _digest("plan", config.name, config.seed, config.rounds, list(config.table_sizes),
                   [b.label for b in config.bots], config.deals).hex()


def build_schedule(config: LeagueConfig, rounds: int | None = None, secret: str | None = None,
                   id_key: str | None = None) -> list[ScheduledGame]:
    """Every game of ``config`` in canonical order: round, table size, combination, seat order."""
    return list(iter_schedule(config, rounds, secret, id_key))
