"""The schedule: every combination, every seat order on one deal, fresh deals per round, stable ids."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter

import pytest

from harness.league.config import BotEntry, LeagueConfig
from harness.league.schedule_roundrobin import build_schedule, games_per_round


def make_config(n_bots: int = 4, players: tuple[int, ...] = (2, 3, 4), rounds: int = 3, seed: int = 0,
                name: str = "s") -> LeagueConfig:
    bots = tuple(BotEntry(name=f"b{i}", command=("true",), cwd="/", version=f"v{i}") for i in range(n_bots))
    return LeagueConfig(path="x.yaml", name=name, game="dominoes", options={}, table_sizes=players, bots=bots,
                        rounds=rounds, seed=seed, store="unused")


def test_counts_match_combinations_times_seat_orders() -> None:
    cfg = make_config()
    games = build_schedule(cfg)
    per_round = 6 * 2 + 4 * 6 + 1 * 24  # C(4,2)*2! + C(4,3)*3! + C(4,4)*4!
    assert games_per_round(4, (2, 3, 4)) == per_round
    assert len(games) == 3 * per_round
    assert len({g.game_id for g in games}) == len(games)  # ids are unique
    # every bot sits in every seat equally often at each table size
    for size in (2, 3, 4):
        seats = Counter((g.seats[s].name, s) for g in games if g.players == size for s in range(size))
        assert len(set(seats.values())) == 1


def test_every_seat_order_of_a_combination_shares_the_deal_and_rounds_get_fresh_deals() -> None:
    games = build_schedule(make_config())
    by_combo: dict[tuple, set[int]] = {}
    for g in games:
        by_combo.setdefault((g.round, frozenset(b.name for b in g.seats)), set()).add(g.seed)
    assert all(len(seeds) == 1 for seeds in by_combo.values())  # duplicate deals
    orders = Counter((g.round, frozenset(b.name for b in g.seats)) for g in games)
    for (_r, combo), n in orders.items():
        assert n == len(list(itertools.permutations(combo)))
    seeds_by_round = [{g.seed for g in games if g.round == r} for r in range(3)]
    assert not (seeds_by_round[0] & seeds_by_round[1]) and not (seeds_by_round[1] & seeds_by_round[2])


def test_schedule_is_deterministic_and_depends_on_the_league() -> None:
    a = build_schedule(make_config())
    assert [(g.game_id, g.seed, g.labels) for g in a] == [(g.game_id, g.seed, g.labels)
                                                          for g in build_schedule(make_config())]
    other_seed = build_schedule(make_config(seed=1))
    assert {g.game_id for g in a}.isdisjoint(g.game_id for g in other_seed)
    other_name = build_schedule(make_config(name="t"))
    assert {g.seed for g in a}.isdisjoint(g.seed for g in other_name)


def test_canonical_order_is_round_then_size_then_combination_then_seat_order() -> None:
    games = build_schedule(make_config(rounds=2))
    keys = [(g.round, g.players) for g in games]
    assert keys == sorted(keys)
    first = games[:2]
    assert [g.labels for g in first] == [("b0@v0", "b1@v1"), ("b1@v1", "b0@v0")]


def test_more_rounds_extend_the_schedule_without_changing_earlier_games() -> None:
    two = build_schedule(make_config(rounds=2))
    three = build_schedule(make_config(rounds=3))
    assert [g.game_id for g in three[:len(two)]] == [g.game_id for g in two]


@pytest.mark.parametrize("deals", ["per_version", "per_bot"])
def test_a_new_version_gets_fresh_deals_unless_the_league_asks_for_the_same(deals: str) -> None:
    cfg = dataclasses.replace(make_config(players=(2,)), deals=deals)
    bots = list(cfg.bots)
    bots[0] = dataclasses.replace(bots[0], version="new")
    changed = dataclasses.replace(cfg, bots=tuple(bots))
    old, new = build_schedule(cfg), build_schedule(changed)
    for a, b in zip(old, new):
        touches = any(s.name == "b0" for s in a.seats)
        assert (a.game_id != b.game_id) == touches
        # per version, the new version's every deal is fresh; per bot, it replays the old one's
        assert (a.seed != b.seed) == (touches and deals == "per_version")


def test_adding_a_bot_keeps_every_existing_game() -> None:
    cfg = make_config(n_bots=3, players=(2, 3))
    more = dataclasses.replace(cfg, bots=cfg.bots + (BotEntry("b9", ("true",), "/", "v9"),))
    old = {g.game_id: g.seed for g in build_schedule(cfg)}
    new = {g.game_id: g.seed for g in build_schedule(more)}
    assert all(new[k] == v for k, v in old.items())
    added = [g for g in build_schedule(more) if g.game_id not in old]
    assert added and all(any(s.name == "b9" for s in g.seats) for g in added)
