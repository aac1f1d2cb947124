"""Crisps, the state and its turn flow: a 2-player climbing card game (rulings K1-K7 of
docs/rules/crisps.md, the rules as implemented).

Cards of equal rank are interchangeable, so hands, the deck and plays are handled as ranks
(ints 2..11 inside, 11 being the Queen, or the Jack with the ``jacks`` option) and shown to
the outside as rank labels "2".."10", "Q" (or "J").
"""

from __future__ import annotations

import random
from bisect import insort
from typing import Any

from ..base import Action, EndedBy, GameResult, IllegalAction, InvalidAction, State, ranking_from_keys
from .plays import (
    KEY_LABELS,
    KEY_NEED,
    KEY_OF,
    KEY_RANKS,
    KIND_NAMES,
    LABELS,
    RANK_OF,
    RANKS,
    REPEAT,
    TOP,
    Key,
    classify,
    could_follow_publicly,
    follow_plays,
    lead_plays,
    may_follow,
)

HAND_SIZE = 12
REMOVED = 4
TARGET = 3
PLAYERS = 2

PLAY, TAKE, OVER = "play", "take", "over"


class CrispsState(State):
    """One game of Crisps. Build with :meth:`Crisps.new_state` or :meth:`Crisps.state_from_json`."""

    __slots__ = ("options", "seed", "_rng", "_jacks", "_faceup", "_auto", "_max_turns", "_labels", "_key_labels",
                 "_repeat", "_hand_lists", "played_order", "_key_of", "_rank_of",
                 "hands", "sizes", "deck", "removed", "offer", "played", "table", "table_seat",
                 "leader", "passer", "phase", "current_player", "scores", "deal", "starter",
                 "last_started", "turns", "ended_by", "events")

    def __init__(self, options: dict[str, Any], seed: int, rng: random.Random) -> None:
        self.options = options
        self.seed = seed
        self._rng = rng
        self._jacks: bool = options["jacks"]
        self._faceup: bool = options["faceup_draw"]
        self._auto: bool = options["auto_skip"]
        self._max_turns: int = options["max_turns"]
        self._labels = LABELS[self._jacks]
        self._key_labels = KEY_LABELS[self._jacks]
        self._key_of = KEY_OF[self._jacks]
        self._rank_of = RANK_OF[self._jacks]
        self._repeat = REPEAT[self._jacks]
        self.hands: list[list[int]] = [[0] * (TOP + 1) for _ in range(PLAYERS)]
        self.sizes = [0] * PLAYERS
        self.deck: list[int] = []          # blind deck, top card LAST (pop() draws it)
        self.removed: list[int] = []
        self.offer: int | None = None
        self.played = [0] * (TOP + 1)       # cards played this deal, by rank (table included)
        self.played_order: list[str] = []   # the same cards as labels, in the order played
        # each hand as sorted labels, built on first use and then kept up to date
        self._hand_lists: list[list[str] | None] = [None] * PLAYERS
        self.table: Key | None = None       # the play to beat; None when the current player leads
        self.table_seat: int | None = None
        self.leader = 0
        self.passer: int | None = None
        self.phase = PLAY
        self.current_player: int | None = 0
        self.scores = [0] * PLAYERS
        self.deal = 0
        self.starter = 0
        self.last_started = [-1] * PLAYERS  # deal number each seat last started, -1 never
        self.turns = 0
        self.ended_by: str | None = None
        self.events: list[dict[str, Any]] = []

    # ----------------------------------------------------------------- flow
    def _start_deal(self, starter: int) -> None:
        cards = [r for r in RANKS for _ in range(4)]
        self._rng.shuffle(cards)
        self.deal += 1
        for seat in range(PLAYERS):
            hand = [0] * (TOP + 1)
            for r in cards[seat * HAND_SIZE:(seat + 1) * HAND_SIZE]:
                hand[r] += 1
            self.hands[seat] = hand
            self.sizes[seat] = HAND_SIZE
        rest = cards[PLAYERS * HAND_SIZE:]
        self.removed = rest[:REMOVED]
        rest = rest[REMOVED:]
        if self._faceup:
            self.offer = rest[0]
            rest = rest[1:]
        else:
            self.offer = None
        rest.reverse()  # the deck is stored top card last
        self.deck = rest
        self.played = [0] * (TOP + 1)
        self.played_order = []
        self._hand_lists = [None] * PLAYERS
        self.starter = starter
        self.last_started[starter] = self.deal
        self.events.append({"type": "deal", "deal": self.deal, "starter": starter,
                            "offer": self._label(self.offer), "deck": len(self.deck),
                            "hand_sizes": list(self.sizes)})
        self._new_trick(starter)

    def _new_trick(self, leader: int) -> None:
        self.table = None
        self.table_seat = None
        self.passer = None
        self.leader = leader
        self.phase = PLAY
        self.current_player = leader

    def _play(self, seat: int, key: Key) -> None:
        hand = self.hands[seat]
        played = self.played
        ranks = KEY_RANKS[key]
        for r in ranks:
            hand[r] -= 1
            played[r] += 1
        self.sizes[seat] -= len(ranks)
        labels = self._key_labels[key]
        hand_list = self._hand_lists[seat]
        if hand_list is not None:
            for lab in labels:
                hand_list.remove(lab)
        self.table = key
        self.table_seat = seat
        self.played_order += labels
        self.events.append({"type": "play", "seat": seat, "cards": list(labels),
                            "kind": KIND_NAMES[key[0]]})
        if self.sizes[seat] == 0:
            self._end_deal(seat)
            return
        other = 1 - seat
        self.current_player = other
        if self._auto and not could_follow_publicly(self._public_avail(), key, self._jacks):
            self._pass(other, auto=True)

    def _public_avail(self) -> list[int]:
        """Cards of each rank not publicly accounted for (played this deal or lying as the offer)."""
        avail = [4 - p for p in self.played]
        if self.offer is not None:
            avail[self.offer] -= 1
        avail[0] = avail[1] = 0
        return avail

    def _pass(self, seat: int, auto: bool) -> None:
        self.events.append({"type": "pass", "seat": seat, "auto": auto})
        chooser = 1 - seat
        self.passer = seat
        if self._faceup and self.offer is not None and self.deck:
            self.phase = TAKE
            self.current_player = chooser
            return
        # No real choice: the last player takes first, then the passer, while cards remain.
        if self.offer is not None:
            self._take_offer(chooser)
        else:
            for s in (chooser, seat):
                if self.deck:
                    self._take_blind(s)
        self._new_trick(chooser)

    def _take_blind(self, seat: int) -> None:
        r = self.deck.pop()
        self._add(seat, r)
        self.events.append({"type": "take", "seat": seat, "source": "blind"})

    def _take_offer(self, seat: int) -> None:
        r = self.offer
        assert r is not None
        self._add(seat, r)
        self.events.append({"type": "take", "seat": seat, "source": "offer", "card": self._labels[r]})
        self.offer = None

    def _add(self, seat: int, r: int) -> None:
        self.hands[seat][r] += 1
        self.sizes[seat] += 1
        hand_list = self._hand_lists[seat]
        if hand_list is not None:
            insort(hand_list, self._labels[r], key=self._rank_of.__getitem__)

    def _replace_offer(self) -> None:
        self.offer = self.deck.pop() if self.deck else None
        self.events.append({"type": "offer", "card": self._label(self.offer)})

    def _take(self, seat: int, source: str) -> None:
        passer = 1 - seat
        if source == "offer":
            self._take_offer(seat)
            self._take_blind(passer)
        else:
            self._take_blind(seat)
            self._take_offer(passer)
        self._replace_offer()
        self._new_trick(seat)

    def _end_deal(self, winner: int) -> None:
        self.scores[winner] += 1
        self.events.append({"type": "deal_end", "deal": self.deal, "winner": winner, "scores": list(self.scores)})
        if self.scores[winner] >= TARGET:
            self._finish(EndedBy.RULES)
            return
        starter = min(range(PLAYERS), key=lambda s: (self.scores[s], self.last_started[s]))
        self._start_deal(starter)

    def _finish(self, ended_by: str) -> None:
        self.phase = OVER
        self.current_player = None
        self.ended_by = ended_by
        self.table = None
        self.table_seat = None
        self.events.append({"type": "game_end", **self.result()})

    # ----------------------------------------------------------------- API
    def legal_actions(self) -> list[Action]:
        seat = self.current_player
        if seat is None:
            return []
        if self.phase == TAKE:
            return [{"type": "take", "source": "offer"}, {"type": "take", "source": "blind"}]
        key_labels = self._key_labels
        hand = self.hands[seat]
        if self.table is None:
            keys = lead_plays(hand, self._jacks)
        else:
            keys = follow_plays(hand, self.table, self._jacks)
        out: list[Action] = [{"type": "play", "cards": list(key_labels[k])} for k in keys]
        if self.table is not None:
            out.append({"type": "pass"})
        return out

    def apply(self, action: Action) -> None:
        seat = self.current_player
        if seat is None:
            raise IllegalAction("the game is over")
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            raise InvalidAction(f"an action is an object with a string 'type' (play, pass, take), not {action!r}")
        kind = action["type"]
        if kind == "play":
            key = self._parse_play(action)
            if self.phase != PLAY:
                raise IllegalAction("the trick ended with a pass: choose 'take offer' or 'take blind'")
            if self.table is not None:
                why = may_follow(key, self.table)
                if why is not None:
                    raise IllegalAction(f"{' '.join(self._key_labels[key])} cannot follow "
                                        f"{' '.join(self._key_labels[self.table])}: {why}")
            hand = self.hands[seat]
            for r, need in KEY_NEED[key]:
                if hand[r] < need:
                    raise IllegalAction(f"you hold {hand[r]} card{'s' if hand[r] != 1 else ''} of rank "
                                        f"{self._labels[r]}, the play needs {need}")
            self._play(seat, key)
        elif kind == "pass":
            if len(action) != 1:
                raise InvalidAction(f"a pass is exactly {{\"type\": \"pass\"}}, not {action!r}")
            if self.phase != PLAY:
                raise IllegalAction("the trick ended with a pass: choose 'take offer' or 'take blind'")
            if self.table is None:
                raise IllegalAction("the leader of a trick must play; pass is only legal when following")
            self._pass(seat, auto=False)
        elif kind == "take":
            source = action.get("source")
            if source not in ("offer", "blind") or len(action) != 2:
                raise InvalidAction(f"a take is {{\"type\": \"take\", \"source\": \"offer\" | \"blind\"}}, "
                                    f"not {action!r}")
            if self.phase != TAKE:
                raise IllegalAction("there is nothing to choose now: take is only legal after a pass, "
                                    "for the player who made the last play, while both the offer and the "
                                    "blind deck have cards")
            self._take(seat, source)
        else:
            raise InvalidAction(f"unknown action type {kind!r} (play, pass, take)")
        self.turns += 1
        if self.current_player is not None and self.turns >= self._max_turns:
            self._finish(EndedBy.TURN_CAP)

    def _parse_play(self, action: Action) -> Key:
        cards = action.get("cards")
        if len(action) == 2 and type(cards) is list:
            try:
                key = self._key_of.get(tuple(cards))
            except TypeError:  # unhashable items: reported below
                key = None
            if key is not None:
                return key
        if len(action) != 2 or not isinstance(cards, list) or not cards:
            raise InvalidAction(f"a play is {{\"type\": \"play\", \"cards\": [rank, ...]}}, not {action!r}")
        rank_of = RANK_OF[self._jacks]
        ranks = []
        for c in cards:
            r = rank_of.get(c) if isinstance(c, str) else None
            if r is None:
                allowed = ", ".join(self._labels[2:])
                raise InvalidAction(f"unknown card {c!r} (ranks: {allowed})")
            ranks.append(r)
        ranks.sort()
        found = classify(ranks, self._jacks)
        if isinstance(found, str):
            raise IllegalAction(f"{' '.join(cards)} is no play: {found}")
        if found is None:
            raise IllegalAction(f"{' '.join(cards)} is no play")
        return found

    def observation(self, seat: int) -> dict[str, Any]:
        cards = self._hand_lists[seat]
        if cards is None:
            cards = self._hand_lists[seat] = self._cards(self.hands[seat])
        table = None
        if self.table is not None:
            table = {"seat": self.table_seat, "cards": list(self._key_labels[self.table]),
                     "kind": KIND_NAMES[self.table[0]]}
        return {
            "seat": seat,
            "phase": self.phase,
            "to_move": self.current_player,
            "deal": self.deal,
            "starter": self.starter,
            "leader": self.leader,
            "passer": self.passer,
            "hand": list(cards),
            "hand_sizes": list(self.sizes),
            "table": table,
            "offer": None if self.offer is None else self._labels[self.offer],
            "deck": len(self.deck),
            "removed": len(self.removed),
            "played": list(self.played_order),
            "scores": list(self.scores),
            "target": TARGET,
            "turn": self.turns,
            "max_turns": self._max_turns,
        }

    def is_terminal(self) -> bool:
        return self.current_player is None

    def result(self) -> GameResult:
        if self.ended_by == EndedBy.TURN_CAP or self.ended_by is None:
            keys: list[Any] = [(self.scores[s], -self.sizes[s]) for s in range(PLAYERS)]
        else:
            keys = list(self.scores)
        return {"ranking": ranking_from_keys(keys), "scores": list(self.scores), "ended_by": self.ended_by}

    def _label(self, rank: int | None) -> str | None:
        return None if rank is None else self._labels[rank]

    def _cards(self, counts: list[int]) -> list[str]:
        repeat = self._repeat
        out: list[str] = []
        for r in RANKS:
            out += repeat[r][counts[r]]
        return out

    def to_json(self) -> dict[str, Any]:
        version, internal, gauss = self._rng.getstate()
        return {
            "game": "crisps",
            "options": dict(self.options),
            "seed": self.seed,
            "rng": [version, list(internal), gauss],
            "deal": self.deal,
            "starter": self.starter,
            "last_started": list(self.last_started),
            "scores": list(self.scores),
            "turns": self.turns,
            "phase": self.phase,
            "current_player": self.current_player,
            "leader": self.leader,
            "passer": self.passer,
            "hands": [self._cards(h) for h in self.hands],
            "deck": [self._labels[r] for r in reversed(self.deck)],
            "removed": [self._labels[r] for r in self.removed],
            "offer": self._label(self.offer),
            "played": list(self.played_order),
            "table": None if self.table is None else {
                "seat": self.table_seat, "cards": list(self._key_labels[self.table])},
            "ended_by": self.ended_by,
            "events": [dict(e) for e in self.events],
        }

    def render(self) -> str:
        def show(cards: list[str]) -> str:
            return " ".join(cards) or "-"
        head = f"Crisps deal {self.deal}, scores {self.scores[0]}-{self.scores[1]}, turn {self.turns}"
        if self.current_player is None:
            head += f", game over ({self.ended_by})"
        elif self.phase == TAKE:
            head += f", seat {self.current_player} to choose offer or blind (seat {self.passer} passed)"
        else:
            head += f", seat {self.current_player} to {'lead' if self.table is None else 'follow or pass'}"
        lines = [head]
        for s in range(PLAYERS):
            lines.append(f"  seat {s}: {show(self._cards(self.hands[s]))} ({self.sizes[s]} card{'' if self.sizes[s] == 1 else 's'})")
        if self.table is not None:
            lines.append(f"  table: {show(list(self._key_labels[self.table]))} "
                         f"({KIND_NAMES[self.table[0]]} by seat {self.table_seat})")
        lines.append(f"  offer: {self._label(self.offer) or '-'}, blind deck: {len(self.deck)}, "
                     f"removed unseen: {len(self.removed)}")
        lines.append(f"  played this deal: {show(self._cards(self.played))}")
        return "\n".join(lines)
