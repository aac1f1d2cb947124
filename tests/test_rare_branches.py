"""Rare rule branches: option combinations, an unusual pick-up continuation, malformed plays
refused with IllegalAction (never another exception), and the reasons given for a refused draw,
pass or discard. Positions come from the rule-test helpers (explicit positions, public API)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from harness.games import IllegalAction, InvalidAction, get_game

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_crisps_rules as kr  # noqa: E402
import test_epizodiak_rules as er  # noqa: E402

EPI = get_game("epizodiak")
CRISPS = get_game("crisps")


# ---------------------------------------------------------------- Epizodiak: scoring options
def end_round(options: dict, contested=("", "", "")):
    """Seat 0 empties its hand with ``cw 7``; sets this round: seat 0 one (4), seat 1 one (5)."""
    state = er.position(["7", "1 2", ""], "3-6", sets=("4", "5", ""), contested=contested, options=options,
                        rest=2)
    er.play(state, "cw 7")
    return state


def test_classic_scoring_with_one_round_is_ignored_everyone_scores_sets_and_the_emptier_adds_3():
    state = end_round({"mode": "one_round", "scoring": "classic"})
    assert state.is_terminal()
    result = state.result()
    assert result["scores"] == [4, 1, 0]
    assert result["ranking"] == [0, 1, 2]


def test_classic_scoring_in_rounds_mode_scores_only_the_emptiers_sets():
    state = end_round({"scoring": "classic"})
    assert not state.is_terminal()
    assert state.to_json()["scores"] == [1, 0, 0]


def test_bga_scoring_in_rounds_mode_everyone_scores_sets_and_the_emptier_adds_3():
    state = end_round({})
    assert not state.is_terminal()
    assert state.to_json()["scores"] == [4, 1, 0]


def test_contest_point_false_in_one_round_a_contested_set_scores_nothing():
    state = end_round({"mode": "one_round", "contest_point": False}, contested=("4", "", ""))
    assert state.result()["scores"] == [3, 1, 0]
    state = end_round({"mode": "one_round", "contest_point": True}, contested=("4", "", ""))
    assert state.result()["scores"] == [4, 1, 0]


def test_one_round_ignores_the_target():
    state = end_round({"mode": "one_round", "target": 13})
    assert state.is_terminal() and state.result()["ended_by"] != "turn_cap"


# ---------------------------------------------------------------- Epizodiak: pick-up continuation
def test_a_pickup_whose_only_continuation_is_a_set_of_another_value():
    """Seat 1 holds a 7 (pick-up allowed) but nothing for the other (ccw) end and no third 7: its
    only continuation is discarding its set of 4s, and that is enough to allow the pick-up."""
    state = er.position(["", "7 4 4 4 10", ""], "3-7", turn=1, last_laid=(0, "cw", 7), rest=2)
    assert "pickup" in er.texts(state)
    er.play(state, "pickup")
    assert er.texts(state) == ["discard 4"]
    er.rejected(state, "cw 7", "other \\(ccw\\) end")
    er.rejected(state, "discard 7", "a set needs three")
    er.play(state, "discard 4")
    snap = state.to_json()
    assert snap["sets"][1] == [4] and sorted(snap["hands"][1]) == [7, 7, 10] and state.current_player == 2


# ---------------------------------------------------------------- Epizodiak: reasons for refusals
def test_draw_refused_when_the_pile_is_empty():
    state = er.position(["5 1", "9 2", "9 3"], "6-8", pile="", rest=2)
    er.rejected(state, "draw", "the pile is empty: no drawing")


def test_draw_and_pass_refused_after_a_contest():
    state = er.position(["5 1", "9 9 2", "9 9 3"], "6-8", pile="", passes=2, rest=2)
    er.play(state, "contest 9")
    er.rejected(state, "draw", "after a contest you must place or discard a set")
    er.rejected(state, "pass", "after a contest you must place or discard a set, not pass")


def test_draw_and_pass_refused_after_a_pickup():
    state = er.position(["", "7 4 4 4 10", ""], "3-7", turn=1, last_laid=(0, "cw", 7), rest=2)
    er.play(state, "pickup")
    er.rejected(state, "draw", "after a pick-up you must place on the other side or discard a set")
    er.rejected(state, "pass", "after a pick-up you must place on the other side or discard a set, not pass")


def test_second_draw_refused_and_pass_refused_while_the_pile_has_tiles():
    state = er.position(["1 2", "3 3", ""], "6-8", pile="10 10 11", rest=2)
    er.rejected(state, "pass", "no passing while the pile has tiles")
    er.play(state, "draw")
    er.rejected(state, "draw", "you already drew this turn")


def test_discard_and_pass_refused_in_forced_play():
    state = er.position(["4 4 4 5", "1 2", "10"], "6-8", pile="", passes=3, rest=1)
    er.rejected(state, "discard 4", "forced play after three passes")
    er.rejected(state, "pass", "forced play after three passes")
    assert er.texts(state) == ["ccw 5", "ccw 5 4", "contest 9"]  # place or contest (E12)


def test_the_reason_lists_the_legal_actions():
    state = er.position(["1 2", "3 3", ""], "6-8", pile="10 10 11", rest=2)
    with pytest.raises(IllegalAction, match=r"\(legal: .*draw"):
        er.play(state, "pass")


# ---------------------------------------------------------------- Crisps: malformed plays
@pytest.mark.parametrize("cards", [["2"] * 5, ["Q"] * 5, ["2", "3"], ["2", "2", "3"], ["10", "Q", "Q", "2", "2"],
                                   ["9", "10", "Q"], ["2", "2", "3", "3", "4"]])
def test_a_malformed_play_is_an_illegal_action_and_changes_nothing(cards):
    state = CRISPS.new_state(2, 3, {})
    before = state.to_json()
    with pytest.raises(IllegalAction):
        state.apply({"type": "play", "cards": cards})
    assert state.to_json() == before


def test_five_of_a_rank_is_refused_as_no_play_even_when_held():
    """Five cards of one rank cannot be held (four per rank); the refusal is still IllegalAction."""
    state = kr.position("2 2 2 2 5", "9", to_move=0)
    with pytest.raises(IllegalAction, match="only four cards of each rank") as info:
        state.apply({"type": "play", "cards": ["2"] * 5})
    assert not isinstance(info.value, InvalidAction)  # well formed, just not a play
    with pytest.raises(IllegalAction, match="you hold 1 card of rank 5, the play needs 2"):
        state.apply({"type": "play", "cards": ["5", "5"]})


def test_random_card_lists_raise_only_illegal_action():
    """Any list of card names, legal or not, is applied or refused with IllegalAction."""
    rng = random.Random(17)
    names = ["2", "3", "4", "5", "6", "7", "8", "9", "10", "Q", "J", "K", "1", ""]
    for i in range(400):
        state = CRISPS.new_state(2, i, {"jacks": bool(i % 2)})
        cards = [rng.choice(names) for _ in range(rng.randint(0, 9))]
        try:
            state.apply({"type": "play", "cards": cards})
        except IllegalAction:
            pass
