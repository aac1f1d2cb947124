"""Why an Epizodiak action is refused: the slow path that explains a rejection.

Kept apart from the turn flow in :mod:`harness.games.epizodiak.state`: it runs only when an
action is not among the legal ones, and says why in the words of the rules (E-numbers).
"""

from __future__ import annotations

from typing import Any

from ..base import IllegalAction, InvalidAction
from .dial import (
    ACTION_TYPES,
    CCW,
    CONTESTED,
    CW,
    DRAWN,
    OTHER_END,
    PICKED,
    START,
    VALUES,
    hand_counts,
    nxt,
    prv,
)


def well_formed(action: Any) -> bool:
    """Raise :class:`InvalidAction` unless ``action`` has the shape of an Epizodiak action."""
    if not isinstance(action, dict) or not isinstance(action.get("type"), str):
        raise InvalidAction(f"an action is a JSON object with a string \"type\", not {action!r}")
    kind = action["type"]
    keys = {"place": {"type", "end", "tiles"}, "discard": {"type", "value"}, "contest": {"type", "value"},
            "draw": {"type"}, "pickup": {"type"}, "pass": {"type"}}.get(kind)
    if keys is None:
        raise InvalidAction(f"unknown action type {kind!r} (expected one of {', '.join(ACTION_TYPES)})")
    if set(action) != keys:
        raise InvalidAction(f"a {kind} action has exactly the keys {', '.join(sorted(keys))}, not "
                            f"{', '.join(sorted(action))}")
    if kind == "place":
        tiles = action["tiles"]
        if action["end"] not in (CW, CCW):
            raise InvalidAction(f"\"end\" is \"cw\" or \"ccw\", not {action['end']!r}")
        if (not isinstance(tiles, list) or not tiles
                or any(type(t) is not int or not 1 <= t <= 12 for t in tiles)):
            raise InvalidAction(f"\"tiles\" is a non-empty list of values 1-12, not {tiles!r}")
    elif "value" in keys:
        v = action["value"]
        if type(v) is not int or not 1 <= v <= 12:
            raise InvalidAction(f"\"value\" is a tile value 1-12, not {v!r}")
    return True


def format_action_text(action: Any) -> str:
    """The text form of an action (``cw 5 6 7``, ``discard 4``, ``draw``), without checking it."""
    kind = action.get("type") if isinstance(action, dict) else None
    if kind == "place":
        return " ".join([str(action["end"]), *(str(t) for t in action["tiles"])])
    if kind in ("discard", "contest"):
        return f"{kind} {action['value']}"
    if kind in ("draw", "pickup", "pass"):
        return str(kind)
    return repr(action)


