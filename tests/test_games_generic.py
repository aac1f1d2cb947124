"""The generic test every registered game must pass: the game kit (harness.games.testing) over
random playouts, the API contract and observations that leak nothing; and the kit itself finds
what it is for (a leaking observation, a snapshot that forgets, a sampler that proves nothing)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from harness.games import GAMES, IllegalAction, InvalidOptions, UnknownGame, get_game
from harness.games.base import State
from harness.games.testing import check_game, check_observations

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toygame import ToyGame  # noqa: E402

GAME_SIZES = [(name, n) for name in GAMES for n in range(GAMES[name].min_players, GAMES[name].max_players + 1)]
PLAYOUTS = 150


@pytest.mark.parametrize("name,players", GAME_SIZES)
def test_every_game_passes_the_kits_contract_checks(name, players):
    """Random playouts end with a valid result; the same seed and actions give the same game; a
    snapshot mid-game continues identically (harness.games.testing.check_game)."""
    check_game(get_game(name), players, playouts=PLAYOUTS)


@pytest.mark.parametrize("name", list(GAMES))
def test_observations_and_legal_actions_leak_nothing_a_seat_cannot_see(name):
    """At random positions, every seat's hidden information re-dealt by the game's sampler
    leaves its observation and legal actions unchanged (harness.games.testing.check_observations)."""
    assert check_observations(get_game(name), positions=40) > 0


class _Peek:
    """A state whose observation also shows the next seat's: the leak the check must find."""

    def __init__(self, inner: State, players: int) -> None:
        self.inner, self.players = inner, players

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def observation(self, seat):
        return {**self.inner.observation(seat), "peek": self.inner.observation((seat + 1) % self.players)}


@pytest.mark.parametrize("name", ["crisps", "dominoes", "epizodiak", "toy"])
def test_the_observation_check_finds_a_leak(name):
    game = ToyGame() if name == "toy" else get_game(name)
    players = game.min_players
    sampler = game.sampler()

    class Leaky(type(game)):  # type: ignore[misc]
        def new_state(self, n, seed, options=None):
            return _Peek(super().new_state(n, seed, options), n)

    def leaky_sampler(options, observation, events, rng):
        clean = {k: v for k, v in observation.items() if k != "peek"}
        return _Peek(sampler(options, clean, events, rng), players)

    with pytest.raises(AssertionError, match="field\\(s\\) peek"):
        check_observations(Leaky(), leaky_sampler, players=players, positions=10)


def test_the_observation_check_refuses_a_sampler_that_deals_only_the_truth():
    game = ToyGame()

    def truth(options, observation, events, rng):
        return current[0]

    current: list[State] = []
    original = game.new_state

    def remember(n, seed, options=None):
        current[:] = [original(n, seed, options)]
        return current[0]

    game.new_state = remember  # type: ignore[method-assign]
    with pytest.raises(AssertionError, match="never dealt anything but the true state"):
        check_observations(game, truth, players=2, positions=5)


def test_the_contract_check_finds_a_snapshot_that_forgets_the_events():
    class Forgetful(ToyGame):
        def state_from_json(self, data):
            state = super().state_from_json(data)
            state.events = state.events[:1]
            return state

    with pytest.raises(AssertionError, match="does not restore the state and its events"):
        check_game(Forgetful(), players=2, playouts=3)


def test_the_toy_plugin_game_passes_the_kit():
    check_game(ToyGame(), playouts=20)
    assert check_observations(ToyGame(), positions=20) > 0


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
