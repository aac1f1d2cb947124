"""Crisps rule scenarios (rulings K1-K7 and C3 of docs/rules/crisps.md), each from an explicit position.

Every scenario checks the legal actions offered, that illegal ones are rejected with a reason,
and the state after the move. Positions are built by :func:`position` from a readable
description; the rest of the 40 cards is made up automatically (4 removed, the rest played).
"""

from __future__ import annotations

from collections import Counter

import pytest

from harness.games import IllegalAction, InvalidAction, InvalidOptions, InvalidSnapshot, get_game
from harness.games.crisps.plays import TRIPLE, may_follow

GAME = get_game("crisps")
ALL_RANKS = ["2", "3", "4", "5", "6", "7", "8", "9", "10"]


def cards(text: str) -> list[str]:
    return text.split()


def play(text: str) -> dict:
    return {"type": "play", "cards": cards(text)}


PASS = {"type": "pass"}
TAKE_OFFER = {"type": "take", "source": "offer"}
TAKE_BLIND = {"type": "take", "source": "blind"}


def position(hand0: str, hand1: str, *, table: str | None = None, by: int = 1, to_move: int | None = None,
             offer: str | None = None, deck: str = "", played: str = "", removed: str | None = None,
             scores=(0, 0), deal: int = 1,
             starter: int = 0, last_started=(1, -1), turns: int = 0, options: dict | None = None,
             phase: str = "play", passer: int | None = None):
    """A state from a readable description.

    ``table`` is the play to beat, made by seat ``by``; ``to_move`` defaults to the follower
    (``by``'s opponent), or to seat 0 when there is no table play.
    ``deck`` lists the blind deck top first. Cards not named anywhere are the 4 ``removed`` ones
    (by default the 4 lowest left over) or counted as played earlier in this deal.
    """
    options = dict(options or {})
    top = "J" if options.get("jacks") else "Q"
    base = GAME.new_state(2, 0, options).to_json()
    named = Counter(cards(hand0) + cards(hand1) + cards(deck) + cards(played) + cards(table or "")
                    + ([offer] if offer else []))
    rest = []
    for r in ALL_RANKS + [top]:
        left = 4 - named[r]
        assert left >= 0, f"more than 4 cards of rank {r} in the description"
        rest += [r] * left
    if removed is None:
        removed_cards = rest[:4]
    else:
        removed_cards = cards(removed)
        for c in removed_cards:
            rest.remove(c)
        rest = removed_cards + rest
    earlier = rest[4:]
    assert len(removed_cards) == 4, "describe at most 36 cards"
    if to_move is None:
        to_move = 1 - by if table else 0
    base.update({
        "hands": [cards(hand0), cards(hand1)],
        "deck": cards(deck),
        "removed": removed_cards,
        "offer": offer,
        "played": earlier + cards(played) + cards(table or ""),
        "table": {"seat": by, "cards": cards(table)} if table else None,
        "current_player": to_move,
        "leader": by if table else to_move,
        "phase": phase,
        "passer": passer,
        "scores": list(scores),
        "deal": deal,
        "starter": starter,
        "last_started": list(last_started),
        "turns": turns,
        "events": [],
    })
    return GAME.state_from_json(base)


def plays_offered(state) -> list[str]:
    return [" ".join(a["cards"]) if a["type"] == "play" else GAME.format_action(a) for a in state.legal_actions()]


def assert_illegal(state, action, reason: str):
    before = state.to_json()
    with pytest.raises(IllegalAction, match=reason):
        state.apply(action)
    assert state.to_json() == before, "a rejected action changed the state"


def hand(state, seat: int) -> list[str]:
    return state.to_json()["hands"][seat]


# --------------------------------------------------------------------- K1: the deal
def test_deal_twelve_each_four_removed_one_offer_eleven_blind():
    state = GAME.new_state(2, 11, {})
    snap = state.to_json()
    assert [len(h) for h in snap["hands"]] == [12, 12]
    assert len(snap["removed"]) == 4 and snap["offer"] is not None and len(snap["deck"]) == 11
    every = snap["hands"][0] + snap["hands"][1] + snap["removed"] + [snap["offer"]] + snap["deck"]
    assert Counter(every) == Counter({r: 4 for r in ALL_RANKS + ["Q"]})
    obs = state.observation(state.current_player)
    assert obs["hand_sizes"] == [12, 12] and obs["deck"] == 11 and obs["removed"] == 4
    assert obs["offer"] == snap["offer"] and obs["played"] == [] and obs["table"] is None
    assert state.events[0] == {"type": "deal", "deal": 1, "starter": state.current_player,
                               "offer": snap["offer"], "deck": 11, "hand_sizes": [12, 12]}
    # first deal: a random starter (K2), both seats occur over seeds
    assert {GAME.new_state(2, s, {}).current_player for s in range(20)} == {0, 1}


