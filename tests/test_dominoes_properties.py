"""Property tests for All-Fives Dominoes over 1,000 seeded random games per table size.

Checked at every decision: the 28 tiles are each in exactly one place, the line joins and its
open ends are what the state says, scores only grow and only by multiples of 5, the offered
actions follow D5 (plays if any tile fits, else one draw, else one pass) and every offered play
fits. Checked at sampled decisions: every offered action is accepted, and observation(i) does
not change when the other hands, the graveyard order and the RNG are shuffled. Every game ends by the rules well before the turn
cap, and the same seed and actions replay to the same game.
"""

from __future__ import annotations

import json
import random

import pytest

from harness.games import get_game
from harness.games.dominoes.state import ALL_TILES

GAME = get_game("dominoes")
GAMES_PER_SIZE = 1000
SORTED_TILES = sorted(ALL_TILES)
LEAK_CHECK_EVERY = 41  # decisions between two checks of hidden information and of every offered action


def check_invariants(state, previous_scores: list[int]) -> None:
    line = state.line
    placed = [(a, b) if a >= b else (b, a) for a, b in line]
    every = [t for hand in state.hands for t in hand] + state.graveyard + placed
    assert sorted(every) == SORTED_TILES, "the 28 tiles are not each in exactly one place"
    if state.players == 4:
        assert not state.graveyard, "a graveyard with 4 players"
    for (_, r), (left, _) in zip(line, line[1:]):
        assert r == left, f"line does not join: {line}"
    if line:
        assert (state.left, state.right) == (line[0][0], line[-1][1]), "open ends out of step with the line"
        assert state.left_double == (line[0][0] == line[0][1])
        assert state.right_double == (line[-1][0] == line[-1][1])
    for before, now in zip(previous_scores, state.scores):
        assert now >= before and now % 5 == 0, f"scores {previous_scores} -> {state.scores}"
    for hand in state.hands:
        assert hand == sorted(hand, reverse=True), "a hand is not in canonical order"


def check_offered(state, legal: list[dict]) -> None:
    keys = [(a["type"], tuple(a.get("tile", ())), a.get("end")) for a in legal]
    assert len(set(keys)) == len(keys), "duplicate legal actions"
    kinds = {a["type"] for a in legal}
    seat = state.current_player
    hand = state.hands[seat]
    if kinds == {"play"}:
        for a in legal:
            tile = tuple(a["tile"])
            assert tile in hand
            if state.line:
                assert (state.left if a["end"] == "left" else state.right) in tile, f"{a} does not fit"
            else:
                assert "end" not in a
    else:
        # D5: a player who can play may not draw or pass; draw while the graveyard has tiles
        assert len(legal) == 1 and not state.can_play(seat)
        assert kinds == ({"draw"} if state.graveyard else {"pass"})


def shuffled_hidden(state, viewer: int, rng: random.Random) -> dict:
    """A snapshot in which everything ``viewer`` cannot see is shuffled: other hands (sizes kept),
    the graveyard order and the RNG state. The tile a first hand must be led with stays put."""
    snap = state.to_json()
    snap["events"] = []  # the public log is not part of an observation
    others = [s for s in range(state.players) if s != viewer]
    lead = snap["lead_tile"]
    pool = [t for s in others for t in snap["hands"][s] if t != lead] + snap["graveyard"]
    rng.shuffle(pool)
    for s in others:
        keep = [t for t in snap["hands"][s] if t == lead]
        size = len(snap["hands"][s]) - len(keep)
        snap["hands"][s] = keep + pool[:size]
        del pool[:size]
    snap["graveyard"] = pool
    version, internal, gauss = random.Random(rng.random()).getstate()
    snap["rng"] = [version, list(internal), gauss]
    return snap


def play(players: int, seed: int, check: bool) -> tuple[list[dict], object]:
    state = GAME.new_state(players, seed, {})
    chooser = random.Random(seed * 31 + players)
    leak_rng = random.Random(seed)
    actions: list[dict] = []
    scores = list(state.scores)
    while not state.is_terminal():
        legal = state.legal_actions()
        if check:
            check_invariants(state, scores)
            check_offered(state, legal)
            scores = list(state.scores)
            if len(actions) % LEAK_CHECK_EVERY == 0:
                viewer = leak_rng.randrange(players)
                twin = GAME.state_from_json(shuffled_hidden(state, viewer, leak_rng))
                assert twin.observation(viewer) == state.observation(viewer), "observation leaks"
                snap = state.to_json()
                snap["events"] = []
                for action in legal:  # every offered action is accepted
                    GAME.state_from_json(snap).apply(action)
        action = chooser.choice(legal)
        state.apply(action)
        actions.append(action)
        assert len(actions) <= state.max_turns
    if check:
        check_invariants(state, scores)
    return actions, state


