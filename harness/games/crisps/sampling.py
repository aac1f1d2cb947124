"""Crisps: drawing a full state consistent with one seat's observation and the public events.

What a seat knows: its own hand, the cards played this deal (table included), the face-up
offer, the counts of the blind deck, of the removed cards and of the other hand, and which
offered cards the other player took (an offer taken and not yet matched by a play of that rank
is still in his hand). Everything else (the rest of the other hand, the four removed cards and
the blind deck's order) is dealt uniformly at random from the cards left. Plays and voluntary
passes carry no hard constraint and are not used; with ``auto_skip`` an automatic pass follows
from public information only, so it says nothing about a hand either.

Design choice: the state is built directly from the observation (no snapshot, no JSON), so a
sample costs ~20 us, small beside a playout.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import InvalidSnapshot
from .plays import KEY_OF, RANK_OF, RANKS, TOP
from .state import PLAYERS, CrispsState


def known_other_cards(events: Sequence[Mapping[str, Any]], other: int, jacks: bool) -> list[int]:
    """Counts by rank of cards ``other`` surely holds: offers he took this deal, less his plays of that rank."""
    rank_of = RANK_OF[jacks]
    known = [0] * (TOP + 1)
    for e in events:
        kind = e.get("type")
        if kind == "deal":
            known = [0] * (TOP + 1)
        elif e.get("seat") != other:
            continue
        elif kind == "take" and e.get("source") == "offer":
            known[rank_of[e["card"]]] += 1
        elif kind == "play":
            for c in e["cards"]:
                r = rank_of[c]
                if known[r]:
                    known[r] -= 1
    return known


def resample(options: dict[str, Any], obs: Mapping[str, Any], events: Sequence[Mapping[str, Any]],
             rng: random.Random) -> CrispsState:
    """A :class:`CrispsState` whose observation for ``obs["seat"]`` is ``obs``; hidden cards at random."""
    jacks = options["jacks"]
    rank_of = RANK_OF[jacks]
    seat = obs["seat"]
    other = 1 - seat
    state = CrispsState(options, 0, random.Random(rng.getrandbits(64)))
    pool = [4] * (TOP + 1)
    pool[0] = pool[1] = 0
    mine = [0] * (TOP + 1)
    for c in obs["hand"]:
        mine[rank_of[c]] += 1
    played = [0] * (TOP + 1)
    for c in obs["played"]:
        played[rank_of[c]] += 1
    offer = None if obs["offer"] is None else rank_of[obs["offer"]]
    known = known_other_cards(events, other, jacks)
    for r in RANKS:
        pool[r] -= mine[r] + played[r] + known[r] + (offer == r)
        if pool[r] < 0:
            raise InvalidSnapshot(f"observation holds more than four cards of rank {r}")
    cards = [r for r in RANKS for _ in range(pool[r])]
    rng.shuffle(cards)
    sizes = list(obs["hand_sizes"])
    need = sizes[other] - sum(known)
    if need < 0 or need + obs["removed"] + obs["deck"] != len(cards):
        raise InvalidSnapshot("observation and events do not add up to 40 cards")
    theirs = list(known)
    for r in cards[:need]:
        theirs[r] += 1
    hands = [mine, theirs] if seat == 0 else [theirs, mine]
    state.hands = hands
    state.sizes = sizes
    state.removed = cards[need:need + obs["removed"]]
    state.deck = cards[need + obs["removed"]:]
    state.offer = offer
    state.played = played
    state.played_order = list(obs["played"])
    table = obs["table"]
    state.table = None if table is None else KEY_OF[jacks][tuple(table["cards"])]
    state.table_seat = None if table is None else table["seat"]
    state.leader = obs["leader"]
    state.passer = obs["passer"]
    state.phase = obs["phase"]
    state.current_player = obs["to_move"]
    state.scores = list(obs["scores"])
    state.deal = obs["deal"]
    state.starter = obs["starter"]
    last_started = [-1] * PLAYERS
    for e in events:
        if e.get("type") == "deal":
            last_started[e["starter"]] = e["deal"]
    state.last_started = last_started
    state.turns = obs["turn"]
    state.events = []
    return state