# --------------------------------------------------------------------- K3 / K4: plays and following
def test_leader_may_lead_every_kind_and_may_not_pass():
    state = position("3 3 4 4 5 5 Q Q Q 7 7 7 7", "2 2")
    offered = plays_offered(state)
    for p in ("3", "Q", "3 3", "3 4 5", "3 3 4 4", "3 3 4 4 5 5", "4 4 5 5", "Q Q", "Q Q Q", "7 7 7", "7 7 7 7"):
        assert p in offered, p
    assert "pass" not in offered
    assert "3 4" not in offered and "5 6 7" not in offered  # no 6 in hand
    assert_illegal(state, PASS, "leader of a trick must play")
    assert_illegal(state, play("3 4"), "no play")
    assert_illegal(state, play("8"), "you hold 0 cards of rank 8")
    state.apply(play("3 4 5"))
    assert hand(state, 0) == cards("3 4 5 7 7 7 7 Q Q Q")
    assert state.current_player == 1
    assert state.observation(1)["table"] == {"seat": 0, "cards": ["3", "4", "5"], "kind": "run"}


def test_pair_follows_an_equal_pair():
    state = position("2", "6 6 7 7 9", table="7 7", by=0)
    assert plays_offered(state) == ["7 7", "pass"]
    assert_illegal(state, play("6 6"), "equal or higher rank")
    assert_illegal(state, play("9"), "same type and length")
    state.apply(play("7 7"))
    assert state.current_player == 0 and hand(state, 1) == cards("6 6 9")
    assert state.to_json()["table"] == {"seat": 1, "cards": ["7", "7"]}


def test_runs_follow_with_same_length_and_equal_or_higher_rank():
    state = position("2", "3 4 5 6 7 8", table="4 5 6", by=0)
    assert plays_offered(state) == ["4 5 6", "5 6 7", "6 7 8", "pass"]
    assert_illegal(state, play("3 4 5"), "equal or higher rank")
    assert_illegal(state, play("5 6 7 8"), "same type and length")
    state.apply(play("5 6 7"))
    assert hand(state, 1) == cards("3 4 8")


def test_a_queen_is_never_in_a_run():
    state = position("9 10 Q 8", "2 3")
    assert "9 10 Q" not in plays_offered(state) and "8 9 10" in plays_offered(state)
    assert_illegal(state, play("9 10 Q"), "Queen is never part of a run")
    follow = position("2", "9 9 10 10 Q Q", table="8 8 9 9", by=0)
    assert plays_offered(follow) == ["9 9 10 10", "pass"]
    assert_illegal(follow, play("10 10 Q Q"), "Queen is never part of a run of pairs")


def test_runs_of_pairs():
    state = position("2", "2 2 3 3 4 4 5 5 6 6", table="3 3 4 4", by=0)
    assert plays_offered(state) == ["3 3 4 4", "4 4 5 5", "5 5 6 6", "pass"]
    assert_illegal(state, play("2 2 3 3"), "equal or higher rank")
    assert_illegal(state, play("3 3 4 4 5 5"), "same type and length")
    assert_illegal(state, play("4 5 6"), "same type and length")
    state.apply(play("5 5 6 6"))
    assert hand(state, 1) == cards("2 2 3 3 4 4")
    lead = position("2 2 3 3 4 4", "5")
    assert {"2 2 3 3", "3 3 4 4", "2 2 3 3 4 4", "2 3 4"} <= set(plays_offered(lead))
    assert_illegal(lead, play("2 2 4 4"), "no play")


def test_special_follows_a_single_queen_but_not_a_single_ten():
    state = position("2", "8 8 8 Q", table="Q", by=0)
    assert plays_offered(state) == ["Q", "8 8 8", "pass"]
    state.apply(play("8 8 8"))
    assert hand(state, 1) == ["Q"]
    assert state.observation(0)["table"]["kind"] == "triple"
    ten = position("2", "8 8 8 Q", table="10", by=0)
    assert plays_offered(ten) == ["Q", "pass"]
    assert_illegal(ten, play("8 8 8"), "only a play that contains a Queen")


