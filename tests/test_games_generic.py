"""The generic test every registered game must pass: random playouts checking the API contract."""

from __future__ import annotations

import json
import random

import pytest

from harness.games import GAMES, IllegalAction, InvalidOptions, UnknownGame, get_game

GAME_SIZES = [(name, n) for name in GAMES for n in range(GAMES[name].min_players, GAMES[name].max_players + 1)]
PLAYOUTS = 150


def _json_roundtrip(value):
    return json.loads(json.dumps(value))


def _playout(game, players, seed, check=False):
    """Play a random game; return the list of actions and the final state."""
    state = game.new_state(players, seed, {})
    chooser = random.Random(seed * 7919 + 1)
    actions = []
    while not state.is_terminal():
        seat = state.current_player
        legal = state.legal_actions()
        assert legal, "a non-terminal state offers no action"
        if check:
            assert 0 <= seat < players
            assert _json_roundtrip(legal) == legal, "legal actions are not plain JSON"
            keys = [json.dumps(a, sort_keys=True) for a in legal]
            assert len(set(keys)) == len(keys), "duplicate legal actions"
            for a in legal:
                text = game.format_action(a)
                assert game.parse_action(text) == a, f"text form {text!r} does not parse back"
            for s in range(players):
                obs = state.observation(s)
                assert _json_roundtrip(obs) == obs, "observation is not plain JSON"
        action = chooser.choice(legal)
        state.apply(action)
        actions.append(action)
        assert len(actions) < 200_000, "game does not end"
    return actions, state


@pytest.mark.parametrize("name,players", GAME_SIZES)
def test_random_playouts_end_with_a_valid_result(name, players):
    game = get_game(name)
    for seed in range(PLAYOUTS):
        _, state = _playout(game, players, seed, check=seed < 10)
        assert state.current_player is None
        assert state.legal_actions() == []
        result = state.result()
        assert _json_roundtrip(result) == result
        assert len(result["ranking"]) == players and len(result["scores"]) == players
        assert min(result["ranking"]) == 0
        assert result["ended_by"] in ("rules", "turn_cap")
        # competition ranking: a rank r means exactly r seats did strictly better
        for r in result["ranking"]:
            assert sum(1 for o in result["ranking"] if o < r) == r


@pytest.mark.parametrize("name,players", GAME_SIZES)
def test_same_seed_and_actions_give_the_same_game(name, players):
    game = get_game(name)
    for seed in range(20):
        actions, final = _playout(game, players, seed)
        replay = game.new_state(players, seed, {})
        for a in actions:
            replay.apply(a)
        assert replay.to_json() == final.to_json()
        assert replay.events == final.events


@pytest.mark.parametrize("name,players", GAME_SIZES)
def test_snapshot_round_trip_mid_game_continues_identically(name, players):
    game = get_game(name)
    for seed in range(20):
        actions, final = _playout(game, players, seed)
        state = game.new_state(players, seed, {})
        cut = len(actions) // 2
        for a in actions[:cut]:
            state.apply(a)
        snap = _json_roundtrip(state.to_json())
        restored = game.state_from_json(snap)
        assert restored.to_json() == state.to_json()
        assert restored.events == state.events, "the public event log is part of the snapshot"
        for s in range(players):
            assert restored.observation(s) == state.observation(s)
        assert restored.legal_actions() == state.legal_actions()
        for a in actions[cut:]:
            restored.apply(a)
        assert restored.to_json() == final.to_json()
        # the RNG is part of the snapshot: a fresh game from the snapshot draws the same future
        assert restored.result() == final.result()


@pytest.mark.parametrize("name,players", GAME_SIZES)
def test_actions_not_offered_are_rejected(name, players):
    game = get_game(name)
    state = game.new_state(players, 3, {})
    before = state.to_json()
    for bad in ({"type": "no-such-action"}, {}, "pass", None, {"type": 7}):
        with pytest.raises(IllegalAction):
            state.apply(bad)  # type: ignore[arg-type]
    assert state.to_json() == before, "a rejected action changed the state"


@pytest.mark.parametrize("name", list(GAMES))
def test_bad_options_and_player_counts_are_refused_by_name(name):
    game = get_game(name)
    with pytest.raises(InvalidOptions, match="no_such_option"):
        game.new_state(game.min_players, 1, {"no_such_option": 1})
    with pytest.raises(InvalidOptions, match="max_turns"):
        game.new_state(game.min_players, 1, {"max_turns": "lots"})
    with pytest.raises(InvalidOptions):
        game.new_state(game.max_players + 1, 1, {})
    assert game.validate_options({}) == game.default_options()


def test_unknown_game_lists_the_known_ones():
    with pytest.raises(UnknownGame, match="epizodiak"):
        get_game("chess")


@pytest.mark.parametrize("name,players", GAME_SIZES)
def test_turn_cap_cuts_the_game_off(name, players):
    game = get_game(name)
    state = game.new_state(players, 5, {"max_turns": 10})
    chooser = random.Random(5)
    n = 0
    while not state.is_terminal():
        state.apply(chooser.choice(state.legal_actions()))
        n += 1
        assert n <= 10_000
    result = state.result()
    assert result["ended_by"] == "turn_cap"
    assert min(result["ranking"]) == 0
