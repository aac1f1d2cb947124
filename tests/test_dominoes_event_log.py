"""All-Fives Dominoes over random games with random turn caps: the final scores and ranking equal
what this test computes on its own from the public event log.

The scorer below follows the line from the ``play`` events (its own count of the open ends, D4),
scores each hand's end from the tiles the ``hand_end`` event shows (D6, D7), and ranks a capped
game by points, then fewer tiles in hand, remaining ties shared (C3). It shares no code with the
engine. A third of the games put the cap exactly on a turn that ends a hand.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from harness.games import get_game

GAME = get_game("dominoes")
GAMES_PER_SIZE = 150


def rounded(pips: int) -> int:
    """Nearest multiple of 5; 1-2 count 0, 3-7 count 5, 8-12 count 10 (D6)."""
    return (pips + 2) // 5 * 5


def competition_ranking(keys: list[Any]) -> list[int]:
    return [sorted(keys, reverse=True).index(k) for k in keys]


def score_from_events(events: list[dict[str, Any]], players: int) -> tuple[list[int], list[int]]:
    """(scores, ranking) of a finished game, computed from the public event log alone."""
    scores = [0] * players
    sizes = [0] * players
    ends: list[int] = []          # open end values, left and right
    doubles: list[bool] = []      # is the tile at that end a double?
    length = 0
    ended_by = None
    for e in events:
        kind = e["type"]
        if kind == "hand_start":
            sizes = list(e["hand_sizes"])
            assert e["scores"] == scores
            ends, doubles, length = [], [], 0
        elif kind == "draw":
            sizes[e["seat"]] += 1
        elif kind == "play":
            a, b = e["tile"]
            seat = e["seat"]
            sizes[seat] -= 1
            if length == 0:
                ends, doubles = [a, b], [a == b, a == b]
            else:
                i = 0 if e["end"] == "left" else 1
                assert ends[i] in (a, b), "a tile that does not fit its end"
                ends[i] = b if a == ends[i] else a
                doubles[i] = a == b
            length += 1
            if length == 1:
                count = a + b
            else:
                count = sum(v * (2 if d else 1) for v, d in zip(ends, doubles))
            points = count if count and count % 5 == 0 else 0
            assert (e["count"], e["points"]) == (count, points)
            scores[seat] += points
            assert e["score"] == scores[seat]
        elif kind == "hand_end":
            pips = [sum(a + b for a, b in hand) for hand in e["hands"]]
            assert [len(h) for h in e["hands"]] == sizes and e["pips"] == pips
            if e["how"] == "domino":
                assert sizes[e["winner"]] == 0
                points = [0] * players
                points[e["winner"]] = rounded(sum(pips))
            elif pips.count(min(pips)) > 1:
                points = [0] * players
            else:
                points = [rounded(sum(q - p for q in pips if q > p)) for p in pips]
            assert e["points"] == points
            scores = [s + p for s, p in zip(scores, points)]
        elif kind == "game_end":
            ended_by = e["ended_by"]
    assert ended_by is not None, "no game_end event"
    keys: list[Any] = ([(scores[i], -sizes[i]) for i in range(players)] if ended_by == "turn_cap"
                       else list(scores))
    return scores, competition_ranking(keys)


def play(players: int, seed: int, max_turns: int, target: int):
    state = GAME.new_state(players, seed, {"max_turns": max_turns, "target": target})
    chooser = random.Random(seed)
    hand_end_turns = []
    while not state.is_terminal():
        before = len(state.events)
        state.apply(chooser.choice(state.legal_actions()))
        if any(e["type"] == "hand_end" for e in state.events[before:]):
            hand_end_turns.append(state.turns)
    return state, hand_end_turns


def test_final_scores_and_ranking_equal_the_event_log_under_random_turn_caps():
    picker = random.Random(7)
    cases = Counter()
    for players in (2, 3, 4):
        for seed in range(GAMES_PER_SIZE):
            target = 100 if seed % 2 else 200   # more hands per game, more play-offs
            full, hand_end_turns = play(players, seed, 5000, target)
            if seed % 3 == 0 and hand_end_turns:
                cap = picker.choice(hand_end_turns)  # the cap falls on a hand's last turn
            else:
                cap = picker.randint(1, full.turns * 3 // 2)  # a third of these end by the rules
            state, _ = play(players, seed, cap, target)
            scores, ranking = score_from_events(state.events, players)
            result = state.result()
            assert result["scores"] == scores, (players, seed, cap, result, scores)
            assert result["ranking"] == ranking, (players, seed, cap, result, ranking)
            assert state.events[-1]["scores"] == scores and state.events[-1]["ranking"] == ranking
            if result["ended_by"] == "turn_cap":
                assert state.turns == cap
                before_end = state.events[-2]["type"]
                # C3: no hand is dealt that would never be played
                assert before_end != "hand_start"
                cases["cap on a hand's last turn" if before_end in ("hand_end", "playoff") else "cap mid-hand"] += 1
            else:
                cases["rules"] += 1
    assert cases["cap on a hand's last turn"] >= 60 and cases["cap mid-hand"] >= 150 and cases["rules"] >= 20, cases