def test_a_pair_of_queens_contains_a_queen():
    state = position("2", "3 3 3", table="Q Q", by=0)
    assert plays_offered(state) == ["3 3 3", "pass"]
    state.apply(play("3 3 3"))
    assert state.to_json()["scores"] == [0, 1]  # the last cards: seat 1 scores, a new deal begins
    assert {"type": "play", "seat": 1, "cards": ["3", "3", "3"], "kind": "triple"} in state.events


def test_four_of_a_kind_follows_three_queens_and_a_lower_triple_does_not():
    state = position("2", "4 4 4 4 2 2 2", table="Q Q Q", by=0)
    assert plays_offered(state) == ["4 4 4 4", "pass"]
    assert_illegal(state, play("2 2 2"), "special follows a special only with more cards")
    assert_illegal(state, play("4 4 4"), "special follows a special only with more cards")
    state.apply(play("4 4 4 4"))
    assert hand(state, 1) == cards("2 2 2")


def test_three_of_a_kind_needs_a_strictly_higher_rank():
    # Only four 9s exist, so 9 9 9 over 9 9 9 is checked on the rule itself and on a claimed play.
    assert may_follow((TRIPLE, 3, 9), (TRIPLE, 3, 9)) is not None
    assert may_follow((TRIPLE, 3, 10), (TRIPLE, 3, 9)) is None
    state = position("2", "9 10 10 10", table="9 9 9", by=0)
    assert plays_offered(state) == ["10 10 10", "pass"]
    assert_illegal(state, play("9 9 9"), "strictly higher rank")
    state.apply(play("10 10 10"))
    assert hand(state, 1) == ["9"] and state.observation(0)["table"]["cards"] == ["10", "10", "10"]
    quad = position("2", "3 3 3 10 10 10 10", table="9 9 9 9", by=0)
    assert plays_offered(quad) == ["10 10 10 10", "pass"]
    assert_illegal(quad, play("3 3 3"), "more cards")


def test_an_ordinary_never_follows_a_special():
    state = position("2", "Q Q 5 6 7 9", table="3 3 3", by=0)
    assert plays_offered(state) == ["pass"]
    assert_illegal(state, play("Q Q"), "ordinary play never follows a special")
    assert_illegal(state, play("9"), "ordinary play never follows a special")


def test_jacks_are_in_runs_and_let_a_special_follow_a_run_containing_them():
    opts = {"jacks": True}
    lead = position("9 10 J 8", "2 3", options=opts)
    assert {"9 10 J", "8 9 10 J", "J"} <= set(plays_offered(lead))
    assert_illegal(lead, play("9 10 Q"), "unknown card 'Q'")
    lead.apply(play("9 10 J"))
    assert lead.observation(1)["table"] == {"seat": 0, "cards": ["9", "10", "J"], "kind": "run"}
    state = position("2", "5 5 5 10 J", table="8 9 10 J", by=0, options=opts,
                     offer="4")
    assert plays_offered(state) == ["5 5 5", "pass"]
    state.apply(play("5 5 5"))
    assert hand(state, 1) == cards("10 J")
    no_jack = position("2", "5 5 5", table="7 8 9 10", by=0, options=opts, offer="4")
    assert plays_offered(no_jack) == ["pass"]
    assert_illegal(no_jack, play("5 5 5"), "contains a Queen \\(or Jack")
    pairs = position("2", "10 10 J J", table="9 9 10 10", by=0, options=opts, offer="4")
    assert plays_offered(pairs) == ["10 10 J J", "pass"]


# --------------------------------------------------------------------- K5: the pass, takes, the offer
def test_pass_ends_the_trick_the_last_player_chooses_offer_and_passer_gets_blind():
    state = position("3 4", "5 6", table="8", by=0, offer="9", deck="7 2 10")
    assert plays_offered(state) == ["pass"]
    state.apply(PASS)
    assert state.current_player == 0
    assert state.legal_actions() == [TAKE_OFFER, TAKE_BLIND]
    obs = state.observation(0)
    assert obs["phase"] == "take" and obs["passer"] == 1
    assert_illegal(state, play("3"), "choose 'take offer' or 'take blind'")
    assert_illegal(state, PASS, "choose 'take offer' or 'take blind'")
    state.apply(TAKE_OFFER)
    assert hand(state, 0) == cards("3 4 9") and hand(state, 1) == cards("5 6 7")
    snap = state.to_json()
    assert snap["offer"] == "2" and snap["deck"] == ["10"]  # the taken offer is replaced
    assert state.current_player == 0 and snap["table"] is None  # the last player leads
    assert "pass" not in plays_offered(state)
    assert state.events[-4:] == [
        {"type": "pass", "seat": 1, "auto": False},
        {"type": "take", "seat": 0, "source": "offer", "card": "9"},
        {"type": "take", "seat": 1, "source": "blind"},
        {"type": "offer", "card": "2"},
    ]


