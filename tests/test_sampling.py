"""resample_from_infostate: property tests over many random games, and scenarios."""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.games import get_game
from harness.games.crisps.sampling import known_other_cards
from harness.games.dominoes.sampling import hand_slots
from harness.games.epizodiak.sampling import known_other_tiles

SAMPLED = [("crisps", 2), ("dominoes", 2), ("dominoes", 3), ("dominoes", 4), ("epizodiak", 3)]


def random_positions(game_name, players, games, rng):
    """(state, seat) at every decision of ``games`` random games."""
    game = get_game(game_name)
    for seed in range(games):
        state = game.new_state(players, seed)
        while not state.is_terminal():
            yield state, state.current_player
            state.apply(rng.choice(state.legal_actions()))


@pytest.mark.parametrize("game_name,players", SAMPLED)
def test_sample_has_the_same_observation_and_legal_actions(game_name, players):
    game = get_game(game_name)
    rng = random.Random(7)
    checked = 0
    for state, seat in random_positions(game_name, players, 6, random.Random(players)):
        obs = state.observation(seat)
        for _ in range(2):
            sample = game.resample_from_infostate(obs, state.events, rng, state.options)
            assert sample.observation(seat) == obs
            assert sample.legal_actions() == state.legal_actions()
            # every seat's observation that is public must agree too (sizes, scores)
            other = (seat + 1) % players
            assert sample.observation(other)["hand_sizes"] == state.observation(other)["hand_sizes"]
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("game_name,players", SAMPLED)
def test_samples_play_on_to_the_end(game_name, players):
    game = get_game(game_name)
    rng = random.Random(3)
    for i, (state, seat) in enumerate(random_positions(game_name, players, 3, random.Random(11))):
        if i % 7:
            continue
        sample = game.resample_from_infostate(state.observation(seat), state.events, rng, state.options)
        while not sample.is_terminal():
            sample.apply(rng.choice(sample.legal_actions()))
        assert sorted(sample.result()["ranking"])[0] == 0


def test_crisps_every_hidden_card_lands_in_every_place_it_can():
    game = get_game("crisps")
    state = game.new_state(2, 5)
    seat = state.current_player
    obs = state.observation(seat)
    rng = random.Random(1)
    places: dict[int, set[str]] = {}
    for _ in range(400):
        sample = game.resample_from_infostate(obs, state.events, rng, state.options)
        for r in range(2, 12):
            if sample.hands[1 - seat][r]:
                places.setdefault(r, set()).add("hand")
            if r in sample.removed:
                places.setdefault(r, set()).add("removed")
            if r in sample.deck:
                places.setdefault(r, set()).add("deck")
    mine = state.hands[seat]
    for r in range(2, 12):
        left = 4 - mine[r] - (state.offer == r)
        if left:
            assert places[r] == {"hand", "removed", "deck"}, (r, places.get(r))


def test_crisps_an_offer_taken_by_the_other_seat_stays_in_his_hand():
    game = get_game("crisps")
    rng = random.Random(2)
    found = 0
    for state, seat in random_positions("crisps", 2, 20, random.Random(5)):
        known = known_other_cards(state.events, 1 - seat, False)
        if not any(known):
            continue
        found += 1
        for _ in range(5):
            sample = game.resample_from_infostate(state.observation(seat), state.events, rng, state.options)
            assert all(sample.hands[1 - seat][r] >= known[r] for r in range(12))
        assert all(state.hands[1 - seat][r] >= known[r] for r in range(12))  # sound on the real game
    assert found > 10


def _fits(tiles, slots) -> bool:
    """Can ``tiles`` fill ``slots`` (forbidden sets, nested)? Greedy, most constrained first."""
    left = list(tiles)
    for forbidden in sorted(slots, key=len, reverse=True):
        match = next((t for t in left if t[0] not in forbidden and t[1] not in forbidden), None)
        if match is None:
            return False
        left.remove(match)
    return True


@pytest.mark.parametrize("players", [2, 3, 4])
def test_dominoes_draw_and_pass_constraints_hold_in_truth_and_in_samples(players):
    game = get_game("dominoes")
    rng = random.Random(4)
    constrained = 0
    for state, seat in random_positions("dominoes", players, 8, random.Random(players * 13)):
        slots = hand_slots(state.events, players)
        for p in range(players):
            assert len(slots[p]) == len(state.hands[p])
            assert _fits(state.hands[p], slots[p])  # the real hands obey what the record says
        if not any(f for p in range(players) if p != seat for f in slots[p]):
            continue
        constrained += 1
        sample = game.resample_from_infostate(state.observation(seat), state.events, rng, state.options)
        for p in range(players):
            if p != seat:
                assert _fits(sample.hands[p], slots[p])
    assert constrained > 20


