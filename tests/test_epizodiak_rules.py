"""Epizodiak rule scenarios: one or more per ruling E1-E16 (and C3), each built from an explicit
position with ``position(...)`` and checked through the public API (legal actions offered,
illegal ones rejected with a reason, the state after the move)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from harness.games import IllegalAction, InvalidAction, InvalidOptions, InvalidSnapshot, get_game

GAME = get_game("epizodiak")


# ---------------------------------------------------------------------------- helpers
def tiles(text: str) -> list[int]:
    """'1 1 12' -> [1, 1, 12]."""
    return sorted(int(w) for w in text.split())


def arc(text: str) -> list[int]:
    """'9-2' -> [9, 10, 11, 12, 1, 2]: the dial from its ccw end to its cw end."""
    a, _, b = text.partition("-")
    a, b = int(a), int(b or a)
    out = [a]
    while out[-1] != b:
        out.append(out[-1] % 12 + 1)
    return out


def position(hands, dial, *, pile=None, rest=None, turn=0, phase="start", sets=("", "", ""),
             contested=("", "", ""), scores=(0, 0, 0), passes=0, last_laid=None, picked_end=None,
             options=None, round=1, turns=0, emptied=None):
    """A state from a readable description.

    hands: three strings of tiles; dial: 'ccw-cw' arc; sets/contested: per seat, values of sets
    discarded this round; last_laid: (seat, end, value). Tiles not mentioned anywhere go to the
    bottom of the pile when ``pile`` is None, else to the hand of seat ``rest``.
    """
    hands = [tiles(h) for h in hands]
    dial_list = arc(dial)
    sets_l = [tiles(s) for s in sets]
    pile_l = [] if pile is None else [int(w) for w in pile.split()]
    used = Counter(t for h in hands for t in h) + Counter(dial_list) + Counter(pile_l)
    for s in sets_l:
        for v in s:
            used[v] += 3
    missing = []
    for v in range(1, 13):
        assert used[v] <= 4, f"position uses {used[v]} tiles of {v}"
        missing += [v] * (4 - used[v])
    if pile is None:
        pile_l = missing + pile_l
    elif rest is not None:
        hands[rest] = sorted(hands[rest] + missing)
    else:
        assert not missing, f"tiles not placed anywhere: {missing}"
    opts = GAME.validate_options(options or {})
    version, internal, gauss = random.Random(0).getstate()
    snap = {
        "game": "epizodiak", "version": 1, "options": opts, "rng": [version, list(internal), gauss],
        "round": round, "turns": turns, "current": turn, "phase": phase, "hands": hands, "pile": pile_l,
        "dial": dial_list, "sets": sets_l, "contested": [tiles(s) for s in contested], "scores": list(scores),
        "passes": passes,
        "last_laid": None if last_laid is None else dict(zip(("seat", "end", "value"), last_laid)),
        "picked_end": picked_end, "emptied": emptied, "ended_by": None,
    }
    return GAME.state_from_json(snap)


def texts(state) -> list[str]:
    return [GAME.format_action(a) for a in state.legal_actions()]


def play(state, text: str) -> None:
    state.apply(GAME.parse_action(text))


def rejected(state, text: str, reason: str) -> None:
    """``text`` is refused with an IllegalAction whose message contains ``reason``; state unchanged."""
    before = state.to_json()
    with pytest.raises(IllegalAction, match=reason):
        play(state, text)
    assert state.to_json() == before


def accounted(state) -> None:
    snap = state.to_json()
    count = Counter(t for h in snap["hands"] for t in h) + Counter(snap["pile"]) + Counter(snap["dial"])
    for s in snap["sets"]:
        for v in s:
            count[v] += 3
    assert all(count[v] == 4 for v in range(1, 13)), count


def last_event(state, kind: str) -> dict:
    return [e for e in state.events if e["type"] == kind][-1]


# ---------------------------------------------------------------------------- E1 setup
def test_e1_deal_and_random_first_player():
    firsts = set()
    for seed in range(30):
        state = GAME.new_state(3, seed, {})
        snap = state.to_json()
        assert [len(h) for h in snap["hands"]] == [12, 12, 12]
        assert len(snap["pile"]) == 11 and len(snap["dial"]) == 1
        assert state.events[0] == {"type": "round_start", "round": 1, "first": state.current_player,
                                   "dial": snap["dial"][0], "pile": 11}
        accounted(state)
        firsts.add(state.current_player)
    assert firsts == {0, 1, 2}


def test_e1_next_round_starts_after_the_player_who_emptied_his_hand():
    state = position(["", "5", "1 2 3"], "1-4", turn=1, rest=2)
    assert texts(state) == ["cw 5", "draw"]
    play(state, "cw 5")
    assert state.round == 2 and state.current_player == 2
    snap = state.to_json()
    assert [len(h) for h in snap["hands"]] == [12, 12, 12] and len(snap["pile"]) == 11
    assert snap["sets"] == [[], [], []]
    assert state.events[-1]["type"] == "round_start" and state.events[-1]["first"] == 2


def test_deal_is_a_function_of_the_seed():
    assert GAME.new_state(3, 42, {}).to_json() == GAME.new_state(3, 42, {}).to_json()
    assert GAME.new_state(3, 42, {}).to_json()["hands"] != GAME.new_state(3, 43, {}).to_json()["hands"]


# ---------------------------------------------------------------------------- E2 dial
def test_e2_wrap_around_12_to_1_clockwise():
    state = position(["1 2 7", "", ""], "9-12", rest=1)
    assert texts(state)[:2] == ["cw 1", "cw 1 2"]
    play(state, "cw 1 2")
    assert state.to_json()["dial"] == [9, 10, 11, 12, 1, 2]
    assert state.observation(0)["ends"] == {"ccw": 9, "cw": 2}
    assert state.to_json()["hands"][0] == [7]


def test_e2_wrap_around_1_to_12_counter_clockwise():
    state = position(["11 12 7", "", ""], "1-4", rest=1)
    assert [t for t in texts(state) if t.startswith("ccw")] == ["ccw 12", "ccw 12 11"]
    play(state, "ccw 12 11")
    assert state.to_json()["dial"] == [11, 12, 1, 2, 3, 4]
    assert state.observation(0)["ends"] == {"ccw": 11, "cw": 4}


def test_e2_both_ends_one_side_per_move_and_consecutive_only():
    state = position(["3 4 8 9 10", "", ""], "5-7", rest=1)
    assert texts(state) == ["cw 8", "cw 8 9", "cw 8 9 10", "ccw 4", "ccw 4 3", "draw"]
    rejected(state, "cw 9", "accepts 8, not 9")
    rejected(state, "cw 8 10", "after 8 comes 9, not 10")
    rejected(state, "ccw 3", "accepts 4, not 3")
    rejected(state, "cw 8 9 10 11", "you hold no 11")
    play(state, "cw 8 9 10")
    assert state.to_json()["dial"] == arc("5-10") and state.current_player == 1


def test_e2_multi_tile_placement_stops_at_the_last_free_slot():
    # free slots are 1 and 2 only; the hand's run 1 2 3 4 cannot go past them
    state = position(["1 2 3 4", "", ""], "3-12", rest=1)
    assert texts(state) == ["cw 1", "cw 1 2", "ccw 2", "draw"]
    rejected(state, "cw 1 2 3", "only 2 free slot")
    rejected(state, "ccw 2 1", "written from the cw end: cw 1 2")


def test_e2_one_free_slot_is_offered_once():
    state = position(["2 5", "", ""], "3-1", rest=1)
    assert texts(state) == ["cw 2", "draw"]
    rejected(state, "ccw 2", "written from the cw end: cw 2")


# ---------------------------------------------------------------------------- E3 refill
def test_e3_filling_the_dial_refills_the_pile_sets_stay_out_next_player_after_filler():
    state = position(["2 5 6", "9", "10"], "3-1", pile="4 7", turn=0, sets=("", "8", ""), rest=2)
    play(state, "cw 2")
    snap = state.to_json()
    # 12 dial tiles + 2 pile tiles = 14, one turned onto the dial
    assert len(snap["pile"]) == 13 and len(snap["dial"]) == 1
    assert sorted(snap["pile"] + snap["dial"]) == sorted(list(range(1, 13)) + [4, 7])
    assert snap["sets"] == [[], [8], []]  # the discarded set is not shuffled back
    assert Counter(snap["pile"] + snap["dial"])[8] == 1
    assert state.current_player == 1
    assert state.events[-1] == {"type": "refill", "seat": 0, "dial": snap["dial"][0], "pile": 13}
    assert snap["last_laid"] is None  # nothing to pick up from a fresh dial
    accounted(state)


def test_e3_refill_is_drawn_from_the_game_rng_and_replays_identically():
    a = position(["2 5 6", "9", "10"], "3-1", pile="4 7", rest=2)
    b = GAME.state_from_json(a.to_json())
    play(a, "cw 2")
    play(b, "cw 2")
    assert a.to_json() == b.to_json()


# ---------------------------------------------------------------------------- E4 single tiles
def test_e4_a_value_whose_set_was_discarded_is_single():
    state = position(["7 7 7 3", "", ""], "4-5", rest=1)
    play(state, "discard 7")
    obs = state.observation(1)
    assert obs["singles"] == [7] and obs["sets"] == [[7], [], []]
    assert state.to_json()["hands"][0] == [3]


# ---------------------------------------------------------------------------- E5 turn with a pile
def test_e5_start_of_turn_with_pile_place_discard_draw_pickup_no_pass():
    state = position(["4 4 4 6 9", "5", ""], "6-8", turn=1, last_laid=(0, "cw", 8), rest=2)
    # seat 1 holds no 8 (no pick-up) and no set: place or draw, but never pass
    assert texts(state) == ["ccw 5", "draw"]
    rejected(state, "pass", "no passing while the pile has tiles")
    state = position(["5 8 8 9 9 9", "", ""], "6-8", last_laid=(2, "cw", 8), rest=1)
    assert texts(state) == ["cw 9", "ccw 5", "discard 9", "pickup", "draw"]
    rejected(state, "pass", "no passing while the pile has tiles")


def test_e5_a_player_who_cannot_place_or_discard_must_draw():
    state = position(["1 1 3", "", ""], "6-8", rest=1)
    assert texts(state) == ["draw"]
    rejected(state, "pass", "no passing while the pile has tiles")


# ---------------------------------------------------------------------------- E6 after a draw
def test_e6_after_draw_place_discard_or_pass_no_pickup_no_second_draw():
    state = position(["9 9 9 5 1", "", ""], "6-8", pile="2 10", last_laid=(2, "cw", 8), rest=1)
    assert "pickup" not in texts(state)  # no 8 in hand
    play(state, "draw")
    snap = state.to_json()
    assert snap["hands"][0] == [1, 5, 9, 9, 9, 10] and snap["pile"] == [2]
    assert state.events[-1] == {"type": "draw", "seat": 0, "pile": 1}  # the tile is not public
    assert state.current_player == 0 and state.observation(0)["phase"] == "drawn"
    assert texts(state) == ["cw 9", "cw 9 10", "ccw 5", "discard 9", "pass"]
    rejected(state, "draw", "already drew")
    rejected(state, "pickup", "no pick-up after a draw")
    play(state, "pass")
    assert state.current_player == 1 and state.observation(1)["passes"] == 0  # a draw is a move (E12)


def test_e6_drawing_the_last_tile_leaves_the_choice_to_pass_even_with_a_single_tile():
    state = position(["9", "", ""], "6-8", pile="1", sets=("", "9", ""), rest=1)
    play(state, "draw")
    assert state.to_json()["pile"] == []
    assert texts(state) == ["cw 9", "pass"]  # E10 does not bind the player who drew the last tile
    play(state, "pass")
    assert state.current_player == 1


# ---------------------------------------------------------------------------- E7 pick-up
def test_e7_pickup_of_the_previous_players_last_tile_then_other_side_only():
    state = position(["7 1", "7 2 11", "12"], "3-6", turn=0, rest=2)
    play(state, "cw 7")
    assert state.current_player == 1 and state.observation(1)["last_laid"] == {"seat": 0, "end": "cw", "value": 7}
    assert "pickup" in texts(state)
    play(state, "pickup")
    snap = state.to_json()
    assert snap["dial"] == arc("3-6") and snap["hands"][1] == [2, 7, 7, 11]
    assert state.events[-1] == {"type": "pickup", "seat": 1, "end": "cw", "value": 7}
    assert state.current_player == 1 and state.observation(1)["phase"] == "picked"
    assert texts(state) == ["ccw 2"]  # only the other side (or a set)
    rejected(state, "cw 7", "other \\(ccw\\) end")
    rejected(state, "pass", "after a pick-up")
    rejected(state, "draw", "after a pick-up")
    play(state, "ccw 2")
    assert state.to_json()["dial"] == arc("2-6") and state.current_player == 2


def test_e7_the_last_tile_of_a_multi_tile_placement_is_the_one_picked_up():
    state = position(["1 2 3 10", "1 7 9", ""], "4-6", turn=0, rest=2)
    play(state, "ccw 3 2 1")
    assert state.observation(1)["last_laid"] == {"seat": 0, "end": "ccw", "value": 1}
    play(state, "pickup")
    assert state.to_json()["dial"] == arc("2-6") and state.to_json()["hands"][1] == [1, 1, 7, 9]
    assert texts(state) == ["cw 7"]
    rejected(state, "ccw 1", "other \\(cw\\) end")


def test_e7_pickup_only_of_the_previous_players_tile_in_his_previous_turn():
    state = position(["7 1", "2 2", "7 2"], "3-6", pile="10 10", turn=0, rest=1)
    play(state, "cw 7")          # seat 0 lays 7
    play(state, "draw")          # seat 1 draws instead of anything else ...
    play(state, "pass")
    assert state.current_player == 2 and state.observation(2)["last_laid"] is None
    assert "pickup" not in texts(state)  # ... so seat 2 may not pick up seat 0's 7
    rejected(state, "pickup", "laid no tile")


def test_e7_no_pickup_of_a_single_tile():
    # the set of 7 is out, so the laid 7 is the last one: nobody can even hold a matching tile
    state = position(["", "2 2", ""], "3-7", turn=1, last_laid=(0, "cw", 7), sets=("", "", "7"), rest=2)
    assert "pickup" not in texts(state)
    rejected(state, "pickup", "single tile")


def test_e7_pickup_needs_a_matching_tile_in_hand():
    state = position(["", "2 2", ""], "3-7", turn=1, last_laid=(0, "cw", 7), rest=2)
    assert "pickup" not in texts(state)
    rejected(state, "pickup", "you hold no 7")


def test_e7_pickup_needs_a_continuation():
    # holds a 7 but after the pick-up nothing goes on the ccw end (2) and there is no set
    state = position(["", "7 8 10", ""], "3-7", turn=1, last_laid=(0, "cw", 7), rest=2)
    assert "pickup" not in texts(state)
    rejected(state, "pickup", "no placement on the other side and no set")
    # a pair of 7s makes a set after the pick-up: that is a continuation
    state = position(["", "7 7 10", ""], "3-7", turn=1, last_laid=(0, "cw", 7), rest=2)
    assert "pickup" in texts(state)
    play(state, "pickup")
    assert texts(state) == ["discard 7"]
    play(state, "discard 7")
    assert state.to_json()["sets"][1] == [7] and state.current_player == 2


def test_e7_no_put_back_a_run_from_the_other_end_stops_before_the_picked_slot():
    # the rules text: "it is not possible to pick up a token and put it back"
    state = position(["7 1", "7 2 1 12 11 10 9 8", ""], "3-6", turn=0)
    play(state, "cw 7")
    play(state, "pickup")
    assert state.to_json()["dial"] == arc("3-6") and state.observation(1)["picked_end"] == "cw"
    # free slots 7..2; the ccw run 2 1 12 11 10 9 8 may go on, but not onto slot 7
    assert texts(state) == ["ccw 2", "ccw 2 1", "ccw 2 1 12", "ccw 2 1 12 11", "ccw 2 1 12 11 10",
                            "ccw 2 1 12 11 10 9", "ccw 2 1 12 11 10 9 8"]
    rejected(state, "ccw 2 1 12 11 10 9 8 7", "cannot be put back: a run from the ccw end stops before slot 7")
    play(state, "ccw 2 1 12 11 10 9 8")
    assert state.to_json()["dial"] == arc("8-6") and state.to_json()["hands"][1] == [7, 7]
    assert state.current_player == 2


def test_e7_no_put_back_from_the_ccw_end_either():
    state = position(["4 1", "4 10 11 12 1 2 3", ""], "5-9", turn=0)
    play(state, "ccw 4")
    play(state, "pickup")
    assert texts(state)[-1] == "cw 10 11 12 1 2 3"
    rejected(state, "cw 10 11 12 1 2 3 4", "cannot be put back")


def test_e7_no_put_back_that_would_fill_the_dial():
    # dial 3..12 plus seat 0's 1 leaves slot 2 free; after the pick-up slots 1 and 2 are free and
    # the ccw end accepts 2, then 1: but 1 is where the tile came from, so only ccw 2 is legal
    state = position(["1 5", "1 2", ""], "3-12", turn=0)
    play(state, "cw 1")
    assert "pickup" in texts(state)
    play(state, "pickup")
    assert texts(state) == ["ccw 2"]
    rejected(state, "ccw 2 1", "cannot be put back")
    play(state, "ccw 2")
    assert state.to_json()["dial"] == arc("2-12") and state.to_json()["hands"][1] == [1, 1]


# ---------------------------------------------------------------------------- E8 one move per turn
def test_e8_one_set_per_turn_and_placing_ends_the_turn():
    state = position(["4 4 4 9 9 9 1", "", ""], "6-8", rest=1)
    assert texts(state) == ["cw 9", "discard 4", "discard 9", "draw"]
    play(state, "discard 4")
    assert state.current_player == 1 and state.to_json()["hands"][0] == [1, 9, 9, 9]
    assert state.events[-1] == {"type": "discard", "seat": 0, "value": 4}


# ---------------------------------------------------------------------------- E9 turn without pile
def test_e9_without_pile_pass_replaces_draw():
    state = position(["5 9 2", "1 1 1 1 3 3", ""], "6-8", pile="", rest=2)
    assert texts(state) == ["cw 9", "ccw 5", "pass"]
    rejected(state, "draw", "pile is empty")
    play(state, "pass")
    assert state.current_player == 1 and state.observation(1)["passes"] == 1
    assert state.events[-1] == {"type": "pass", "seat": 0}


def test_e9_pickup_still_possible_without_pile():
    state = position(["", "8 8 2", ""], "6-8", pile="", turn=1, last_laid=(0, "cw", 8), rest=2)
    assert texts(state) == ["pickup", "pass"]


# ---------------------------------------------------------------------------- E10 single tile obligation
def test_e10_a_playable_single_tile_forbids_passing_but_a_set_may_be_discarded():
    state = position(["9 3 3 3 1", "", ""], "6-8", pile="", sets=("", "", "9"), rest=1)
    assert texts(state) == ["cw 9", "discard 3"]
    rejected(state, "pass", "single tile 9 that an end accepts")


def test_e10_exception_no_discard_when_the_single_tile_fills_the_dial():
    state = position(["2 3 3 3", "", ""], "3-1", pile="", sets=("", "", "2"), rest=1)
    assert texts(state) == ["cw 2"]
    rejected(state, "discard 3", "fills the last free slot")
    rejected(state, "pass", "single tile 2")


def test_e10_does_not_apply_to_a_non_single_playable_tile():
    state = position(["9 1", "", ""], "6-8", pile="", rest=1)
    assert texts(state) == ["cw 9", "pass"]


# ---------------------------------------------------------------------------- E11 contest
def test_e11_contest_after_two_passes_of_an_accepted_value_not_held():
    # ends accept 9 (cw) and 5 (ccw); seat 0 holds a 5 but no 9
    state = position(["5 1", "9 9 2", "9 9 3"], "6-8", pile="", passes=2, rest=2)
    assert texts(state) == ["ccw 5", "contest 9", "pass"]
    rejected(state, "contest 5", "you hold a 5")
    rejected(state, "contest 3", "accept 9 and 5, not 3")
    play(state, "contest 9")
    snap = state.to_json()
    assert snap["hands"][0] == [1, 5, 9] and 9 not in snap["hands"][1] and 9 not in snap["hands"][2]
    assert snap["sets"] == [[9], [], []] and snap["contested"] == [[9], [], []]
    assert state.events[-1] == {"type": "contest", "seat": 0, "value": 9, "taken": [0, 2, 2]}
    assert state.current_player == 0 and state.observation(0)["phase"] == "contested"
    assert texts(state) == ["cw 9", "ccw 5"]
    rejected(state, "pass", "after a contest")
    play(state, "cw 9")
    assert state.current_player == 1 and state.observation(1)["passes"] == 0
    accounted(state)


def test_e11_no_contest_before_two_passes_nor_of_a_discarded_value():
    state = position(["5 1", "9 9 2", "9 9 3"], "6-8", pile="", passes=1, rest=2)
    assert "contest 9" not in texts(state)
    rejected(state, "contest 9", "two previous turns to be passes")
    # 9's set is already out: the four 9s are no longer there to be contested (a choice, see the rules page)
    state = position(["5 1", "9 2", "3"], "6-8", pile="", passes=2, sets=("", "", "9"), rest=2)
    assert "contest 9" not in texts(state)
    rejected(state, "contest 9", "already discarded")


def test_e11_no_contest_that_would_empty_an_opponents_hand():
    state = position(["1", "9 9", "9 9 3"], "6-8", pile="", passes=2, rest=2)
    assert "contest 9" not in texts(state)
    assert texts(state) == ["contest 5", "pass"]
    rejected(state, "contest 9", "would empty an opponent")


def test_e11_contest_of_the_last_free_slot_places_at_once_and_refills():
    state = position(["1 5", "2 2", "2 2 4"], "3-1", pile="", passes=2, rest=1)
    assert texts(state) == ["contest 2", "pass"]
    play(state, "contest 2")
    kinds = [e["type"] for e in state.events[-3:]]
    assert kinds == ["contest", "place", "refill"]
    assert state.events[-2] == {"type": "place", "seat": 0, "end": "cw", "tiles": [2], "auto": True}
    snap = state.to_json()
    assert len(snap["dial"]) == 1 and len(snap["pile"]) == 11 and snap["sets"][0] == [2]
    assert state.current_player == 1
    accounted(state)


def test_e11_contest_only_when_the_pile_is_empty():
    state = position(["1", "9 9", "9 9 3"], "6-8", passes=2, rest=2)
    assert not any(t.startswith("contest") for t in texts(state))
    rejected(state, "contest 5", "pile has tiles")


# ---------------------------------------------------------------------------- E12 forced play
def test_e12_three_passes_force_the_next_player_to_place_or_contest():
    state = position(["9 10 3 3 3", "", "5 11"], "6-8", pile="", passes=2, turn=2, rest=1)
    assert texts(state) == ["ccw 5", "contest 9", "pass"]
    play(state, "pass")
    assert state.current_player == 0 and state.observation(0)["forced"] is True
    assert state.observation(0)["passes"] == 3
    # forced: any placement, or a contest; no pass, no discard
    assert texts(state) == ["cw 9", "cw 9 10", "contest 5"]
    rejected(state, "pass", "forced play")
    rejected(state, "discard 3", "forced play")
    play(state, "cw 9")
    assert state.observation(1)["passes"] == 0 and state.observation(1)["forced"] is False


def test_e12_forced_player_who_can_do_nothing_passes_automatically_and_the_next_is_forced():
    # ends accept 9 and 5. Seat 0 holds neither; contesting 9 would empty seat 1 (only 9s),
    # contesting 5 would empty seat 2 (only 5s): seat 0 passes automatically, seat 1 is forced.
    state = position(["", "9 9 9 9", "5 5 5 5"], "6-8", pile="", passes=2, turn=2, rest=0)
    assert texts(state) == ["ccw 5", "discard 5", "pass"]
    play(state, "pass")
    assert state.events[-2:] == [{"type": "pass", "seat": 2}, {"type": "pass", "seat": 0, "auto": True}]
    assert state.current_player == 1
    obs = state.observation(1)
    assert obs["forced"] is True and obs["passes"] == 4
    assert texts(state) == ["cw 9"]


def test_e12_a_draw_resets_the_pass_count():
    state = position(["1", "", ""], "6-8", pile="2", passes=2, rest=1)
    play(state, "draw")
    assert state.observation(0)["passes"] == 0
    play(state, "pass")
    assert state.observation(1)["passes"] == 0


def test_e12_draw_then_pass_is_a_move_not_a_pass():
    # the rules text: "drawing is considered a move made". Two passes, then seat 0 draws the last tile
    # and passes: the count is 0, so seat 1 may not contest (it would need two passes before him)
    state = position(["1", "1 2", ""], "6-8", pile="3", passes=2, rest=2)
    play(state, "draw")
    assert texts(state) == ["pass"]
    play(state, "pass")
    obs = state.observation(1)
    assert obs["pile"] == 0 and obs["passes"] == 0 and obs["forced"] is False
    assert texts(state) == ["pass"]  # no 9 or 5 to place, no contest
    play(state, "pass")
    play(state, "pass")  # seat 2 holds 9s and 5s but may pass: the pile is empty, no single tiles
    assert state.observation(0)["passes"] == 2 and "contest 9" in texts(state)


# ---------------------------------------------------------------------------- E13 round end
def test_e13_round_ends_when_a_discard_empties_the_hand():
    state = position(["4 4 4", "", ""], "6-8", rest=1)
    play(state, "discard 4")
    end = last_event(state, "round_end")
    assert end["emptied"] == 0 and end["round"] == 1
    assert state.round == 2 and state.current_player == 1


def test_e13_round_ends_on_the_placement_that_empties_the_hand_even_if_it_fills_the_dial():
    state = position(["2", "", ""], "3-1", rest=1)
    play(state, "cw 2")
    assert "refill" not in [e["type"] for e in state.events]
    assert last_event(state, "round_end")["emptied"] == 0 and state.round == 2


# ---------------------------------------------------------------------------- E14 rounds and scoring
def test_e14_bga_scoring_everyone_scores_his_sets_the_emptier_adds_three():
    state = position(["9", "", ""], "6-8", sets=("1", "2 3", ""), scores=(1, 2, 0), rest=1)
    play(state, "cw 9")
    end = last_event(state, "round_end")
    assert end["points"] == [4, 2, 0] and end["scores"] == [5, 4, 0]
    assert not state.is_terminal() and state.round == 2 and state.current_player == 1
    assert state.observation(1)["scores"] == [5, 4, 0]


def test_e14_classic_scoring_only_the_emptier_scores_his_sets():
    state = position(["9", "", ""], "6-8", sets=("1", "2 3", ""), scores=(1, 2, 0), rest=1,
                     options={"scoring": "classic"})
    play(state, "cw 9")
    assert last_event(state, "round_end")["points"] == [1, 0, 0]
    assert state.observation(0)["scores"] == [2, 2, 0]


def test_e14_game_ends_when_the_target_is_reached_ranking_by_points():
    state = position(["9", "", ""], "6-8", sets=("1", "2", ""), scores=(5, 6, 0), rest=1)
    play(state, "cw 9")
    assert state.is_terminal() and state.current_player is None and state.legal_actions() == []
    assert state.result() == {"ranking": [0, 1, 2], "scores": [9, 7, 0], "ended_by": "rules"}
    assert state.events[-1] == {"type": "game_end", "ended_by": "rules", "scores": [9, 7, 0],
                                "ranking": [0, 1, 2]}
    rejected(state, "draw", "game is over")


def test_e14_target_13():
    state = position(["9", "", ""], "6-8", sets=("1", "2", ""), scores=(5, 6, 0), rest=1,
                     options={"target": 13})
    play(state, "cw 9")
    assert not state.is_terminal() and state.observation(0)["scores"] == [9, 7, 0]
    state = position(["9", "", ""], "6-8", sets=("1", "", ""), scores=(9, 6, 0), rest=1,
                     options={"target": 13})
    play(state, "cw 9")
    assert state.is_terminal() and state.result()["scores"] == [13, 6, 0]


def test_e14_classic_game_end():
    state = position(["9", "", ""], "6-8", sets=("1", "2", ""), scores=(6, 6, 0), rest=1,
                     options={"scoring": "classic"})
    play(state, "cw 9")
    assert state.result() == {"ranking": [0, 1, 2], "scores": [7, 6, 0], "ended_by": "rules"}


def test_e14_tie_broken_for_the_emptier_other_ties_shared():
    # seat 0 empties with no set: 4 + 3 = 7; seat 1 reaches 7 with a set; seats 1 and 2 ...
    state = position(["9", "", ""], "6-8", sets=("", "2", ""), scores=(4, 6, 0), rest=1)
    play(state, "cw 9")
    assert state.result() == {"ranking": [0, 1, 2], "scores": [7, 7, 0], "ended_by": "rules"}
    # the emptier loses a tie he is not part of; equal non-emptiers share their rank
    state = position(["", "", "9"], "6-8", turn=2, sets=("", "", ""), scores=(8, 8, 0), rest=1)
    play(state, "cw 9")
    assert state.result() == {"ranking": [0, 0, 2], "scores": [8, 8, 3], "ended_by": "rules"}


# ---------------------------------------------------------------------------- E15 one round
def test_e15_one_round_scores_sets_plus_three_and_ends():
    state = position(["9", "", ""], "6-8", sets=("1", "2 3", ""), rest=1, options={"mode": "one_round"})
    play(state, "cw 9")
    assert state.result() == {"ranking": [0, 1, 2], "scores": [4, 2, 0], "ended_by": "rules"}


def test_e15_one_round_emptier_may_lose_and_wins_ties():
    state = position(["9", "", ""], "6-8", sets=("", "2 3 4 5", ""), rest=1, options={"mode": "one_round"})
    play(state, "cw 9")
    assert state.result()["ranking"] == [1, 0, 2]
    state = position(["9", "", ""], "6-8", sets=("", "2 3 4", ""), rest=1, options={"mode": "one_round"})
    play(state, "cw 9")
    assert state.result() == {"ranking": [0, 1, 2], "scores": [3, 3, 0], "ended_by": "rules"}


# ---------------------------------------------------------------------------- E16 contest point
@pytest.mark.parametrize("contest_point,expected", [(True, [2, 3, 0]), (False, [1, 3, 0])])
def test_e16_contest_point_option(contest_point, expected):
    # seat 0 has a contested set (3) and a discarded one (1); seat 1 empties his hand
    state = position(["", "9", ""], "6-8", turn=1, sets=("1 3", "", ""), contested=("3", "", ""), rest=2,
                     options={"mode": "one_round", "contest_point": contest_point})
    play(state, "cw 9")
    assert state.result()["scores"] == expected


def test_e16_contest_point_false_in_rounds_mode_too():
    state = position(["9", "", ""], "6-8", sets=("1 3", "", ""), contested=("3", "", ""), rest=2,
                     options={"contest_point": False})
    play(state, "cw 9")
    assert last_event(state, "round_end")["points"] == [4, 0, 0]


# ---------------------------------------------------------------------------- C3 turn cap
def test_c3_turn_cap_ranks_by_points_then_fewer_tiles_ties_shared():
    state = position(["1 1", "2 2", "3 3"], "6-8", sets=("4", "5", "10"), scores=(2, 2, 3), rest=None,
                     pile=None, turns=99, options={"max_turns": 100})
    # the rest of the tiles are in the pile: hands 2, 2, 2 tiles
    play(state, "draw")
    play(state, "pass")  # the 100th turn ends: the game is cut off
    result = state.result()
    assert result["ended_by"] == "turn_cap"
    # the round in progress counts its sets (bga): scores 3, 3, 4; seat 0 holds 3 tiles, seat 1 2
    assert result["scores"] == [3, 3, 4] and result["ranking"] == [2, 1, 0]
    assert state.events[-1]["type"] == "game_end" and state.events[-1]["ended_by"] == "turn_cap"


@pytest.mark.parametrize("scoring,expected", [("bga", [5, 1, 0]), ("classic", [2, 0, 0])])
def test_c3_a_round_ending_on_the_capped_turn_is_scored_once(scoring, expected):
    # seat 0 discarded two sets this round, seat 1 one; seat 0 empties his hand on turn 100
    state = position(["5", "1 2", "9"], "6-8", sets=("3 4", "10", ""), turns=99,
                     options={"max_turns": 100, "scoring": scoring})
    play(state, "ccw 5")
    end = last_event(state, "round_end")
    assert end["points"] == expected and end["scores"] == expected
    # the cap does not score the finished round again (it was 7, 2, 0 in bga)
    # classic: seats 1 and 2 tie on 0 points; seat 2 holds fewer tiles (1 against 2)
    assert state.result() == {"ranking": [0, 1, 2] if scoring == "bga" else [0, 2, 1],
                              "scores": expected, "ended_by": "turn_cap"}
    assert state.events[-1] == {"type": "game_end", "ended_by": "turn_cap", "scores": expected,
                                "ranking": state.result()["ranking"]}
    assert [e["type"] for e in state.events[-2:]] == ["round_end", "game_end"]  # no new deal


def test_c3_a_round_reaching_the_target_on_the_capped_turn_ends_by_the_rules():
    state = position(["5", "1 2", "9"], "6-8", sets=("3 4", "10", ""), scores=(3, 6, 0), turns=99,
                     options={"max_turns": 100})
    play(state, "ccw 5")
    assert state.result() == {"ranking": [0, 1, 2], "scores": [8, 7, 0], "ended_by": "rules"}


def test_c3_turn_cap_remaining_ties_are_shared():
    state = position(["1 1", "2 2", "3 3"], "6-8", pile=None, turns=4, options={"max_turns": 5}, turn=2)
    play(state, "draw")
    play(state, "pass")
    assert state.result() == {"ranking": [0, 0, 2], "scores": [0, 0, 0], "ended_by": "turn_cap"}


# ---------------------------------------------------------------------------- options and formats
@pytest.mark.parametrize("options,names", [
    ({"mode": "forever"}, ["mode", "'rounds', 'one_round'"]),
    ({"target": 8}, ["target", "7, 13"]),
    ({"scoring": "x"}, ["scoring", "'bga', 'classic'"]),
    ({"contest_point": 1}, ["contest_point", "true, false"]),
    ({"max_turns": 0}, ["max_turns", "integer from 1"]),
])
def test_invalid_options_name_the_option_and_the_allowed_values(options, names):
    with pytest.raises(InvalidOptions) as info:
        GAME.new_state(3, 1, options)
    for name in names:
        assert name in str(info.value)


def test_two_or_four_players_are_refused():
    for n in (2, 4):
        with pytest.raises(InvalidOptions, match="3 players"):
            GAME.new_state(n, 1, {})


@pytest.mark.parametrize("text,action", [
    ("cw 5 6 7", {"type": "place", "end": "cw", "tiles": [5, 6, 7]}),
    ("ccw 4 3", {"type": "place", "end": "ccw", "tiles": [4, 3]}),
    ("discard 4", {"type": "discard", "value": 4}),
    ("contest 9", {"type": "contest", "value": 9}),
    ("draw", {"type": "draw"}), ("pickup", {"type": "pickup"}), ("pass", {"type": "pass"}),
])
def test_text_form_round_trip(text, action):
    assert GAME.parse_action(text) == action and GAME.format_action(action) == text


@pytest.mark.parametrize("text", ["", "jump", "cw", "cw x", "discard", "discard 13", "draw 2", "cw 0"])
def test_unreadable_text_is_an_invalid_action(text):
    with pytest.raises(InvalidAction):
        GAME.parse_action(text)


def test_malformed_actions_are_invalid_with_a_reason():
    state = position(["9", "", ""], "6-8", rest=1)
    for bad, why in [({"type": "place", "end": "up", "tiles": [9]}, "end"),
                     ({"type": "place", "end": "cw", "tiles": []}, "tiles"),
                     ({"type": "discard", "value": "4"}, "value"),
                     ({"type": "draw", "extra": 1}, "keys"),
                     ({"type": "fly"}, "unknown action type")]:
        with pytest.raises(InvalidAction, match=why):
            state.apply(bad)


def test_snapshot_round_trip_and_bad_snapshots():
    state = GAME.new_state(3, 5, {"mode": "one_round"})
    snap = state.to_json()
    assert GAME.state_from_json(snap).to_json() == snap
    broken = dict(snap, hands=[[1], [], []])
    with pytest.raises(InvalidSnapshot, match="four tiles of each value"):
        GAME.state_from_json(broken)
    with pytest.raises(InvalidSnapshot):
        GAME.state_from_json({"game": "crisps"})
    with pytest.raises(InvalidSnapshot, match="dial"):
        GAME.state_from_json(dict(snap, dial=[3, 5]))


def test_snapshot_in_phase_picked_needs_room_for_the_picked_slot_and_a_placement():
    with pytest.raises(InvalidSnapshot, match="at most 10 tiles"):
        position(["1 1", "", ""], "3-1", phase="picked", picked_end="cw")
    state = position(["1 1 2", "", ""], "3-12", phase="picked", picked_end="cw")
    assert texts(state) == ["ccw 2"]


def test_render_shows_the_table():
    state = position(["9 9", "", ""], "11-2", sets=("", "4", ""), scores=(1, 2, 3), rest=1)
    text = state.render()
    assert "arc 11..2" in text and "seat 0" in text and "score  3" in text and "sets 4" in text
    assert ">seat 0" in text


def test_snapshot_pickup_candidate_must_lie_at_its_end():
    snap = position(["7 1", "7 2 11", "12"], "3-6", rest=2).to_json()
    with pytest.raises(InvalidSnapshot, match="last_laid"):
        GAME.state_from_json(dict(snap, last_laid={"seat": 0, "end": "cw", "value": 5}))
    ok = dict(snap, last_laid={"seat": 2, "end": "ccw", "value": 3})
    assert GAME.state_from_json(ok).observation(0)["last_laid"] == {"seat": 2, "end": "ccw", "value": 3}


# ---------------------------------------------------------------------------- C3 + E7 (rulings revised)
@pytest.mark.parametrize("scoring,expected", [("bga", [5, 1, 0]), ("classic", [2, 0, 0])])
def test_c3_a_round_that_ends_on_the_capped_turn_is_scored_once(scoring, expected):
    # seat 0 discarded two sets this round, seat 1 one; seat 0 empties his hand on the 100th turn
    state = position(["9", "1 1", "2 2"], "6-8", sets=("4 5", "10", ""), turns=99,
                     options={"max_turns": 100, "scoring": scoring, "target": 13})
    play(state, "cw 9")
    round_end = last_event(state, "round_end")
    assert round_end["points"] == expected
    # bga: 2 sets + 3 for emptying = 5, not 7 (the sets counted again as "the round in progress")
    assert state.result() == {"ranking": [0, 1, 2] if scoring == "bga" else [0, 1, 1],
                              "scores": expected, "ended_by": "turn_cap"}
    assert state.events[-1]["type"] == "game_end" and state.events[-1]["scores"] == expected


def test_c3_the_round_in_progress_still_counts_when_the_cap_falls_mid_round():
    state = position(["9 1", "1 1", "2 2"], "6-8", sets=("4 5", "10", ""), turns=99,
                     options={"max_turns": 100})
    play(state, "cw 9")  # seat 0 keeps a tile: the round is in progress when the cap falls
    assert state.result() == {"ranking": [0, 1, 2], "scores": [2, 1, 0], "ended_by": "turn_cap"}


def test_e7_after_a_pickup_a_run_from_the_other_end_may_not_put_the_tile_back():
    # dial 1-10, free slots 11 and 12; seat 0 lays 11, seat 1 picks it up: the ccw end accepts 12,
    # then 11 would land in the slot the picked tile came from (E7: no putting back)
    state = position(["11 5", "11 12 3", ""], "1-10", turn=0, rest=2)
    play(state, "cw 11")
    assert "pickup" in texts(state)
    play(state, "pickup")
    assert texts(state) == ["ccw 12"]
    rejected(state, "ccw 12 11", "cannot be put back")
    play(state, "ccw 12")
    assert state.to_json()["dial"] == arc("12-10") and state.current_player == 2


def test_e7_the_put_back_rule_also_holds_from_the_ccw_side():
    # dial 3-12 (free 1 and 2); seat 0 lays ccw 2, seat 1 picks it up and may place cw 1 but not cw 1 2
    state = position(["2 5", "2 1 7", ""], "3-12", turn=0, rest=2)
    play(state, "ccw 2")
    play(state, "pickup")
    assert texts(state) == ["cw 1"]
    rejected(state, "cw 1 2", "cannot be put back")