def test_choosing_the_blind_card_gives_the_passer_the_offer():
    state = position("3 4", "5 6", table="8", by=0, offer="9", deck="7 2 10")
    state.apply(PASS)
    state.apply(TAKE_BLIND)
    assert hand(state, 0) == cards("3 4 7") and hand(state, 1) == cards("5 6 9")
    assert state.to_json()["offer"] == "2" and state.to_json()["deck"] == ["10"]
    assert state.current_player == 0
    assert state.events[-3] == {"type": "take", "seat": 0, "source": "blind"}  # blind card stays hidden
    assert state.events[-2] == {"type": "take", "seat": 1, "source": "offer", "card": "9"}


def test_take_is_rejected_outside_the_take_phase():
    state = position("3 4", "5 6", table="8", by=0)
    assert_illegal(state, TAKE_OFFER, "nothing to choose now")


def test_deck_empty_the_last_player_takes_the_offer_and_the_passer_nothing():
    state = position("3 4", "5 6", table="8", by=0, offer="9", deck="")
    state.apply(PASS)
    assert state.current_player == 0 and state.to_json()["phase"] == "play"
    assert hand(state, 0) == cards("3 4 9") and hand(state, 1) == cards("5 6")
    assert state.to_json()["offer"] is None


def test_nothing_left_to_take_nobody_draws():
    state = position("3 4", "5 6", table="8", by=0, offer=None, deck="")
    state.apply(PASS)
    assert hand(state, 0) == cards("3 4") and hand(state, 1) == cards("5 6")
    assert state.current_player == 0 and state.to_json()["table"] is None
    assert state.events[-1] == {"type": "pass", "seat": 1, "auto": False}


def test_offer_gone_both_draw_blind_last_player_first():
    state = position("3 4", "5 6", table="8", by=0, offer=None, deck="7 2 10")
    state.apply(PASS)
    assert hand(state, 0) == cards("3 4 7") and hand(state, 1) == cards("2 5 6")
    assert state.to_json()["deck"] == ["10"]
    one_card = position("3 4", "5 6", table="8", by=0, offer=None, deck="7")
    one_card.apply(PASS)
    assert hand(one_card, 0) == cards("3 4 7") and hand(one_card, 1) == cards("5 6")


def test_last_player_leads_the_next_trick_after_a_long_trick():
    state = position("3 5 7", "4 6 8", to_move=0, offer=None, deck="")
    state.apply(play("3"))
    state.apply(play("4"))
    state.apply(play("5"))
    state.apply(PASS)  # seat 1 passes on seat 0's 5
    assert state.current_player == 0
    assert state.observation(0)["leader"] == 0 and state.observation(0)["table"] is None
    assert state.observation(0)["played"][-3:] == ["3", "4", "5"]


# --------------------------------------------------------------------- K6 / K2: scoring, deals, game end
def test_emptying_the_hand_scores_a_point_and_the_lower_score_starts_the_next_deal():
    state = position("5", "2 2 3", to_move=0, scores=(1, 0), last_started=(1, -1))
    state.apply(play("5"))
    assert state.to_json()["scores"] == [2, 0]
    assert state.events[-2] == {"type": "deal_end", "deal": 1, "winner": 0, "scores": [2, 0]}
    assert state.events[-1]["type"] == "deal" and state.events[-1]["starter"] == 1
    assert state.current_player == 1 and state.to_json()["deal"] == 2
    assert [len(h) for h in state.to_json()["hands"]] == [12, 12]
    assert state.observation(0)["played"] == [] and state.observation(0)["deck"] == 11