def test_dominoes_a_player_who_passed_gets_no_tile_matching_the_ends():
    game = get_game("dominoes")
    # 4 players (no graveyard): find a position right after the previous seat passed
    rng = random.Random(9)
    for state, seat in random_positions("dominoes", 4, 30, random.Random(3)):
        last = state.events[-1]
        if last["type"] != "pass" or last["seat"] == seat:
            continue
        ends = {state.left, state.right}
        drew = last["seat"]
        slots = hand_slots(state.events, 4)[drew]
        constrained = [f for f in slots if ends <= f]
        assert len(constrained) == len(slots)  # a pass: every tile he holds is constrained
        for _ in range(50):
            sample = game.resample_from_infostate(state.observation(seat), state.events, rng, state.options)
            fitting = [t for t in sample.hands[drew] if t[0] in ends or t[1] in ends]
            assert len(fitting) <= len(slots) - len(constrained)
        return
    pytest.fail("no position right after another seat passed")


def test_dominoes_hidden_tiles_spread_over_every_place():
    game = get_game("dominoes")
    state = game.new_state(3, 21)
    seat = state.current_player
    obs = state.observation(seat)
    rng = random.Random(8)
    places: dict[tuple[int, int], Counter] = {}
    for _ in range(600):
        sample = game.resample_from_infostate(obs, state.events, rng, state.options)
        for p in range(3):
            for t in sample.hands[p]:
                places.setdefault(t, Counter())[f"seat{p}"] += 1
        for t in sample.graveyard:
            places.setdefault(t, Counter())["graveyard"] += 1
    expected = {f"seat{p}" for p in range(3) if p != seat} | {"graveyard"}
    lead = state.lead_tile
    for t, where in places.items():
        if t in state.hands[seat]:
            assert set(where) == {f"seat{seat}"}
        elif t == lead:
            assert set(where) == {f"seat{state.current_player}"}
        else:
            assert set(where) == expected, (t, where)
            # uniform: each place gets its share (7 of 21 hidden tiles each), within wide margins
            for place in expected:
                assert 0.15 < where[place] / 600 < 0.55


def test_epizodiak_tiles_taken_in_the_open_stay_known_and_hidden_tiles_spread():
    game = get_game("epizodiak")
    rng = random.Random(2)
    found = 0
    for state, seat in random_positions("epizodiak", 3, 10, random.Random(5)):
        known = known_other_tiles(state.events, seat)
        for s in range(3):
            assert all(state.hands[s][v] >= known[s][v] for v in range(13))  # sound on the real game
        if not any(any(k) for k in known):
            continue
        found += 1
        sample = game.resample_from_infostate(state.observation(seat), state.events, rng, state.options)
        for s in range(3):
            if s != seat:
                assert all(sample.hands[s][v] >= known[s][v] for v in range(13))
    assert found > 10
    state = game.new_state(3, 4)
    seat = state.current_player
    places: dict[int, set[str]] = {}
    for _ in range(300):
        sample = game.resample_from_infostate(state.observation(seat), state.events, rng, state.options)
        for s in range(3):
            for v in sample.tiles[s]:
                places.setdefault(v, set()).add(f"seat{s}")
        for v in sample.pile:
            places.setdefault(v, set()).add("pile")
    for v in range(1, 13):
        if state.hands[seat][v] + (v in state.dial_tiles()) < 4:
            assert places[v] - {f"seat{seat}"} == {f"seat{s}" for s in range(3) if s != seat} | {"pile"}


def test_a_game_without_a_sampler_says_so():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from toygame import ToyGame

    class NoSamplerGame(ToyGame):
        """The toy game as a plug-in that ships no sampler (the toy game itself has one)."""

        def sampler(self) -> None:
            return None

    game = NoSamplerGame()
    state = game.new_state(2, 1)
    with pytest.raises(NotImplementedError, match="toy"):
        game.resample_from_infostate(state.observation(0), state.events, random.Random(1), {})
