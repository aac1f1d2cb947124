"""Restoring a Crisps ``to_json`` snapshot, with every field checked (InvalidSnapshot if not valid)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from ..base import EndedBy, InvalidOptions, InvalidSnapshot
from .plays import RANK_OF, RANKS, TOP, classify, key_ranks

# The snapshot module knows nothing of the Crisps classes (no import circle): the game passes in
# its option check and a factory of blank states, and gets back the state the factory made.
ValidateOptions = Callable[[Any], dict[str, Any]]
NewState = Callable[[dict[str, Any], int, random.Random], Any]

_PHASES = ("play", "take", "over")


def restore(validate_options: ValidateOptions, new_state: NewState, data: Mapping[str, Any]) -> Any:
    """Build the state a snapshot describes; raise :class:`InvalidSnapshot` naming the bad field."""
    try:
        return _restore(validate_options, new_state, data)
    except InvalidSnapshot:
        raise
    except InvalidOptions as exc:
        raise InvalidSnapshot(f"snapshot options: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise InvalidSnapshot(f"not a Crisps snapshot: {type(exc).__name__}: {exc}") from None


def _seat(value: Any, field: str, none_ok: bool = False) -> int | None:
    if value is None and none_ok:
        return None
    if type(value) is not int or not 0 <= value < 2:
        raise InvalidSnapshot(f"snapshot field {field!r}: {value!r} is not a seat (0 or 1)")
    return value


def _restore(validate_options: ValidateOptions, new_state: NewState, data: Mapping[str, Any]) -> Any:

    if data.get("game") != "crisps":
        raise InvalidSnapshot(f"not a Crisps snapshot (game {data.get('game')!r})")
    options = validate_options(data["options"])
    rank_of = RANK_OF[options["jacks"]]

    def ranks(cards: Any, field: str) -> list[int]:
        if not isinstance(cards, list):
            raise InvalidSnapshot(f"snapshot field {field!r} must be a list of cards")
        out = []
        for c in cards:
            r = rank_of.get(c) if isinstance(c, str) else None
            if r is None:
                raise InvalidSnapshot(f"snapshot field {field!r}: unknown card {c!r}")
            out.append(r)
        return out

    def counts(cards: list[int]) -> list[int]:
        c = [0] * (TOP + 1)
        for r in cards:
            c[r] += 1
        return c

    version, internal, gauss = data["rng"]
    rng = random.Random()
    rng.setstate((version, tuple(internal), gauss))
    state = new_state(options, data["seed"], rng)
    hands = [ranks(h, "hands") for h in data["hands"]]
    if len(hands) != 2:
        raise InvalidSnapshot("snapshot field 'hands' must hold two hands")
    state.hands = [counts(h) for h in hands]
    state.sizes = [len(h) for h in hands]
    deck = ranks(data["deck"], "deck")
    deck.reverse()
    state.deck = deck
    state.removed = ranks(data["removed"], "removed")
    offer = data["offer"]
    state.offer = None if offer is None else ranks([offer], "offer")[0]
    state.played = counts(ranks(data["played"], "played"))
    state.played_order = list(data["played"])
    total = counts(hands[0] + hands[1] + deck + state.removed + ([state.offer] if state.offer is not None else []))
    for r in RANKS:
        if total[r] + state.played[r] != 4:
            raise InvalidSnapshot(f"the snapshot holds {total[r] + state.played[r]} cards of rank "
                                  f"{state._labels[r]}, not 4 (hands + deck + removed + offer + played)")
    if len(state.removed) != 4:
        raise InvalidSnapshot("snapshot field 'removed' must hold the 4 cards removed for the deal")
    table = data["table"]
    if table is not None:
        key = classify(sorted(ranks(table["cards"], "table.cards")), options["jacks"])
        if isinstance(key, str):
            raise InvalidSnapshot(f"snapshot field 'table': {key}")
        if any(state.played[r] < key_ranks(key).count(r) for r in set(key_ranks(key))):
            raise InvalidSnapshot("snapshot field 'table': its cards must be counted in 'played'")
        state.table = key
        state.table_seat = _seat(table["seat"], "table.seat")
    state.phase = data["phase"]
    if state.phase not in _PHASES:
        raise InvalidSnapshot(f"snapshot field 'phase': {state.phase!r} (allowed: {', '.join(_PHASES)})")
    state.current_player = _seat(data["current_player"], "current_player", none_ok=True)
    if (state.current_player is None) != (state.phase == "over"):
        raise InvalidSnapshot("snapshot: 'current_player' is null exactly when 'phase' is 'over'")
    if state.phase == "take" and (table is None or state.offer is None or not state.deck):
        raise InvalidSnapshot("snapshot: phase 'take' needs a table play, an offer and a non-empty deck")
    state.leader = _seat(data["leader"], "leader")
    state.passer = _seat(data["passer"], "passer", none_ok=True)
    state.scores = [int(s) for s in data["scores"]]
    state.deal = int(data["deal"])
    state.starter = _seat(data["starter"], "starter")
    state.last_started = [int(s) for s in data["last_started"]]
    state.turns = int(data["turns"])
    state.ended_by = data["ended_by"]
    if state.ended_by not in (None, *EndedBy):
        raise InvalidSnapshot(f"snapshot field 'ended_by': {state.ended_by!r}")
    state.events = [dict(e) for e in data["events"]]
    return state