class EpizodiakReasons:
    """Mixin of :class:`~harness.games.epizodiak.state.EpizodiakState`: the reasons for a rejection."""

    __slots__ = ()
    # Provided by the state (declared here for the type checker).
    hands: list[list[int]]
    pile: list[int]
    ccw: int
    length: int
    single: list[bool]
    current_player: int | None
    phase: str
    passes: int
    last_laid: tuple[int, str, int] | None
    picked_end: str | None
    _legal: list[Any] | None

    @property
    def cw(self) -> int:
        raise NotImplementedError

    def accepts(self) -> tuple[int, int]:
        raise NotImplementedError

    def _obliged_single(self, h: list[int]) -> int | None:
        raise NotImplementedError

    # ------------------------------------------------------------------ rejections
    def _rejection(self, action: Any) -> IllegalAction:
        """Explain why ``action`` is not legal now (slow path, only on rejection)."""
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            return InvalidAction(f"an action is a JSON object with a string \"type\" "
                                 f"({', '.join(ACTION_TYPES)}), not {action!r}")
        kind = action["type"]
        if kind not in ACTION_TYPES:
            return InvalidAction(f"unknown action type {kind!r} (expected one of {', '.join(ACTION_TYPES)})")
        try:
            shape_ok = well_formed(action)
        except InvalidAction as exc:
            return exc
        assert shape_ok
        if self.current_player is None:
            return IllegalAction("the game is over")
        seat = self.current_player
        h = self.hands[seat]
        phase = self.phase
        forced = phase == START and self.passes >= 3
        reason = None
        if kind == "place":
            reason = self._why_not_place(h, action["end"], action["tiles"], forced)
        elif kind == "discard":
            v = action["value"]
            if forced:
                reason = "forced play after three passes: you must place a tile or contest"
            elif h[v] < 3:
                reason = f"you hold {h[v]} tile(s) of {v}: a set needs three"
            elif phase == START and not self.pile and self.length == 11 and self._obliged_single(h):
                reason = (f"you hold the single tile {self._obliged_single(h)} that fills the last free slot: "
                          "you must place it, not discard")
        elif kind == "draw":
            if phase == DRAWN:
                reason = "you already drew this turn: place, discard or pass"
            elif phase == PICKED:
                reason = "after a pick-up you must place on the other side or discard a set"
            elif phase == CONTESTED:
                reason = "after a contest you must place or discard a set"
            elif not self.pile:
                reason = "the pile is empty: no drawing"
        elif kind == "pass":
            if phase == PICKED:
                reason = "after a pick-up you must place on the other side or discard a set, not pass"
            elif phase == CONTESTED:
                reason = "after a contest you must place or discard a set, not pass"
            elif forced:
                reason = "forced play after three passes: you must place a tile or contest"
            elif self.pile:
                reason = "no passing while the pile has tiles: place, discard, pick up or draw"
            elif self._obliged_single(h):
                reason = (f"you hold the single tile {self._obliged_single(h)} that an end accepts: "
                          "you may not pass")
        elif kind == "pickup":
            reason = self._why_not_pickup(seat, h, phase, forced)
        elif kind == "contest":
            reason = self._why_not_contest(seat, h, action["value"], phase)
        if reason is None:
            reason = "not a legal action here"
        legal = ", ".join(format_action_text(a) for a in (self._legal or [])[:12])
        return IllegalAction(f"{format_action_text(action)}: {reason} (legal: {legal or 'none'})")

    def _why_not_place(self, h: list[int], end: str, tiles: list[int], forced: bool) -> str | None:
        if self.phase == PICKED and end == self.picked_end:
            return f"after a pick-up from the {end} end you must place on the other ({OTHER_END[end]}) end"
        expect = nxt(self.cw) if end == CW else prv(self.ccw)
        step = nxt if end == CW else prv
        free = 12 - self.length
        if len(tiles) > free:
            return f"only {free} free slot(s) on the dial"
        for i, v in enumerate(tiles):
            if v != expect:
                if i == 0:
                    return f"the {end} end ({self.cw if end == CW else self.ccw}) accepts {expect}, not {v}"
                return f"tiles must be consecutive going {end}: after {tiles[i - 1]} comes {expect}, not {v}"
            expect = step(expect)
        if self.phase == PICKED and len(tiles) == free:
            # E7: the last free slot is the one the tile was just picked from
            return (f"a picked-up tile cannot be put back: a run from the {end} end stops before "
                    f"slot {tiles[-1]}, where the tile was picked from")
        need = hand_counts(tiles)
        for v in VALUES:
            if need[v] > h[v]:
                return f"you hold no {v}"
        if end == CCW and len(tiles) == free:
            return ("a placement that fills the dial is written from the cw end: "
                    + format_action_text({"type": "place", "end": CW, "tiles": tiles[::-1]}))
        return None

    def _why_not_pickup(self, seat: int, h: list[int], phase: str, forced: bool) -> str | None:
        if phase == DRAWN:
            return "no pick-up after a draw"
        if phase != START:
            return "you already took a tile this turn"
        if forced:
            return "forced play after three passes: you must place a tile or contest"
        ll = self.last_laid
        if ll is None:
            return "the previous player laid no tile in his last turn"
        v = ll[2]
        if self.single[v]:
            return f"{v} is a single tile (its set is discarded): it cannot be picked up"
        if not h[v]:
            return f"you hold no {v}: a pick-up needs a matching tile in hand"
        return (f"after picking up {v} you would have no placement on the other side and no set to discard "
                f"(a run from the other side stops before the slot of {v}: no putting it back)")

    def _why_not_contest(self, seat: int, h: list[int], v: int, phase: str) -> str | None:
        if phase != START:
            return "a contest starts a turn"
        if self.pile:
            return "no contest while the pile has tiles"
        if self.passes < 2:
            return "a contest needs the two previous turns to be passes"
        if v not in self.accepts():
            a, b = self.accepts()
            return f"the dial's ends accept {a} and {b}, not {v}"
        if h[v]:
            return f"you hold a {v}: only a value you do not hold can be contested"
        if self.single[v]:
            return f"the set of {v} is already discarded"
        return f"taking the {v} tiles would empty an opponent's hand"
