"""Schedule pins: deal seeds independent of config order, round numbers as documented, and a
game re-planned at the boundary of the rated prefix (it must count, in schedule order)."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

from harness.league.config import BotEntry, LeagueConfig, RatingParams
from harness.league.ratings import PrefixRater, advance, current_ratings, replay_all
from harness.league.schedule_roundrobin import build_schedule, deal_seed
from harness.league.store import GameOutcome, LeagueStore


def make_config(names: list[str], players: tuple[int, ...] = (2, 3), rounds: int = 2, store: str = "unused"
                ) -> LeagueConfig:
    bots = tuple(BotEntry(name=n, command=("true",), cwd="/", version="v1") for n in names)
    return LeagueConfig(path="x.yaml", name="pins", game="dominoes", options={}, table_sizes=players, bots=bots,
                        rounds=rounds, seed=7, store=store)


def test_a_deals_seed_does_not_depend_on_the_order_bots_are_listed():
    names = ["ann", "bob", "cyd", "dee"]
    reference = {(g.round, frozenset(g.labels), g.labels): (g.seed, g.game_id)
                 for g in build_schedule(make_config(names))}
    for order in itertools.permutations(names):
        games = build_schedule(make_config(list(order)))
        assert {(g.round, frozenset(g.labels), g.labels): (g.seed, g.game_id) for g in games} == reference


def test_deal_seed_is_order_free_but_depends_on_round_names_league_and_seed():
    base = deal_seed("pins", 7, 0, ["ann", "bob"])
    assert deal_seed("pins", 7, 0, ["bob", "ann"]) == base
    assert len({base, deal_seed("pins", 7, 1, ["ann", "bob"]), deal_seed("pins", 8, 0, ["ann", "bob"]),
                deal_seed("pinz", 7, 0, ["ann", "bob"]), deal_seed("pins", 7, 0, ["ann", "bo"])}) == 5
    assert 0 <= base < 2**53


def test_rounds_are_numbered_from_zero_in_schedule_order_and_in_the_store(tmp_path: Path):
    """docs/leagues.md: round numbers are 0 .. rounds-1, stored as such in ``games.round``."""
    cfg = make_config(["ann", "bob", "cyd"], players=(2,), rounds=3, store=str(tmp_path / "s.sqlite"))
    games = build_schedule(cfg)
    per_round = 6
    assert [g.round for g in games] == [r for r in range(3) for _ in range(per_round)]
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        store.plan(games, store.register_versions(cfg.bots))
        rows = store.db.execute("SELECT seq, round FROM games ORDER BY seq").fetchall()
        assert [tuple(r) for r in rows] == [(i + 1, g.round) for i, g in enumerate(games)]
        assert [p.round for p in store.pending_games()] == [g.round for g in games]


def outcome(game_id: str, ranking: list[int]) -> GameOutcome:
    return GameOutcome(game_id=game_id, ranking=ranking, scores=[0] * len(ranking), ended_by="rules")


def flat(ratings: dict[int, tuple[float, float]]) -> list[float]:
    return [x for v in sorted(ratings) for x in (v, *ratings[v])]


def rated_in_order(store: LeagueStore, params: RatingParams) -> dict[int, tuple[float, float]]:
    """Ratings replayed from scratch over the finished games in seq order (the reference)."""
    rows = store.finished_after(0)
    return replay_all([seats for _, status, seats in rows if status == "done"], params)


@pytest.mark.parametrize("dropped_index,boundary", [(2, True), (3, False)])
def test_a_game_re_planned_at_the_rated_prefix_boundary_counts_in_schedule_order(tmp_path, dropped_index, boundary):
    """Schedule g1..g6. Drop one game, play around it, rate; then schedule it again and play it.

    dropped_index 2 (g3): games 1 and 2 done, g3 dropped, g4 pending: the rated prefix ends
    exactly at g3, the re-planned game. dropped_index 3 (g4) with g3 still pending: the prefix
    ends at g2, just before. Either way the final ratings equal a replay in seq order, both from
    the stored prefix (``advance``) and from a runner's PrefixRater.
    """
    cfg = make_config(["ann", "bob", "cyd"], players=(2,), rounds=1, store=str(tmp_path / "s.sqlite"))
    params = RatingParams(tau=0.0)
    games = build_schedule(cfg)
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        ids = store.register_versions(cfg.bots)
        store.plan(games, ids)
        for seq in (1, 2):
            assert store.record(seq, outcome(games[seq - 1].game_id, [0, 1]))
        without = [g for i, g in enumerate(games) if i != dropped_index]
        assert store.plan(without, ids).dropped == 1
        advance(store, params)
        upto = int(store.get_meta("rated_upto") or 0)
        assert upto == (3 if boundary else 2)
        assert store.plan(games, ids).reactivated == 1
        assert dropped_index + 1 in {p.seq for p in store.pending_games()}  # the same row, pending again
        assert store.counts() == {"pending": 4, "done": 2, "dropped": 0}
        # play every game left, the re-planned one last, each result favouring the second seat
        rater = PrefixRater(store, params)
        order = [p for p in store.pending_games() if p.seq != dropped_index + 1] + \
                [p for p in store.pending_games() if p.seq == dropped_index + 1]
        for p in order:
            with store.transaction():
                assert store.record(p.seq, outcome(p.game_id, [1, 0]))
                rater.recorded(p.seq, [(v, r) for v, r in zip(p.version_ids, [1, 0])])
        want = rated_in_order(store, params)
        assert len(want) == 3
        assert flat(store.load_ratings()) == pytest.approx(flat(want))
        ratings, _, tail = current_ratings(store, params)
        assert tail == 0 and flat(ratings) == pytest.approx(flat(want))


def test_a_new_bot_keeps_the_old_deals_seeds(tmp_path):
    old = build_schedule(make_config(["ann", "bob", "cyd"]))
    new = build_schedule(make_config(["dee", "ann", "bob", "cyd"]))
    new_by_key = {(g.round, g.labels): (g.seed, g.game_id) for g in new}
    for g in old:
        assert new_by_key[(g.round, g.labels)] == (g.seed, g.game_id)
    # a new version of a bot: other game ids; fresh deals at its tables (the same deals only
    # where the league asks for them: deals: per_bot)
    bumped = make_config(["ann", "bob", "cyd"])
    bumped = dataclasses.replace(bumped, bots=tuple(dataclasses.replace(b, version="v2") if b.name == "ann" else b
                                                    for b in bumped.bots))
    per_bot = build_schedule(dataclasses.replace(make_config(["ann", "bob", "cyd"]), deals="per_bot"))
    for a, b in zip(old, build_schedule(bumped)):
        has_ann = "ann" in [s.name for s in a.seats]
        assert (a.seed == b.seed) == (not has_ann)
        assert (a.game_id == b.game_id) == (not has_ann)
    for a, c in zip(per_bot, build_schedule(dataclasses.replace(bumped, deals="per_bot"))):
        assert a.seed == c.seed
