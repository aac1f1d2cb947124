"""Epizodiak over random games with random turn caps: the final scores and ranking equal what this
test computes on its own from the public event log, and the pick-up rules (E7) hold at every step.

The scorer below knows only the rules as docs/rules/epizodiak.md states them (every finished round
once, plus the round in progress where the cap cuts it off; bga, classic, one_round,
contest_point) and reads only ``state.events``; it shares no code with the engine. A third of the
games put the cap exactly on a turn that ends a round, the case where the engine once scored that
round twice.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from harness.games import get_game

GAME = get_game("epizodiak")
GAMES = 360
OPTION_SETS = [
    {},
    {"scoring": "classic"},
    {"mode": "one_round"},
    {"target": 13, "contest_point": False},
    {"mode": "one_round", "contest_point": False},
    {"scoring": "classic", "contest_point": False},
]


def round_points(counted: list[int], emptied: int | None, options: dict[str, Any]) -> list[int]:
    """E14-E15: the points of one round from the sets each seat counts in it."""
    if options["scoring"] == "classic" and options["mode"] == "rounds":
        return [counted[s] if s == emptied else 0 for s in range(3)]
    return [counted[s] + (3 if s == emptied else 0) for s in range(3)]


def competition_ranking(keys: list[Any]) -> list[int]:
    return [sorted(keys, reverse=True).index(k) for k in keys]


def score_from_events(events: list[dict[str, Any]], options: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(scores, ranking) of a finished game, computed from the public event log alone."""
    scores = [0, 0, 0]
    counted = [0, 0, 0]
    sizes = [12, 12, 12]
    in_progress = False
    emptied = None
    ended_by = None
    for e in events:
        kind = e["type"]
        if kind == "round_start":
            counted, sizes, in_progress = [0, 0, 0], [12, 12, 12], True
        elif kind == "draw" or kind == "pickup":
            sizes[e["seat"]] += 1
        elif kind == "place":
            sizes[e["seat"]] -= len(e["tiles"])
        elif kind == "discard":
            sizes[e["seat"]] -= 3
            counted[e["seat"]] += 1
        elif kind == "contest":
            for o in range(3):
                sizes[o] -= e["taken"][o]
            sizes[e["seat"]] += 1
            counted[e["seat"]] += 1 if options["contest_point"] else 0
        elif kind == "round_end":
            emptied = e["emptied"]
            assert sizes[emptied] == 0, "the emptier still holds tiles"
            points = round_points(counted, emptied, options)
            assert e["points"] == points
            scores = [a + b for a, b in zip(scores, points)]
            in_progress = False
        elif kind == "game_end":
            ended_by = e["ended_by"]
    assert ended_by is not None, "no game_end event"
    if ended_by == "turn_cap":
        if in_progress:  # C3: the round in progress counts its sets, nobody emptied his hand
            scores = [a + b for a, b in zip(scores, round_points(counted, None, options))]
        keys: list[Any] = [(scores[s], -sizes[s]) for s in range(3)]
    else:
        keys = [(scores[s], s == emptied) for s in range(3)]
    return scores, competition_ranking(keys)


def play(seed: int, max_turns: int, inspect=None):
    """One random game; the same seed gives the same moves whatever the cap, up to the cap."""
    options = dict(OPTION_SETS[seed % len(OPTION_SETS)], max_turns=max_turns)
    state = GAME.new_state(3, seed, options)
    chooser = random.Random(seed)
    round_end_turns = []
    while not state.is_terminal():
        if inspect is not None:
            inspect(state)
        before = len(state.events)
        state.apply(chooser.choice(state.legal_actions()))
        if any(e["type"] == "round_end" for e in state.events[before:]):
            round_end_turns.append(state.turns)
    return state, round_end_turns


def test_final_scores_and_ranking_equal_the_event_log_under_random_turn_caps():
    picker = random.Random(99)
    cases = Counter()
    for seed in range(GAMES):
        full, round_end_turns = play(seed, 5000)
        if seed % 3 == 0 and round_end_turns:
            cap = picker.choice(round_end_turns)  # the cap falls on a round's last turn
        else:
            cap = picker.randint(1, full.turns)
        state, _ = play(seed, cap)
        options = GAME.validate_options(dict(OPTION_SETS[seed % len(OPTION_SETS)], max_turns=cap))
        scores, ranking = score_from_events(state.events, options)
        result = state.result()
        assert result["scores"] == scores, (seed, cap, result, scores)
        assert result["ranking"] == ranking, (seed, cap, result, ranking)
        assert state.events[-1]["scores"] == scores and state.events[-1]["ranking"] == ranking
        if result["ended_by"] == "turn_cap":
            assert state.turns == cap
            last_two = [e["type"] for e in state.events[-2:]]
            cases["cap on a round's last turn" if last_two == ["round_end", "game_end"] else "cap mid-round"] += 1
        else:
            cases["rules"] += 1
            assert state.turns <= cap
    # every case is met often enough for the test to mean something
    assert cases["cap on a round's last turn"] >= 30 and cases["cap mid-round"] >= 100 and cases["rules"] >= 40, cases


def _picked_copy(snap: dict[str, Any]) -> Any:
    """The state right after a pick-up of ``last_laid``, built by hand from a snapshot (even when the
    engine does not offer the pick-up), to see whether the player could go on."""
    ll = snap["last_laid"]
    seat, dial = snap["current"], list(snap["dial"])
    dial = dial[:-1] if ll["end"] == "cw" else dial[1:]
    hands = [list(h) for h in snap["hands"]]
    hands[seat] = sorted(hands[seat] + [ll["value"]])
    return GAME.state_from_json(dict(snap, dial=dial, hands=hands, phase="picked", picked_end=ll["end"],
                                     last_laid=None, events=[]))


def test_pickup_offered_exactly_when_a_continuation_exists_and_nothing_is_put_back():
    checked = Counter()

    def inspect(state):
        obs = state.observation(state.current_player)
        legal = state.legal_actions()
        if obs["phase"] == "picked":
            # E7: no placement reaches the slot the tile came from (the one next to picked_end)
            ends = obs["ends"]
            slot = ends["cw"] % 12 + 1 if obs["picked_end"] == "cw" else (ends["ccw"] - 2) % 12 + 1
            assert all(slot not in a["tiles"] for a in legal if a["type"] == "place"), (obs, legal)
            assert legal, "a pick-up without a continuation"
            checked["picked"] += 1
        ll = obs["last_laid"]
        if (obs["phase"] == "start" and not obs["forced"] and ll is not None
                and ll["seat"] == (obs["seat"] - 1) % 3 and ll["value"] in obs["hand"]):
            # E7 (d): the pick-up is offered if and only if the picked position has a legal action
            after = _picked_copy(state.to_json())
            assert ({"type": "pickup"} in legal) == bool(after.legal_actions()), (obs, legal)
            checked["offered" if {"type": "pickup"} in legal else "refused"] += 1

    for seed in range(0, GAMES, 2):
        state, _ = play(seed, 5000, inspect)
        events = state.events
        for i, e in enumerate(events):
            if e["type"] == "pickup" and i + 1 < len(events) and events[i + 1]["type"] == "place":
                assert e["value"] not in events[i + 1]["tiles"], "a picked-up tile was put back"
    assert checked["picked"] > 200 and checked["offered"] > 200 and checked["refused"] > 50, checked
