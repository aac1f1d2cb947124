"""A test kit for game engines, built-in or plug-in: call it from your own tests (pytest or not).

    from harness.games.testing import check_game, check_observations

    def test_my_game():
        check_game(MyGame())                       # the API contract, over random playouts
        check_observations(MyGame(), my_sampler)   # observations leak nothing hidden

:func:`check_game` plays random games at every table size and checks what the harness relies on:
plain-JSON actions and observations, no duplicate legal actions, text forms that parse back,
a valid result, the same game from the same seed and actions, a snapshot that continues
identically, refused actions that change nothing, and the turn cap.

:func:`check_observations` is the property that a bot learns nothing its seat may not know:
at many random positions, for every seat, everything that seat cannot see is re-dealt at random
consistently with what it has seen (the ``sampler``: ``(options, observation, events, rng) ->
state``, :data:`harness.games.base.Sampler`, the same function a search bot determinizes with),
and the observation and (for the seat to move) the legal actions the referee would send
that seat must be identical in the re-dealt state. (The public events go to every seat alike;
what they say is the engine's to keep public.) A field of the
observation that depends on something hidden differs in some re-deal and fails the check,
naming the game, the seat, the position and the field. A sampler that never deals anything
other than the true state proves nothing, and fails too.

Each check raises :class:`AssertionError` with a message naming the game, the table size and
the seed, so the failing game can be replayed. Seeded (``seed``), so a run is reproducible.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from harness.games.base import Action, EndedBy, Game, IllegalAction, Sampler, State

__all__ = ["check_game", "check_observations", "random_playout"]


def _fail(game: Game, players: int, seed: int, what: str) -> AssertionError:
    return AssertionError(f"{game.name}, {players} players, seed {seed}: {what}")


def _plain(value: Any) -> bool:
    return bool(json.loads(json.dumps(value)) == value)


def random_playout(game: Game, players: int, seed: int, options: Mapping[str, Any] | None = None,
                   check: bool = False, max_actions: int = 200_000) -> tuple[list[Action], State]:
    """Play a game of uniformly random legal actions from ``seed``; its actions and final state.
    ``check``: check every position on the way (legal actions, their text forms, observations)."""
    state = game.new_state(players, seed, options or {})
    chooser = random.Random(seed * 7919 + 1)
    actions: list[Action] = []
    while not state.is_terminal():
        seat = state.current_player
        legal = state.legal_actions()
        if not legal:
            raise _fail(game, players, seed, f"a position that is not over offers no action (move {len(actions)})")
        if check:
            _check_position(game, players, seed, state, seat, legal)
        action = chooser.choice(legal)
        state.apply(action)
        actions.append(action)
        if len(actions) >= max_actions:
            raise _fail(game, players, seed, f"the game does not end within {max_actions} actions")
    return actions, state


def _check_position(game: Game, players: int, seed: int, state: State, seat: int | None, legal: list[Action]) -> None:
    if seat is None or not 0 <= seat < players:
        raise _fail(game, players, seed, f"the seat to move is {seat!r}")
    if not _plain(legal):
        raise _fail(game, players, seed, "legal actions are not plain JSON")
    keys = [json.dumps(a, sort_keys=True) for a in legal]
    if len(set(keys)) != len(keys):
        raise _fail(game, players, seed, "duplicate legal actions")
    for a in legal:
        text = game.format_action(a)
        if game.parse_action(text) != a:
            raise _fail(game, players, seed, f"the text form {text!r} of {a!r} does not parse back")
    for s in range(players):
        if not _plain(state.observation(s)):
            raise _fail(game, players, seed, f"seat {s}'s observation is not plain JSON")


def _check_result(game: Game, players: int, seed: int, state: State) -> None:
    if state.current_player is not None or state.legal_actions() != []:
        raise _fail(game, players, seed, "a finished game still has a seat to move or legal actions")
    result = state.result()
    ranking = result.get("ranking")
    if not _plain(result) or not isinstance(ranking, list) or len(ranking) != players \
            or len(result.get("scores", ())) != players:
        raise _fail(game, players, seed, f"the result is not plain JSON with a rank and a score per seat: {result!r}")
    if min(ranking) != 0 or result.get("ended_by") not in tuple(EndedBy):
        raise _fail(game, players, seed, f"the best rank is not 0, or ended_by is not rules/turn_cap: {result!r}")
    if any(sum(1 for o in ranking if o < r) != r for r in ranking):  # competition ranking
        raise _fail(game, players, seed, f"not a competition ranking (rank r: exactly r seats ahead): {ranking}")


def check_game(game: Game, players: int | None = None, playouts: int = 150, seed: int = 0,
               options: Mapping[str, Any] | None = None) -> None:
    """Check ``game``'s API contract at ``players`` seats (default: every size it allows), over
    ``playouts`` random games from seeds ``seed``, ``seed + 1``, ... (see the module docstring)."""
    sizes = [players] if players is not None else list(range(game.min_players, game.max_players + 1))
    for n in sizes:
        for k in range(playouts):
            s = seed + k
            actions, final = random_playout(game, n, s, options, check=k < 10)
            _check_result(game, n, s, final)
            if k >= 20:
                continue
            replay = game.new_state(n, s, options or {})
            for a in actions:
                replay.apply(a)
            if replay.to_json() != final.to_json() or replay.events != final.events:
                raise _fail(game, n, s, "the same seed and actions gave another game")
            _check_snapshot(game, n, s, actions, final, options)
        _check_refusals(game, n, seed, options)


def _check_snapshot(game: Game, players: int, seed: int, actions: list[Action], final: State,
                    options: Mapping[str, Any] | None) -> None:
    state = game.new_state(players, seed, options or {})
    cut = len(actions) // 2
    for a in actions[:cut]:
        state.apply(a)
    restored = game.state_from_json(json.loads(json.dumps(state.to_json())))
    if restored.to_json() != state.to_json() or restored.events != state.events:
        raise _fail(game, players, seed, f"a snapshot at move {cut} does not restore the state and its events")
    if any(restored.observation(s) != state.observation(s) for s in range(players)) \
            or restored.legal_actions() != state.legal_actions():
        raise _fail(game, players, seed, f"a snapshot at move {cut} changes an observation or the legal actions")
    for a in actions[cut:]:
        restored.apply(a)
    if restored.to_json() != final.to_json() or restored.result() != final.result():
        raise _fail(game, players, seed, f"a game restored from a snapshot at move {cut} did not continue identically")


def _check_refusals(game: Game, players: int, seed: int, options: Mapping[str, Any] | None) -> None:
    state = game.new_state(players, seed, options or {})
    before = state.to_json()
    for bad in ({"type": "no-such-action"}, {}, "pass", None, {"type": 7}):
        try:
            state.apply(bad)  # type: ignore[arg-type]
        except IllegalAction:
            continue
        raise _fail(game, players, seed, f"the action {bad!r}, never offered, was accepted")
    if state.to_json() != before:
        raise _fail(game, players, seed, "a refused action changed the state")
    if "max_turns" in game.default_options():
        capped = game.new_state(players, seed, {**(options or {}), "max_turns": 10})
        chooser = random.Random(seed)
        for _ in range(10_000):
            if capped.is_terminal():
                break
            capped.apply(chooser.choice(capped.legal_actions()))
        if not capped.is_terminal() or capped.result()["ended_by"] not in tuple(EndedBy):
            raise _fail(game, players, seed, "max_turns 10 did not end the game")


def check_observations(game: Game, sampler: Sampler | None = None, players: int | None = None,
                       positions: int = 60, samples: int = 2, seed: int = 0,
                       options: Mapping[str, Any] | None = None) -> int:
    """Check that what the referee sends a seat depends only on what that seat may know.

    At ``positions`` random positions per table size (``players``, default every size), for
    every seat, ``samples`` re-deals by ``sampler`` (default: the game's own, :meth:`Game.sampler`)
    must give that seat the same observation and, if it is to move, the same legal actions and
    seat to move. Returns how many re-deals differed from the true state
    (raises if none did: the sampler proved nothing).
    """
    sampler = sampler or game.sampler()
    if sampler is None:
        raise AssertionError(f"{game.name} has no sampler: pass one (options, observation, events, rng) -> state")
    opts = game.validate_options(options)
    sizes = [players] if players is not None else list(range(game.min_players, game.max_players + 1))
    rng = random.Random(seed)
    redealt = 0
    for n in sizes:
        for k in range(positions):
            s = seed + k
            actions, _ = random_playout(game, n, s, opts)
            state = game.new_state(n, s, opts)
            for a in actions[: rng.randrange(len(actions) + 1)]:
                state.apply(a)
            redealt += _check_position_hides(game, sampler, opts, state, n, s, samples, rng)
    if redealt == 0:
        raise AssertionError(f"{game.name}: the sampler never dealt anything but the true state, so it cannot show "
                             f"that an observation hides anything (does it re-deal the hidden cards?)")
    return redealt


def _check_position_hides(game: Game, sampler: Sampler, opts: dict[str, Any], state: State, players: int,
                          seed: int, samples: int, rng: random.Random) -> int:
    redealt = 0
    truth = state.to_json()
    where = f"after {len(state.events)} events"
    for seat in range(players):
        seen = state.observation(seat)
        for _ in range(samples):
            other = sampler(opts, seen, list(state.events), rng)
            redealt += other.to_json() != truth
            mine = other.observation(seat)
            if mine != seen:
                fields = sorted(k for k in set(seen) | set(mine) if seen.get(k) != mine.get(k))
                raise _fail(game, players, seed, f"seat {seat}'s observation ({where}) changes when what it cannot "
                                                 f"see is re-dealt: field(s) {', '.join(map(str, fields))}")
            if state.current_player == seat and (other.current_player != seat
                                                 or other.legal_actions() != state.legal_actions()):
                raise _fail(game, players, seed, f"seat {seat}'s legal actions ({where}) change when what it cannot "
                                                 f"see is re-dealt")
    return redealt