@pytest.mark.parametrize("players", [2, 3, 4])
def test_random_games_keep_every_invariant_and_end_by_the_rules(players):
    ends = {"target": 0, "playoff": 0}
    for seed in range(GAMES_PER_SIZE):
        actions, state = play(players, seed, check=True)
        result = state.result()
        assert result["ended_by"] == "rules", f"seed {seed} hit the turn cap after {len(actions)} actions"
        ends[state.end_reason] += 1
        top = max(result["scores"])
        assert top >= state.target
        assert result["ranking"] == [0 if s == top else result["ranking"][i] for i, s in enumerate(result["scores"])]
        if state.end_reason == "target":
            assert result["scores"].count(top) == 1, "a game ended on the target with a tie at the top"
        kinds = {e["type"] for e in state.events}
        assert kinds <= {"hand_start", "redeal", "play", "draw", "pass", "hand_end", "playoff", "game_end"}
        assert all("tile" not in e for e in state.events if e["type"] == "draw"), "a draw event shows the tile"
        assert state.events[-1]["type"] == "game_end"
    assert ends["target"] > 0.9 * GAMES_PER_SIZE


@pytest.mark.parametrize("players", [2, 3, 4])
def test_same_seed_and_actions_replay_the_same_game(players):
    for seed in range(GAMES_PER_SIZE):
        actions, final = play(players, seed, check=False)
        replay = GAME.new_state(players, seed, {})
        for action in actions:
            replay.apply(action)
        assert replay.events == final.events
        assert replay.scores == final.scores and replay.hands == final.hands
        if seed % 10 == 0:
            assert replay.to_json() == final.to_json()
            # a snapshot taken mid-game continues identically, RNG included
            cut = len(actions) // 3
            state = GAME.new_state(players, seed, {})
            for action in actions[:cut]:
                state.apply(action)
            restored = GAME.state_from_json(json.loads(json.dumps(state.to_json())))
            for action in actions[cut:]:
                restored.apply(action)
            assert restored.to_json() == final.to_json()


def test_a_different_seed_gives_a_different_deal():
    deals = {json.dumps(GAME.new_state(3, seed, {}).to_json()["hands"]) for seed in range(50)}
    assert len(deals) == 50


def ranking_by(keys: list[tuple]) -> list[int]:
    """Rank from sort keys, higher is better, equal keys share a rank (0 = first)."""
    return [sum(1 for other in keys if other > k) for k in keys]


@pytest.mark.parametrize("players", [2, 3, 4])
def test_turn_cap_scores_every_finished_hand_once_and_ranks_on_tiles(players):
    """C3 over random games cut off at random turns: the final scores are the sum of the points in
    the public event log (plays and finished hands, each once; a hand in progress is not scored),
    and the ranking is by points, then fewer tiles in hand (not pips), ties shared."""
    rng = random.Random(players)
    capped = 0
    for seed in range(300):
        options = {"max_turns": rng.randint(1, 250)}
        state = GAME.new_state(players, seed, options)
        chooser = random.Random(seed)
        while not state.is_terminal():
            state.apply(chooser.choice(state.legal_actions()))
        scores = [0] * players
        for e in state.events:
            if e["type"] == "play" and e["points"]:
                scores[e["seat"]] += e["points"]
                assert scores[e["seat"]] == e["score"]
            elif e["type"] == "hand_end":
                scores = [a + b for a, b in zip(scores, e["points"])]
                assert scores == e["scores"]
        result = state.result()
        assert result["scores"] == scores, (seed, options)
        if result["ended_by"] == "turn_cap":
            capped += 1
            tiles = [len(h) for h in state.hands]
            assert result["ranking"] == ranking_by([(scores[i], -tiles[i]) for i in range(players)])
    assert capped > 150, capped