def test_tied_scores_the_player_who_started_least_recently_starts():
    # seat 0 started deal 1, seat 1 started deal 2; scores become 1-1: seat 0 starts deal 3
    state = position("5", "2 2 3", to_move=0, scores=(0, 1), deal=2, starter=1, last_started=(1, 2))
    state.apply(play("5"))
    assert state.to_json()["scores"] == [1, 1]
    assert state.events[-1]["starter"] == 0 and state.current_player == 0
    assert state.to_json()["last_started"] == [3, 2]
    # the other way round: seat 1 started longer ago
    other = position("5", "2 2 3", to_move=0, scores=(0, 1), deal=2, starter=0, last_started=(2, 1))
    other.apply(play("5"))
    assert other.events[-1]["starter"] == 1 and other.current_player == 1


def test_following_with_the_last_cards_ends_the_deal_at_once():
    state = position("2 4", "9 9", table="8 8", by=0, offer="3", deck="7")
    state.apply(play("9 9"))
    assert state.to_json()["scores"] == [0, 1]
    assert state.to_json()["deal"] == 2


def test_the_game_ends_when_a_player_reaches_three_points():
    state = position("5", "2 2 3", to_move=0, scores=(2, 2), deal=4)
    state.apply(play("5"))
    assert state.is_terminal() and state.current_player is None and state.legal_actions() == []
    assert state.result() == {"ranking": [0, 1], "scores": [3, 2], "ended_by": "rules"}
    assert state.events[-1] == {"type": "game_end", "ranking": [0, 1], "scores": [3, 2], "ended_by": "rules"}
    assert state.observation(1)["phase"] == "over"
    assert_illegal(state, play("2"), "game is over")


# --------------------------------------------------------------------- K7: options
def test_faceup_draw_false_no_offer_and_both_draw_blind_last_player_first():
    opts = {"faceup_draw": False}
    fresh = GAME.new_state(2, 4, opts)
    assert fresh.to_json()["offer"] is None and len(fresh.to_json()["deck"]) == 12
    assert fresh.observation(0)["offer"] is None and fresh.observation(0)["deck"] == 12
    state = position("3 4", "5 6", table="8", by=0, offer=None, deck="7 2 10", options=opts)
    assert plays_offered(state) == ["pass"]
    state.apply(PASS)
    assert hand(state, 0) == cards("3 4 7") and hand(state, 1) == cards("2 5 6")
    assert state.current_player == 0 and state.legal_actions()[0]["type"] == "play"


def test_auto_skip_passes_a_player_who_cannot_beat_the_play_on_public_information():
    # All four Queens and three 10s are played: nothing can follow the last 10.
    opts = {"auto_skip": True}
    state = position("10 3", "4 5 9", to_move=0, offer=None, deck="", played="Q Q Q Q 10 10 10", options=opts)
    state.apply(play("10"))
    assert state.events[-1] == {"type": "pass", "seat": 1, "auto": True}
    assert state.current_player == 0 and state.to_json()["table"] is None  # seat 0 leads again
    assert state.to_json()["turns"] == 1  # the automatic pass is not a decision
    # without auto_skip the same player must pass by himself
    manual = position("10 3", "4 5 9", to_move=0, offer=None, deck="", played="Q Q Q Q 10 10 10")
    manual.apply(play("10"))
    assert manual.current_player == 1 and plays_offered(manual) == ["pass"]


def test_auto_skip_ignores_the_hand_when_a_beating_card_is_still_unseen():
    opts = {"auto_skip": True}
    # A Queen is still unseen (removed or in the deck): seat 1 is asked even though he cannot follow.
    state = position("10 3", "4 5 9", to_move=0, offer=None, deck="", played="Q Q Q 10 10 10",
                     removed="Q 2 2 2", options=opts)
    state.apply(play("10"))
    assert state.current_player == 1 and plays_offered(state) == ["pass"]
    # the face-up offer is public: a Queen lying there cannot be used to follow
    offer_q = position("10 3", "4 5 9", to_move=0, offer="Q", deck="2", played="Q Q Q 10 10 10", options=opts)
    offer_q.apply(play("10"))
    assert offer_q.events[-1] == {"type": "pass", "seat": 1, "auto": True}
    assert offer_q.current_player == 0 and offer_q.legal_actions() == [TAKE_OFFER, TAKE_BLIND]


