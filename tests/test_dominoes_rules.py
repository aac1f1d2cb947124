"""Scenario tests for All-Fives Dominoes: one explicit position per ruling (D1-D8, docs/rules/dominoes.md).

Positions are built with :func:`position` from a readable description and restored through
``state_from_json``; each test checks the actions offered, that illegal ones are refused with a
reason (and change nothing), and the state after the move.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness.games import IllegalAction, InvalidAction, InvalidOptions, InvalidSnapshot, get_game
from harness.games.dominoes.state import ALL_TILES, blocked_points, first_leader, round5

GAME = get_game("dominoes")


def tiles(text: str) -> list[list[int]]:
    """'6-4 5-5' -> [[6, 4], [5, 5]] (orientation kept as written)."""
    return [[int(t[0]), int(t[-1])] for t in text.split()]


def position(hands: list[str], line: str = "", graveyard: str | None = None, *, current: int = 0,
             leader: int | None = None, lead: str | None = None, scores: list[int] | None = None,
             hand_number: int = 2, turns: int = 0, playoff: int | None = None, target: int = 200,
             max_turns: int = 5000, seed: int = 1):
    """A state from a readable description.

    ``hands``: one string of tiles per seat, or "*" for every tile not named elsewhere; ``line``:
    tiles left to right, each written in its orientation on the table; ``graveyard``: tiles, the
    last one drawn first; None puts every tile not named elsewhere there (unless a hand is "*").
    """
    players = len(hands)
    base = GAME.new_state(players, seed, {"target": target, "max_turns": max_turns}).to_json()
    hand_tiles = [[] if h == "*" else tiles(h) for h in hands]
    line_tiles = tiles(line)
    grave = [] if graveyard is None else tiles(graveyard)
    used = {tuple(sorted(t, reverse=True)) for t in sum(hand_tiles, []) + line_tiles + grave}
    rest = [list(t) for t in ALL_TILES if t not in used]
    if "*" in hands:
        hand_tiles[hands.index("*")] = rest
    elif graveyard is None:
        grave = rest
    snap = dict(base, hands=hand_tiles, line=line_tiles, graveyard=grave, current_player=current,
                leader=current if leader is None else leader, lead_tile=tiles(lead)[0] if lead else None,
                scores=scores or [0] * players, hand_number=hand_number, turns=turns,
                playoff_hands_left=playoff, ended_by=None, end_reason=None, events=[])
    return GAME.state_from_json(snap)


def act(text: str) -> dict:
    return GAME.parse_action(text)


def offered(state) -> list[str]:
    return [GAME.format_action(a) for a in state.legal_actions()]


def assert_rejected(state, action, reason: str, error=IllegalAction) -> None:
    before = state.to_json()
    with pytest.raises(error, match=reason):
        state.apply(action)
    assert state.to_json() == before, "a rejected action changed the state"


def last(state, kind: str) -> dict:
    return [e for e in state.events if e["type"] == kind][-1]


# A line holding six of the seven 6-tiles, open ends 6 (left) and 2 (right): whoever plays 6-2 on
# the right closes both ends on 6 and, with an empty graveyard, blocks the hand.
BLOCK_LINE = "6-1 1-0 0-6 6-5 5-4 4-6 6-6 6-3 3-2"


# ---------------------------------------------------------------- D1, D2: set, deal, graveyard

@pytest.mark.parametrize("players,graveyard", [(2, 14), (3, 7), (4, 0)])
def test_deal_seven_each_and_a_graveyard_only_for_two_or_three_players(players, graveyard):
    for seed in range(30):
        snap = GAME.new_state(players, seed, {}).to_json()
        assert [len(h) for h in snap["hands"]] == [7] * players
        assert len(snap["graveyard"]) == graveyard
        every = [tuple(t) for h in snap["hands"] for t in h] + [tuple(t) for t in snap["graveyard"]]
        assert sorted(every) == sorted(ALL_TILES)  # the double-six set, 28 tiles


def test_redeal_when_a_player_is_dealt_five_or_more_doubles():
    seed = next(s for s in range(5000)
                if any(e["type"] == "redeal" for e in GAME.new_state(2, s, {}).events))
    state = GAME.new_state(2, seed, {})
    redeal = state.events[0]
    assert redeal["type"] == "redeal" and redeal["hand"] == 1
    # the first deal, drawn from the same seeded RNG, really gave someone 5+ doubles
    rng = random.Random(seed)
    first = list(ALL_TILES)
    rng.shuffle(first)
    doubles = [sum(1 for a, b in first[i * 7:(i + 1) * 7] if a == b) for i in range(2)]
    assert [i for i in range(2) if doubles[i] >= 5] == redeal["seats"]
    assert redeal["doubles"] == [doubles[i] for i in redeal["seats"]]
    # the hands in play come from a later shuffle and have at most 4 doubles each
    assert state.events[-1]["type"] == "hand_start"
    assert all(sum(1 for a, b in h if a == b) <= 4 for h in state.hands)
    assert sorted(state.hands[0]) != sorted(first[:7])


def test_four_players_pass_instead_of_drawing():
    state = position(["5-5 5-4 5-3 5-2 5-1 4-4 4-3", "6-6 6-5 6-4 6-3 6-2 6-1 6-0",
                      "4-2 4-1 4-0 3-3 3-2 3-1 3-0", "*"], "0-0", current=0, hand_number=3)
    assert state.graveyard == [] and len(state.hands[3]) == 6
    # seat 0 holds no 0: no graveyard with 4 players, so it passes
    assert offered(state) == ["pass"]
    assert_rejected(state, act("draw"), "no graveyard with 4 players")
    assert_rejected(state, act("5-5 left"), "does not match")
    state.apply(act("pass"))
    assert state.current_player == 1 and state.events[-1] == {"type": "pass", "seat": 0}
    assert offered(state) == ["6-0 left"]  # both ends of the one-tile double line are alike


# ---------------------------------------------------------------- D3: who leads, with what

def test_first_hand_led_by_the_double_six_holder_with_double_six():
    state = position(["6-5 6-4", "6-6 1-1 3-2"], "", None, current=1, lead="6-6", hand_number=1)
    assert offered(state) == ["6-6"]  # one legal action: the referee applies it (C2)
    assert_rejected(state, act("1-1"), "first hand is led with 6-6")
    assert_rejected(state, act("6-6 left"), "takes no \"end\"")
    state.apply(act("6-6"))
    assert state.line == [(6, 6)] and state.scores == [0, 0]  # 12: not a multiple of 5
    assert state.current_player == 0 and state.lead_tile is None


def test_first_leader_six_six_then_highest_double_then_highest_tile():
    # 6-6 wherever it is held
    assert first_leader([[(5, 5), (1, 0)], [(6, 6), (2, 1)], [(4, 4)]]) == (1, (6, 6))
    # no 6-6 in play: the highest double in the hands
    assert first_leader([[(6, 5), (3, 3)], [(5, 5), (2, 1)], [(6, 4)]]) == (1, (5, 5))
    assert first_leader([[(6, 5), (0, 0)], [(6, 4), (2, 1)]]) == (0, (0, 0))
    # no double at all: most pips, then the higher half (6-3 beats 5-4)
    assert first_leader([[(5, 4), (2, 1)], [(6, 3), (1, 0)]]) == (1, (6, 3))
    assert first_leader([[(5, 4), (6, 5)], [(6, 3), (1, 0)]]) == (0, (6, 5))


@pytest.mark.parametrize("players", [2, 3, 4])
def test_first_hand_leader_from_real_deals(players):
    seen = set()
    for seed in range(3000):
        state = GAME.new_state(players, seed, {})
        held = [t for h in state.hands for t in h]
        doubles = sorted((t for t in held if t[0] == t[1]), reverse=True)
        if doubles:
            expected = doubles[0]
            seen.add("6-6" if expected == (6, 6) else "double")
        else:
            expected = max(held, key=lambda t: (t[0] + t[1], t[0]))
            seen.add("tile")
        start = [e for e in state.events if e["type"] == "hand_start"][0]
        assert start["lead_tile"] == list(expected)
        assert expected in state.hands[start["leader"]] and state.current_player == start["leader"]
        assert state.legal_actions() == [{"type": "play", "tile": list(expected)}]
        if players == 4:
            assert expected == (6, 6)  # every tile is dealt with 4 players
        if len(seen) == 3:
            break
    # with 3 players, 21 of 28 tiles are dealt: a deal without any double is all but impossible
    assert seen == {2: {"6-6", "double", "tile"}, 3: {"6-6", "double"}, 4: {"6-6"}}[players]


def test_later_hand_winner_leads_any_tile():
    # seat 1 dominoes; it leads hand 3 with any of its new tiles
    state = position(["6-6 5-5", "2-2"], "4-4 4-2", current=1, leader=0)
    state.apply(act("2-2 right"))  # count 8 + 4: no points; bonus 22 pips -> 20
    assert last(state, "hand_end")["points"] == [0, 20]
    start = last(state, "hand_start")
    assert start == {"type": "hand_start", "hand": 3, "leader": 1, "lead_tile": None,
                     "hand_sizes": [7, 7], "graveyard": 14, "scores": state.scores, "playoff_hands_left": None}
    assert state.current_player == 1 and state.line == []
    assert offered(state) == [GAME.format_action({"type": "play", "tile": list(t)}) for t in state.hands[1]]
    assert len(offered(state)) == 7


# ---------------------------------------------------------------- D4: counting the open ends

def test_one_tile_line_counts_both_halves():
    state = position(["6-4 3-1", "2-2"], current=0, hand_number=3)
    assert offered(state) == ["6-4", "3-1"]  # a later hand: any tile, no end
    state.apply(act("6-4"))
    assert state.scores == [10, 0] and last(state, "play")["points"] == 10


@pytest.mark.parametrize("lead,points", [("5-5", 10), ("3-2", 5), ("3-1", 0), ("0-0", 0)])
def test_lead_tile_scores_its_pips_if_a_positive_multiple_of_five(lead, points):
    state = position([lead + " 6-6", "2-1"], current=0, hand_number=3)
    state.apply(act(lead))
    assert state.scores == [points, 0]


def test_double_at_an_open_end_counts_both_halves():
    state = position(["2-2 1-0", "3-3"], "6-4 4-2")  # ends 6 and 2: 8
    assert offered(state) == ["2-2 right"]
    assert_rejected(state, act("2-2 left"), "does not match the left end \\(6\\)")
    assert_rejected(state, act("1-0 right"), "does not match the right end \\(2\\)")
    state.apply(act("2-2 right"))  # 6 + (2 + 2) = 10
    assert state.line == [(6, 4), (4, 2), (2, 2)]
    assert state.scores == [10, 0] and state.current_player == 1
    assert last(state, "play") == {"type": "play", "seat": 0, "tile": [2, 2], "end": "right", "ends": [6, 2],
                                   "count": 10, "points": 10, "score": 10}


def test_a_double_alone_then_covered_on_one_side_still_counts_both_halves_on_the_other():
    state = position(["5-0 1-1", "3-3"], "5-5")
    assert offered(state) == ["5-0 left"]  # both ends of a lone double are alike: offered once
    assert_rejected(state, act("5-0 right"), "offered once, on the left")
    state.apply(act("5-0 left"))  # 0 + (5 + 5) = 10
    assert state.line == [(0, 5), (5, 5)] and state.scores == [10, 0]


def test_no_points_when_the_count_is_not_a_multiple_of_five():
    state = position(["5-1 1-1", "3-3"], "5-5 5-3")  # 10 + 3
    state.apply(act("5-1 left"))  # 1 + 3 = 4
    assert state.scores == [0, 0] and last(state, "play")["points"] == 0


def test_tile_fitting_both_ends_differently_is_offered_twice_and_alike_ends_once():
    state = position(["6-4 4-4 1-0", "4-3 3-3"], "4-2 2-6")  # ends 4 and 6
    assert offered(state) == ["6-4 left", "6-4 right", "4-4 left"]
    state.apply(act("6-4 right"))  # placed 6-4 oriented, right end 4
    assert state.line == [(4, 2), (2, 6), (6, 4)] and state.left == 4 and state.right == 4
    # ends 4 and 4, neither a double: left and right give the same position, offered once
    assert state.current_player == 1 and offered(state) == ["4-3 left"]
    assert_rejected(state, act("4-3 right"), "both open ends are alike \\(4 and 4\\)")
    # a double at one end makes the two sides different again
    state2 = position(["4-0 5-5", "3-3"], "4-4 4-2 2-1 1-4")  # left end the double 4-4, right a plain 4
    assert offered(state2) == ["4-0 left", "4-0 right"]
    state2.apply(act("4-0 right"))  # (4 + 4) + 0 = 8
    assert state2.scores == [0, 0] and state2.line[-1] == (4, 0)


# ---------------------------------------------------------------- D5: drawing and passing

def test_forced_drawing_until_a_tile_fits_then_play():
    # seat 0 cannot play on 6 / 6; the graveyard gives 1-0 (no), then 6-5 (fits)
    state = position(["3-3 2-1", "*"], "6-6 6-4", graveyard="6-5 5-3 1-0")
    assert offered(state) == ["draw"]
    assert_rejected(state, act("pass"), "still has 3 tiles: draw")
    assert_rejected(state, act("3-3 left"), "does not match the left end \\(6\\)")
    state.apply(act("draw"))
    assert state.events[-1] == {"type": "draw", "seat": 0, "graveyard": 2}  # the tile is not public
    assert state.current_player == 0 and (1, 0) in state.hands[0]
    assert offered(state) == ["draw"]
    state.apply(act("draw"))
    assert state.current_player == 0 and (5, 3) in state.hands[0] and offered(state) == ["draw"]
    state.apply(act("draw"))
    assert state.graveyard == [] and offered(state) == ["6-5 left"]
    assert state.observation(1)["hand_sizes"] == [5, 21] and state.observation(1)["graveyard"] == 0


def test_a_player_who_can_play_may_not_draw_or_pass():
    state = position(["6-1 3-3", "*"], "6-4 4-2", graveyard="5-3 1-0")
    assert offered(state) == ["6-1 left"]
    assert_rejected(state, act("draw"), "may not draw")
    assert_rejected(state, act("pass"), "may not pass")


def test_pass_on_an_empty_graveyard():
    state = position(["3-3 2-1 1-1 1-0", "*"], "6-6 6-4", graveyard="")
    assert offered(state) == ["pass"]
    assert_rejected(state, act("draw"), "graveyard is empty")
    state.apply(act("pass"))
    assert state.current_player == 1 and state.events[-1] == {"type": "pass", "seat": 0}


def test_block_when_the_last_graveyard_tile_fits_nobody():
    # every 6 is on the line and both ends are 6; seat 0 draws the last tile, 0-0: nobody can play
    state = position(["3-3 2-1 1-1", "*"], BLOCK_LINE + " 2-6", graveyard="0-0")
    assert offered(state) == ["draw"]
    state.apply(act("draw"))
    end = last(state, "hand_end")
    assert end["how"] == "blocked" and end["pips"] == [11, 79]
    assert end["points"] == [70, 0] and state.scores == [70, 0]  # 79 - 11 = 68 -> 70
    assert state.current_player == 0 and state.hand_number == 3


def test_a_snapshot_of_an_unscored_blocked_hand_is_refused():
    with pytest.raises(InvalidSnapshot, match="blocked"):
        position(["3-3 2-1 1-1 0-0", "*"], BLOCK_LINE + " 2-6", graveyard="")


# ---------------------------------------------------------------- D6: domino and its bonus

@pytest.mark.parametrize("opponent,bonus", [
    ("1-0", 0), ("1-1", 0),          # 1-2 pips count 0
    ("2-1", 5), ("4-3", 5),          # 3-7 count 5
    ("4-4", 10), ("6-6", 10),        # 8-12 count 10
    ("6-6 1-0", 15),                 # 13 counts 15
])
def test_domino_bonus_rounded_to_the_nearest_five(opponent, bonus):
    state = position(["2-2", opponent], "5-5 5-2", scores=[20, 30])
    assert offered(state) == ["2-2 right"]
    assert_rejected(state, act("draw"), "may not draw")
    state.apply(act("2-2 right"))  # count 10 + 4 = 14: no points for the play itself
    end = last(state, "hand_end")
    assert end["how"] == "domino" and end["winner"] == 0
    assert end["points"] == [bonus, 0] and state.scores == [20 + bonus, 30]
    assert state.hand_number == 3 and state.current_player == 0  # the winner starts the next hand


def test_domino_bonus_sums_every_opponent_before_rounding():
    # 4 + 5 = 9 pips -> 10 (rounding each hand first would give 5 + 5)
    state = position(["2-2", "3-1", "4-1"], "5-5 5-2", scores=[0, 0, 0])
    state.apply(act("2-2 right"))
    assert last(state, "hand_end")["points"] == [10, 0, 0] and state.scores == [10, 0, 0]
    assert round5(9) == 10 and round5(4) + round5(5) == 10 and round5(2) == 0 and round5(3) == 5


# ---------------------------------------------------------------- D7: blocked hands

BLOCK_HANDS_3 = ["6-2 0-0 1-1 2-0 2-1 3-0 3-1",      # after 6-2: 14 pips
                 "2-2 3-3 4-0 4-1 5-0 5-1",          # 30
                 "4-2 4-3 4-4 5-2 5-3 5-5"]          # 46


def test_block_with_three_different_counts():
    state = position(BLOCK_HANDS_3, BLOCK_LINE, graveyard="", current=0, leader=1)
    assert offered(state) == ["6-2 left", "6-2 right", "2-1 right", "2-0 right"]
    assert_rejected(state, act("pass"), "may not pass")
    assert_rejected(state, act("3-1 right"), "does not match the right end \\(2\\)")
    state.apply(act("6-2 right"))  # both ends 6, every 6 on the line: nobody can play
    end = last(state, "hand_end")
    assert end["how"] == "blocked" and end["pips"] == [14, 30, 46]
    # seat 0: (30-14) + (46-14) = 48 -> 50; seat 1: 46-30 = 16 -> 15; seat 2: 0
    assert end["points"] == [50, 15, 0] and state.scores == [50, 15, 0]
    assert end["winner"] == 0 and state.current_player == 0 and state.leader == 0  # the lowest starts
    assert state.hand_number == 3 and len(state.line) == 0
    assert blocked_points([14, 30, 46]) == [50, 15, 0]


def test_block_with_a_shared_lowest_count_scores_nothing_and_the_same_player_starts():
    hands = ["6-2 5-5 4-4 4-3",                                      # after 6-2: 25 pips
             "5-3 5-2 4-2 2-2",                                      # 25
             "0-0 1-1 2-0 2-1 3-0 3-1 4-0 3-3 4-1 5-0 5-1"]          # 40
    state = position(hands, BLOCK_LINE, graveyard="", current=0, leader=2, scores=[5, 10, 15])
    assert offered(state) == ["6-2 left", "6-2 right"]
    state.apply(act("6-2 right"))
    end = last(state, "hand_end")
    assert end["pips"] == [25, 25, 40] and end["points"] == [0, 0, 0] and end["winner"] is None
    assert state.scores == [5, 10, 15]
    assert state.current_player == 2 and last(state, "hand_start")["leader"] == 2  # who started the block
    assert blocked_points([4, 4]) == [0, 0]  # the seed's example: 4 pips each, nothing distributed


def test_block_ties_above_the_lowest_score_the_same():
    assert blocked_points([3, 10, 10, 20]) == [round5(7 + 7 + 17), round5(10), round5(10), 0]


# ---------------------------------------------------------------- D8: target, highest, play-off

def test_target_reached_during_play_ends_the_game_at_once():
    state = position(["2-2 6-6 5-5", "3-3 1-1"], "6-4 4-2", scores=[190, 195])
    state.apply(act("2-2 right"))  # 10 points: 200
    assert state.is_terminal() and state.current_player is None and state.legal_actions() == []
    assert state.result() == {"ranking": [0, 1], "scores": [200, 195], "ended_by": "rules"}
    assert state.events[-1]["type"] == "game_end" and state.events[-1]["reason"] == "target"
    assert not [e for e in state.events if e["type"] == "hand_end"]  # the hand is not finished
    assert_rejected(state, act("pass"), "game is over")


def test_target_reached_by_the_last_tile_ends_before_the_hand_bonus():
    state = position(["2-2", "6-6 5-5"], "6-4 4-2", scores=[195, 100])
    state.apply(act("2-2 right"))
    assert state.result() == {"ranking": [0, 1], "scores": [205, 100], "ended_by": "rules"}


def test_several_over_the_target_at_a_hands_end_the_highest_wins():
    state = position(BLOCK_HANDS_3, BLOCK_LINE, graveyard="", scores=[190, 195, 150])
    state.apply(act("6-2 right"))  # block: +50, +15, 0
    assert state.result() == {"ranking": [0, 1, 2], "scores": [240, 210, 150], "ended_by": "rules"}
    assert state.events[-1]["reason"] == "target"


def test_tie_at_the_top_starts_a_play_off_of_as_many_hands_as_players():
    state = position(BLOCK_HANDS_3, BLOCK_LINE, graveyard="", scores=[190, 225, 150])
    state.apply(act("6-2 right"))  # 240, 240, 150
    assert not state.is_terminal()
    assert last(state, "playoff") == {"type": "playoff", "tied": [0, 1], "hands": 3}
    assert state.playoff_hands_left == 3 and state.hand_number == 3 and state.current_player == 0
    assert state.observation(2)["playoff_hands_left"] == 3


def test_during_the_play_off_the_target_does_not_end_the_game():
    state = position(["2-2 6-6 5-5", "3-3 1-1"], "6-4 4-2", scores=[240, 240], playoff=2)
    state.apply(act("2-2 right"))
    assert not state.is_terminal() and state.scores == [250, 240]


def test_play_off_ends_after_its_last_hand_and_a_remaining_tie_is_shared():
    # last play-off hand: seat 2 dominoes, count 14, opponents hold 2 pips: nobody scores
    state = position(["1-0", "0-0", "2-2"], "5-5 5-2", current=2, scores=[240, 240, 100], playoff=1)
    state.apply(act("2-2 right"))
    assert state.result() == {"ranking": [0, 0, 2], "scores": [240, 240, 100], "ended_by": "rules"}
    assert state.events[-1]["reason"] == "playoff"


def test_play_off_decided_by_the_extra_hands():
    state = position(["2-2", "4-3", "6-6"], "5-5 5-2", current=0, scores=[240, 240, 100], playoff=1)
    state.apply(act("2-2 right"))  # 7 + 12 = 19 pips -> 20 for seat 0
    assert state.result() == {"ranking": [0, 1, 2], "scores": [260, 240, 100], "ended_by": "rules"}


# ---------------------------------------------------------------- C3: turn cap

def test_turn_cap_ranks_by_points_then_fewer_tiles_not_pips():
    state = position(["6-1 1-0 0-0", "6-5", "3-3 2-0 1-1", "*"], "6-6", current=0,
                     scores=[10, 10, 10, 5], turns=41, max_turns=42)
    state.apply(act("6-1 left"))  # count 1 + 12: no points
    assert state.is_terminal() and state.current_player is None and state.legal_actions() == []
    # points 10, 10, 10, 5; tiles 2, 1, 3; pips 1, 11, 9: tiles decide, not pips (C3)
    assert state.result() == {"ranking": [1, 0, 2, 3], "scores": [10, 10, 10, 5], "ended_by": "turn_cap"}
    assert state.events[-1] == {"type": "game_end", "ended_by": "turn_cap", "reason": "turn_cap",
                                "scores": [10, 10, 10, 5], "ranking": [1, 0, 2, 3]}
    assert_rejected(state, act("pass"), "game is over")


def test_turn_cap_ties_on_points_and_tiles_are_shared_whatever_the_pips():
    state = position(["6-1 1-0", "6-5", "3-3 2-0 1-1"], "6-6", scores=[10, 10, 10], turns=9, max_turns=10)
    state.apply(act("6-1 left"))
    # seats 0 and 1 hold one tile each (1 pip and 11 pips): they share the first rank
    assert state.result() == {"ranking": [0, 0, 2], "scores": [10, 10, 10], "ended_by": "turn_cap"}


def test_turn_cap_on_the_turn_that_ends_a_hand_scores_it_once_and_deals_no_new_hand():
    # seat 1 plays its last tile on the capped turn: the hand is scored once, then the game stops
    state = position(["6-6 5-5", "2-2"], "4-4 4-2", current=1, leader=0, scores=[0, 5], turns=9,
                     max_turns=10)
    state.apply(act("2-2 right"))  # count 8 + 4: no points; bonus 22 pips -> 20
    assert [e["type"] for e in state.events[-2:]] == ["hand_end", "game_end"]
    assert last(state, "hand_end")["points"] == [0, 20]
    # the hands are those of the finished hand: seat 1 holds no tile
    assert state.result() == {"ranking": [1, 0], "scores": [0, 25], "ended_by": "turn_cap"}
    assert state.hand_number == 2 and len(state.hands[0]) == 2 and state.hands[1] == []
    assert GAME.state_from_json(state.to_json()).result() == state.result()


def test_turn_cap_shares_remaining_ties_and_points_come_first():
    state = position(["6-1 1-1", "5-4", "6-3"], "6-6", scores=[0, 15, 15], turns=9, max_turns=10)
    state.apply(act("6-1 left"))
    assert state.result() == {"ranking": [2, 0, 0], "scores": [0, 15, 15], "ended_by": "turn_cap"}


def test_the_turn_cap_counts_every_action_including_draws_and_passes():
    state = position(["3-3 2-1", "*"], "6-6 6-4", graveyard="6-5 1-0", max_turns=2)
    state.apply(act("draw"))
    assert not state.is_terminal()
    state.apply(act("draw"))
    assert state.result()["ended_by"] == "turn_cap"


# ---------------------------------------------------------------- play order, options, formats

def test_play_passes_from_seat_i_to_seat_i_plus_one():
    state = position(["6-5 1-1", "5-3 2-2", "3-0 0-0"], "6-6")
    state.apply(act("6-5 left"))
    assert state.current_player == 1
    state.apply(act("5-3 left"))  # 3 + 12 = 15
    assert state.current_player == 2 and state.scores == [0, 15, 0]
    state.apply(act("3-0 left"))
    assert state.current_player == 0


def test_options_default_and_refuse_bad_values_by_name():
    assert GAME.default_options() == {"target": 200, "max_turns": 5000}
    assert GAME.new_state(2, 1, {"target": 100}).target == 100
    for bad in ({"target": 0}, {"target": "200"}, {"target": True}):
        with pytest.raises(InvalidOptions, match="target.*allowed: an integer from 5 to 10000"):
            GAME.new_state(2, 1, bad)
    with pytest.raises(InvalidOptions, match="max_turns"):
        GAME.new_state(2, 1, {"max_turns": 0})
    with pytest.raises(InvalidOptions, match="2 to 4 players"):
        GAME.new_state(5, 1, {})


def test_text_forms_parse_back():
    for action in ({"type": "play", "tile": [6, 4], "end": "left"}, {"type": "play", "tile": [5, 5]},
                   {"type": "play", "tile": [3, 0], "end": "right"}, {"type": "draw"}, {"type": "pass"}):
        assert GAME.parse_action(GAME.format_action(action)) == action
    assert GAME.format_action({"type": "play", "tile": [6, 4], "end": "left"}) == "6-4 left"
    assert GAME.parse_action(" 4-6 Right ") == {"type": "play", "tile": [6, 4], "end": "right"}
    for bad in ("7-1 left", "6-4 up", "", "draw 2", "64"):
        with pytest.raises(InvalidAction):
            GAME.parse_action(bad)


def test_malformed_actions_are_refused_with_a_reason():
    state = position(["6-4 3-1", "2-2"], "4-4")
    assert_rejected(state, {"type": "play", "tile": [4, 6], "end": "left"}, "high half first", InvalidAction)
    assert_rejected(state, {"type": "play", "tile": [6, 4], "end": "up"}, '"end" is "left" or "right"',
                    InvalidAction)
    assert_rejected(state, {"type": "play", "tile": [9, 4], "end": "left"}, "two numbers 0-6", InvalidAction)
    assert_rejected(state, {"type": "play"}, 'needs a "tile"', InvalidAction)
    assert_rejected(state, {"type": "draw", "tile": [6, 4]}, "unexpected key 'tile'", InvalidAction)
    assert_rejected(state, {"type": "play", "tile": [5, 5], "end": "left"}, "does not hold 5-5")
    assert_rejected(state, {"type": "play", "tile": [6, 4]}, "say at which end")
    assert_rejected(state, {"type": "resign"}, "unknown action type", InvalidAction)


def test_snapshots_are_checked():
    good = position(["6-4 3-1", "2-2"], "4-4").to_json()
    for change, reason in (({"hands": [[[6, 4]], [[2, 2]]]}, "exactly one place"),
                           ({"line": [[4, 4], [3, 1]]}, "do not join|exactly one place"),
                           ({"game": "crisps"}, "not a dominoes snapshot"),
                           ({"current_player": 5}, "not a seat"),
                           ({"rng": "x"}, "not a dominoes snapshot")):
        with pytest.raises(InvalidSnapshot, match=reason):
            GAME.state_from_json({**good, **change})
    assert GAME.state_from_json(good).to_json() == good


def test_observation_shows_own_tiles_and_public_facts_only():
    state = position(["6-4 3-1", "2-2 1-0"], "4-4 4-2", scores=[5, 10])
    obs = state.observation(1)
    assert obs == {"seat": 1, "players": 2, "hand_number": 2, "current_player": 0, "leader": 0,
                   "lead_tile": None, "hand": [[2, 2], [1, 0]], "line": [[4, 4], [4, 2]], "ends": [4, 2],
                   "count": 10, "hand_sizes": [2, 2], "graveyard": 22, "scores": [5, 10], "target": 200,
                   "playoff_hands_left": None, "turn": 0, "max_turns": 5000}


# ---------------------------------------------------------------- the reference greedy bot

BOT = Path(__file__).resolve().parent.parent / "bots" / "dominoes_greedy.py"


def test_greedy_bot_plays_a_whole_game_over_protocol_v1():
    """The real bot process: ready on hello, one offered action per request, exits on bye."""
    proc = subprocess.Popen([sys.executable, str(BOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, bufsize=1)
    try:
        def ask(message: dict) -> dict:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        hello = {"type": "hello", "protocol": 1, "game": "dominoes", "options": GAME.default_options(),
                 "seat": 0, "players": 3, "time": {"init_ms": 5000, "move_ms": 1000, "bank_ms": 0}}
        assert ask(hello)["type"] == "ready"
        proc.stdin.write(json.dumps({"type": "start", "game_id": "g-1", "seat": 0, "players": 3}) + "\n")
        state = GAME.new_state(3, 11, {})
        rng = random.Random(11)
        seen = 0
        request_id = 0
        while not state.is_terminal():
            legal = state.legal_actions()
            if state.current_player == 0 and len(legal) > 1:
                request_id += 1
                reply = ask({"type": "request", "id": request_id, "seat": 0,
                             "observation": state.observation(0), "actions": legal,
                             "events": state.events[seen:], "time_left_ms": 1000})
                seen = len(state.events)
                assert reply["type"] == "action" and reply["id"] == request_id
                action = legal[reply["index"]]
            else:
                action = rng.choice(legal)
            state.apply(action)
        assert request_id > 5
        proc.stdin.write(json.dumps({"type": "bye"}) + "\n")
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_greedy_bot_takes_the_points():
    state = position(["2-2 6-0 1-0", "3-3"], "6-4 4-2")  # 2-2 right scores 10; 6-0 left scores 0+2
    request = {"type": "request", "id": 1, "seat": 0, "observation": state.observation(0),
               "actions": state.legal_actions(), "events": [], "time_left_ms": 1000}
    lines = json.dumps({"type": "hello", "protocol": 1}) + "\n" + json.dumps(request) + "\n"
    out = subprocess.run([sys.executable, str(BOT)], input=lines, capture_output=True, text=True, timeout=10)
    ready, answer = [json.loads(line) for line in out.stdout.splitlines()]
    assert ready["type"] == "ready" and out.returncode == 0  # end of input: it exits
    assert state.legal_actions()[answer["index"]] == act("2-2 right")