def test_options_are_validated_by_name():
    assert GAME.validate_options({}) == {"faceup_draw": True, "jacks": False, "auto_skip": False,
                                         "max_turns": 2000}
    for name, bad in (("faceup_draw", "yes"), ("jacks", 1), ("auto_skip", None), ("max_turns", 0)):
        with pytest.raises(InvalidOptions, match=f"'{name}'.*allowed"):
            GAME.new_state(2, 1, {name: bad})
    with pytest.raises(InvalidOptions, match="2 players"):
        GAME.new_state(3, 1, {})


# --------------------------------------------------------------------- C3: the turn cap
def test_turn_cap_ranks_by_points_then_fewer_cards():
    state = position("3 4 5", "6 7 8 9", to_move=0, scores=(1, 1), turns=9, options={"max_turns": 10})
    state.apply(play("3"))
    assert state.is_terminal()
    # tied on points: seat 0 holds 2 cards, seat 1 holds 4
    assert state.result() == {"ranking": [0, 1], "scores": [1, 1], "ended_by": "turn_cap"}
    assert state.events[-1] == {"type": "game_end", "ranking": [0, 1], "scores": [1, 1], "ended_by": "turn_cap"}
    assert state.legal_actions() == [] and state.observation(0)["phase"] == "over"
    points = position("3 4 5", "6", to_move=0, scores=(2, 1), turns=9, options={"max_turns": 10})
    points.apply(play("3"))
    assert points.result() == {"ranking": [0, 1], "scores": [2, 1], "ended_by": "turn_cap"}
    tie = position("3 4 5", "6 7", to_move=0, scores=(0, 0), turns=4, options={"max_turns": 5})
    tie.apply(play("3"))
    assert tie.result() == {"ranking": [0, 0], "scores": [0, 0], "ended_by": "turn_cap"}
    not_yet = position("3 4 5", "6 7", to_move=0, turns=3, options={"max_turns": 5})
    not_yet.apply(play("3"))
    assert not not_yet.is_terminal() and not_yet.observation(1)["turn"] == 4


def test_a_deal_ending_move_at_the_cap_is_ranked_by_the_cap():
    state = position("5", "2 2 3", to_move=0, scores=(2, 2), turns=9, options={"max_turns": 10})
    state.apply(play("5"))
    assert state.result()["ended_by"] == "rules" and state.result()["ranking"] == [0, 1]


# --------------------------------------------------------------------- actions, text form, snapshots
@pytest.mark.parametrize("text,action", [
    ("5 6 7", {"type": "play", "cards": ["5", "6", "7"]}),
    ("Q Q Q", {"type": "play", "cards": ["Q", "Q", "Q"]}),
    ("9 10 J", {"type": "play", "cards": ["9", "10", "J"]}),
    ("3 3 4 4", {"type": "play", "cards": ["3", "3", "4", "4"]}),
    ("pass", {"type": "pass"}),
    ("take offer", {"type": "take", "source": "offer"}),
    ("take blind", {"type": "take", "source": "blind"}),
])
def test_text_form_round_trip(text, action):
    assert GAME.parse_action(text) == action
    assert GAME.format_action(action) == text


def test_unreadable_actions_are_refused():
    for text in ("", "K", "take", "take all", "pass now", "11"):
        with pytest.raises(InvalidAction):
            GAME.parse_action(text)
    state = position("3 4", "5 6")
    for bad in ({"type": "play"}, {"type": "play", "cards": []}, {"type": "play", "cards": [5]},
                {"type": "play", "cards": ["3"], "extra": 1}, {"type": "take", "source": "pile"},
                {"type": "pass", "x": 1}):
        with pytest.raises(InvalidAction):
            state.apply(bad)


def test_snapshot_is_checked():
    snap = GAME.new_state(2, 5, {}).to_json()
    broken = dict(snap, hands=[snap["hands"][0] + ["Q"], snap["hands"][1]])
    with pytest.raises(InvalidSnapshot, match="cards of rank Q"):
        GAME.state_from_json(broken)
    with pytest.raises(InvalidSnapshot):
        GAME.state_from_json({"game": "crisps"})
    with pytest.raises(InvalidSnapshot, match="options"):
        GAME.state_from_json(dict(snap, options={"jacks": "no"}))
    assert GAME.state_from_json(snap).to_json() == snap


def test_render_shows_the_table():
    state = position("3 4 Q", "5 6", table="2", by=1, to_move=0, offer="9", deck="7")
    picture = state.render()
    assert "seat 0: 3 4 Q" in picture and "table: 2 (single by seat 1)" in picture and "offer: 9" in picture
