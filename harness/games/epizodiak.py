"""Epizodiak: three players, 48 tiles (1-12 four times), a circular dial of twelve slots.

The rules as implemented, the options and every data format are in docs/rules/epizodiak.md;
the E-numbers in comments refer to the rulings in that page.

State is kept compact for speed: each hand is a list of 13 counts (index = tile value,
index 0 unused), the dial is one arc given by its counter-clockwise end value and its
length, the pile is a list whose last element is the top tile.
"""

from __future__ import annotations

import random
from bisect import insort
from typing import Any, Mapping

from .base import (Action, Game, IllegalAction, InvalidAction, InvalidSnapshot, Option, State, int_option,
                   bool_option, ranking_from_keys)

PLAYERS = 3
VALUES = range(1, 13)
TILES = 48
SNAPSHOT_VERSION = 1

# Phases of a decision (what the current player is in the middle of).
START = "start"          # beginning of a turn
DRAWN = "drawn"          # drew a tile: place, discard or pass (E6)
PICKED = "picked"        # picked up a tile: place on the other side or discard (E7)
CONTESTED = "contested"  # contested a value: place or discard (E11)
OVER = "over"            # game over
PHASES = (START, DRAWN, PICKED, CONTESTED, OVER)

CW, CCW = "cw", "ccw"
OTHER_END = {CW: CCW, CCW: CW}
ACTION_TYPES = ("place", "discard", "draw", "pickup", "pass", "contest")


def nxt(v: int) -> int:
    """The value after ``v`` clockwise (12 -> 1)."""
    return 1 if v == 12 else v + 1


def prv(v: int) -> int:
    """The value before ``v``, i.e. after it counter-clockwise (1 -> 12)."""
    return 12 if v == 1 else v - 1


NXT = (0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1)   # NXT[v]: the value after v clockwise
PRV = (0, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)   # PRV[v]: the value after v counter-clockwise

# ARCS[ccw][length]: the dial's values from its ccw end, for every arc (an immutable lookup table).
ARCS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(tuple((c - 1 + i) % 12 + 1 for i in range(n)) for n in range(13)) for c in range(13))


def hand_list(counts: list[int]) -> list[int]:
    """Counts per value -> sorted list of tiles."""
    out: list[int] = []
    for v in VALUES:
        c = counts[v]
        if c:
            out.extend([v] * c)
    return out


def hand_counts(tiles: list[int]) -> list[int]:
    counts = [0] * 13
    for t in tiles:
        counts[t] += 1
    return counts


class EpizodiakState(State):
    """One Epizodiak game. Build it with :meth:`Epizodiak.new_state` or ``state_from_json``."""

    __slots__ = ("options", "rng", "hands", "tiles", "sizes", "pile", "ccw", "length", "sets", "contested", "single",
                 "scores", "round", "turns", "current_player", "phase", "passes", "last_laid", "picked_end",
                 "emptied", "ended_by", "events", "_legal", "_one_round", "_target", "_classic",
                 "_contest_point", "_max_turns")

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self._one_round = options["mode"] == "one_round"
        self._target = options["target"]
        self._classic = options["scoring"] == "classic"
        self._contest_point = options["contest_point"]
        self._max_turns = options["max_turns"]
        self.rng = random.Random()
        self.hands: list[list[int]] = [[0] * 13 for _ in range(PLAYERS)]
        self.tiles: list[list[int]] = [[] for _ in range(PLAYERS)]  # the same hands as sorted tile lists
        self.sizes = [0] * PLAYERS
        self.pile: list[int] = []
        self.ccw = 1
        self.length = 0
        self.sets: list[list[int]] = [[] for _ in range(PLAYERS)]
        self.contested: list[list[int]] = [[] for _ in range(PLAYERS)]
        self.single = [False] * 13
        self.scores = [0] * PLAYERS
        self.round = 0
        self.turns = 0
        self.current_player: int | None = None
        self.phase = START
        self.passes = 0
        self.last_laid: tuple[int, str, int] | None = None   # (seat, end, value): pick-up candidate (E7)
        self.picked_end: str | None = None
        self.emptied: int | None = None
        self.ended_by: str | None = None
        self.events: list[dict[str, Any]] = []
        self._legal: list[Action] | None = None

    # ------------------------------------------------------------------ dial helpers
    @property
    def cw(self) -> int:
        """Value at the clockwise end of the arc."""
        return ARCS[self.ccw][self.length][-1]

    def dial_tiles(self) -> list[int]:
        """The arc's values from the counter-clockwise end to the clockwise end."""
        return list(ARCS[self.ccw][self.length])

    def accepts(self) -> tuple[int, int]:
        """(value the cw end accepts, value the ccw end accepts); equal when one slot is free."""
        return nxt(self.cw), prv(self.ccw)

    # ------------------------------------------------------------------ setup
    def _deal(self, first: int) -> None:
        """E1: shuffle the 48 tiles, deal 12 each, 12 to the pile, turn the top pile tile onto the dial."""
        tiles = [v for v in VALUES for _ in range(4)]
        self.rng.shuffle(tiles)
        self.round += 1
        self.hands = [hand_counts(tiles[12 * i:12 * i + 12]) for i in range(PLAYERS)]
        self.tiles = [sorted(tiles[12 * i:12 * i + 12]) for i in range(PLAYERS)]
        self.sizes = [12] * PLAYERS
        self.pile = tiles[36:]
        top = self.pile.pop()
        self.ccw, self.length = top, 1
        self.sets = [[] for _ in range(PLAYERS)]
        self.contested = [[] for _ in range(PLAYERS)]
        self.single = [False] * 13
        self.passes = 0
        self.last_laid = None
        self.picked_end = None
        self.events.append({"type": "round_start", "round": self.round, "first": first, "dial": top,
                            "pile": len(self.pile)})
        self._begin_turn(first)

    # ------------------------------------------------------------------ legal actions
    def legal_actions(self) -> list[Action]:
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return list(legal)

    def _placements(self, h: list[int], ends: tuple[str, ...]) -> list[Action]:
        """Every placement from the given ends (E2). A placement that fills the dial is listed once,
        from the cw end, when both ends are allowed (the two would give the same dial)."""
        out: list[Action] = []
        free = 12 - self.length
        if CW in ends:
            v = NXT[ARCS[self.ccw][self.length][-1]]
            run: list[int] = []
            while h[v] and len(run) < free:
                run.append(v)
                out.append({"type": "place", "end": CW, "tiles": run[:]})
                v = NXT[v]
        if CCW in ends:
            limit = free - 1 if len(ends) == 2 else free
            v = PRV[self.ccw]
            run = []
            while h[v] and len(run) < limit:
                run.append(v)
                out.append({"type": "place", "end": CCW, "tiles": run[:]})
                v = PRV[v]
        return out

    def _obliged_single(self, h: list[int]) -> int | None:
        """E10: a single tile the player holds whose value an end accepts, else None."""
        a, b = self.accepts()
        if self.single[a] and h[a]:
            return a
        if self.single[b] and h[b]:
            return b
        return None

    def _contest_values(self, seat: int) -> list[int]:
        """E11: values the player may contest now (pile empty, two passes before him)."""
        if self.passes < 2 or self.pile:
            return []
        h = self.hands[seat]
        out = []
        for v in sorted(set(self.accepts())):
            if h[v] or self.single[v]:
                continue
            if any(self.hands[o][v] == self.sizes[o] for o in range(PLAYERS) if o != seat):
                continue  # taking the tiles would empty an opponent's hand
            out.append(v)
        return out

    def _pickup_ok(self, seat: int) -> bool:
        """E7: the previous player's last laid tile, not a single tile, matched in hand, with a continuation."""
        ll = self.last_laid
        if ll is None or ll[0] != (seat - 1) % PLAYERS:
            return False
        _, end, v = ll
        h = self.hands[seat]
        if self.single[v] or not h[v]:
            return False
        if h[v] >= 2 or any(c >= 3 for c in h):
            return True  # a set to discard after the pick-up
        other = prv(self.ccw) if end == CW else nxt(self.cw)
        return h[other] > 0

    def _discards(self, h: list[int]) -> list[Action]:
        if max(h) < 3:  # the common case, checked in C
            return []
        return [{"type": "discard", "value": v} for v in VALUES if h[v] >= 3]

    def _compute_legal(self) -> list[Action]:
        seat = self.current_player
        if seat is None:
            return []
        h = self.hands[seat]
        phase = self.phase
        if phase == DRAWN:
            return self._placements(h, (CW, CCW)) + self._discards(h) + [{"type": "pass"}]
        if phase == PICKED:
            return self._placements(h, (OTHER_END[self.picked_end],)) + self._discards(h)  # type: ignore[index]
        if phase == CONTESTED:
            return self._placements(h, (CW, CCW)) + self._discards(h)
        # START
        if self.passes >= 3:  # E12 forced play: place or contest
            return self._placements(h, (CW, CCW)) + [{"type": "contest", "value": v}
                                                       for v in self._contest_values(seat)]
        out = self._placements(h, (CW, CCW))
        obliged = None if self.pile else self._obliged_single(h)
        if not (obliged is not None and self.length == 11):  # E10 exception: last slot
            out += self._discards(h)
        if self._pickup_ok(seat):
            out.append({"type": "pickup"})
        if self.pile:
            out.append({"type": "draw"})
        else:
            out += [{"type": "contest", "value": v} for v in self._contest_values(seat)]
            if obliged is None:
                out.append({"type": "pass"})
        return out

    # ------------------------------------------------------------------ apply
    def apply(self, action: Action) -> None:
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        try:
            # use the canonical offered value (JSON may send 9.0 or true where 9 or 1 is meant)
            action = legal[legal.index(action)]
        except ValueError:
            raise self._rejection(action) from None
        seat = self.current_player
        assert seat is not None
        self._legal = None
        kind = action["type"]
        if kind == "place":
            self._place(seat, action["end"], action["tiles"])
        elif kind == "discard":
            self._discard(seat, action["value"])
        elif kind == "draw":
            v = self.pile.pop()
            self.hands[seat][v] += 1
            insort(self.tiles[seat], v)
            self.sizes[seat] += 1
            self.passes = 0  # E12: a draw counts as a move
            self.phase = DRAWN
            self.events.append({"type": "draw", "seat": seat, "pile": len(self.pile)})
        elif kind == "pickup":
            _, end, v = self.last_laid  # type: ignore[misc]
            if end == CCW:
                self.ccw = nxt(self.ccw)
            self.length -= 1
            self.hands[seat][v] += 1
            insort(self.tiles[seat], v)
            self.sizes[seat] += 1
            self.last_laid = None
            self.picked_end = end
            self.phase = PICKED
            self.events.append({"type": "pickup", "seat": seat, "end": end, "value": v})
        elif kind == "pass":
            if self.phase == START:
                self.passes += 1
            self.events.append({"type": "pass", "seat": seat})
            self._end_turn(seat, None)
        else:
            self._contest(seat, action["value"])

    def _place(self, seat: int, end: str, tiles: list[int], auto: bool = False) -> None:
        h = self.hands[seat]
        mine = self.tiles[seat]
        for v in tiles:
            h[v] -= 1
            mine.remove(v)
        n = len(tiles)
        self.sizes[seat] -= n
        if end == CCW:
            self.ccw = tiles[-1]
        self.length += n
        self.passes = 0
        event: dict[str, Any] = {"type": "place", "seat": seat, "end": end, "tiles": list(tiles)}
        if auto:
            event["auto"] = True
        self.events.append(event)
        if self.sizes[seat] == 0:
            self._end_round(seat)
        elif self.length == 12:
            self._refill(seat)
            self._end_turn(seat, None)
        else:
            self._end_turn(seat, (seat, end, tiles[-1]))

    def _discard(self, seat: int, v: int) -> None:
        self.hands[seat][v] -= 3
        mine = self.tiles[seat]
        i = mine.index(v)
        del mine[i:i + 3]
        self.sizes[seat] -= 3
        self.sets[seat].append(v)
        self.single[v] = True
        self.passes = 0
        self.events.append({"type": "discard", "seat": seat, "value": v})
        if self.sizes[seat] == 0:
            self._end_round(seat)
        else:
            self._end_turn(seat, None)

    def _contest(self, seat: int, v: int) -> None:
        """E11: take the four v tiles from the opponents; three are a set for the contester."""
        taken = [0] * PLAYERS
        for o in range(PLAYERS):
            if o != seat:
                taken[o] = self.hands[o][v]
                self.hands[o][v] = 0
                self.tiles[o] = [t for t in self.tiles[o] if t != v]
                self.sizes[o] -= taken[o]
        self.hands[seat][v] = 1
        insort(self.tiles[seat], v)
        self.sizes[seat] += 1
        self.sets[seat].append(v)
        self.contested[seat].append(v)
        self.single[v] = True
        self.passes = 0
        self.events.append({"type": "contest", "seat": seat, "value": v, "taken": taken})
        if self.length == 11:  # the last free slot: the tile is placed at once
            self._place(seat, CW, [v], auto=True)
        else:
            self.phase = CONTESTED

    def _refill(self, seat: int) -> None:
        """E3: dial tiles + rest of the pile shuffled into a new pile, top tile turned onto the dial."""
        tiles = list(range(1, 13)) + self.pile
        self.rng.shuffle(tiles)
        top = tiles.pop()
        self.pile = tiles
        self.ccw, self.length = top, 1
        self.events.append({"type": "refill", "seat": seat, "dial": top, "pile": len(tiles)})

    def _end_turn(self, seat: int, laid: tuple[int, str, int] | None) -> None:
        self.last_laid = laid
        self.picked_end = None
        self.turns += 1
        if self.turns >= self._max_turns:
            self._end_game("turn_cap")
            return
        self._begin_turn((seat + 1) % PLAYERS)

    def _begin_turn(self, seat: int) -> None:
        """Hand the turn to ``seat``; E12: a forced player who can neither place nor contest passes."""
        self.phase = START
        self.current_player = seat
        self._legal = None
        if self.passes >= 3:
            legal = self._compute_legal()
            if not legal:
                self.passes += 1
                self.events.append({"type": "pass", "seat": seat, "auto": True})
                self.last_laid = None
                self.turns += 1
                if self.turns >= self._max_turns:
                    self._end_game("turn_cap")
                    return
                if self.passes > 3 + 3 * PLAYERS:  # impossible by the rules: someone holds a playable tile
                    raise RuntimeError("epizodiak: forced play found no player able to move")
                self._begin_turn((seat + 1) % PLAYERS)
                return
            self._legal = legal

    def _round_points(self, emptied: int | None) -> list[int]:
        """Points each seat earns for the current round (E14-E16)."""
        counted = [len(self.sets[s]) - (0 if self._contest_point else len(self.contested[s]))
                   for s in range(PLAYERS)]
        if self._classic and not self._one_round:
            return [counted[s] if s == emptied else 0 for s in range(PLAYERS)]
        return [counted[s] + (3 if s == emptied else 0) for s in range(PLAYERS)]

    def _end_round(self, seat: int) -> None:
        """E13: ``seat`` emptied his hand."""
        points = self._round_points(seat)
        for s in range(PLAYERS):
            self.scores[s] += points[s]
        self.emptied = seat
        self.turns += 1
        self.last_laid = None
        self.picked_end = None
        self.events.append({"type": "round_end", "round": self.round, "emptied": seat, "points": points,
                            "scores": list(self.scores)})
        if self._one_round or max(self.scores) >= self._target:
            self._end_game("rules")
        elif self.turns >= self._max_turns:
            self._end_game("turn_cap")
        else:
            self._deal((seat + 1) % PLAYERS)

    def _end_game(self, ended_by: str) -> None:
        if ended_by == "turn_cap":
            # C3: the round in progress is scored as if it ended with nobody emptying his hand.
            points = self._round_points(None)
            for s in range(PLAYERS):
                self.scores[s] += points[s]
        self.ended_by = ended_by
        self.current_player = None
        self.phase = OVER
        self._legal = []
        result = self.result()
        self.events.append({"type": "game_end", "ended_by": ended_by, "scores": list(self.scores),
                            "ranking": result["ranking"]})

    # ------------------------------------------------------------------ queries
    def is_terminal(self) -> bool:
        return self.ended_by is not None

    def result(self) -> dict[str, Any]:
        if self.ended_by is None:
            raise ValueError("the game is not over")
        if self.ended_by == "turn_cap":
            keys = [(self.scores[s], -self.sizes[s]) for s in range(PLAYERS)]
        else:
            keys = [(self.scores[s], 1 if s == self.emptied else 0) for s in range(PLAYERS)]
        return {"ranking": ranking_from_keys(keys), "scores": list(self.scores), "ended_by": self.ended_by}

    def observation(self, seat: int) -> dict[str, Any]:
        ll = self.last_laid
        sets = self.sets
        if sets[0] or sets[1] or sets[2]:
            con = self.contested
            sets_json = [sets[0][:], sets[1][:], sets[2][:]]
            contested_json = [con[0][:], con[1][:], con[2][:]]
            singles = sorted(sets[0] + sets[1] + sets[2])
        else:  # the common case, kept cheap: observations are built at every decision
            sets_json, contested_json, singles = [[], [], []], [[], [], []], []
        arc = ARCS[self.ccw][self.length]
        return {
            "seat": seat,
            "round": self.round,
            "turn": self.current_player,
            "phase": self.phase,
            "forced": self.passes >= 3 and self.phase == START,
            "hand": self.tiles[seat][:],
            "hand_sizes": self.sizes[:],
            "dial": list(arc),
            "ends": {"ccw": self.ccw, "cw": arc[-1]},
            "pile": len(self.pile),
            "sets": sets_json,
            "contested": contested_json,
            "singles": singles,
            "scores": self.scores[:],
            "passes": self.passes,
            "last_laid": None if ll is None else {"seat": ll[0], "end": ll[1], "value": ll[2]},
            "picked_end": self.picked_end,
            "turns": self.turns,
        }

    def to_json(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        ll = self.last_laid
        return {
            "game": "epizodiak",
            "version": SNAPSHOT_VERSION,
            "options": dict(self.options),
            "rng": [version, list(internal), gauss],
            "round": self.round,
            "turns": self.turns,
            "current": self.current_player,
            "phase": self.phase,
            "hands": [h[:] for h in self.tiles],
            "pile": list(self.pile),
            "dial": self.dial_tiles(),
            "sets": [list(s) for s in self.sets],
            "contested": [list(s) for s in self.contested],
            "scores": list(self.scores),
            "passes": self.passes,
            "last_laid": None if ll is None else {"seat": ll[0], "end": ll[1], "value": ll[2]},
            "picked_end": self.picked_end,
            "emptied": self.emptied,
            "ended_by": self.ended_by,
            "events": [dict(e) for e in self.events],
        }

    def render(self) -> str:
        dial_row = " ".join(f"{v:>2}" if self._on_dial(v) else " ." for v in VALUES)
        lines = [
            f"Epizodiak round {self.round}, turn {self.turns}, "
            + ("game over (" + str(self.ended_by) + ")" if self.ended_by else
               f"seat {self.current_player} to play ({self.phase}{', forced' if self.passes >= 3 and self.phase == START else ''})"),
            f"dial  {dial_row}   arc {self.ccw}..{self.cw} (ccw..cw), {12 - self.length} free",
            f"pile  {len(self.pile)} tiles, passes in a row {self.passes}"
            + (f", pick-up candidate {self.last_laid[2]} ({self.last_laid[1]} end)" if self.last_laid else ""),
        ]
        for s in range(PLAYERS):
            marker = ">" if s == self.current_player else " "
            tiles = " ".join(str(t) for t in hand_list(self.hands[s]))
            sets = ",".join(str(v) + ("*" if v in self.contested[s] else "") for v in self.sets[s]) or "-"
            lines.append(f"{marker}seat {s}: score {self.scores[s]:>2}  sets {sets:<12} hand ({self.sizes[s]:>2}) {tiles}")
        return "\n".join(lines)

    def _on_dial(self, v: int) -> bool:
        return (v - self.ccw) % 12 < self.length

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
            shape_ok = Epizodiak.well_formed(action)
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
        legal = ", ".join(Epizodiak.format_action_text(a) for a in (self._legal or [])[:12])
        return IllegalAction(f"{Epizodiak.format_action_text(action)}: {reason} (legal: {legal or 'none'})")

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
        need = hand_counts(tiles)
        for v in VALUES:
            if need[v] > h[v]:
                return f"you hold no {v}"
        if end == CCW and len(tiles) == free:
            return ("a placement that fills the dial is written from the cw end: "
                    + Epizodiak.format_action_text({"type": "place", "end": CW, "tiles": tiles[::-1]}))
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
        return f"after picking up {v} you would have no placement on the other side and no set to discard"

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


class Epizodiak(Game):
    """Epizodiak rules and options; see docs/rules/epizodiak.md."""

    name = "epizodiak"
    min_players = PLAYERS
    max_players = PLAYERS
    option_list = (
        Option("mode", "rounds", "rounds: play rounds until someone reaches the target; one_round: a single round",
               choices=("rounds", "one_round")),
        Option("target", 7, "points that end the game in rounds mode", choices=(7, 13)),
        Option("scoring", "bga", "bga: everyone scores his sets, the emptier +3; classic: only the emptier scores "
               "his sets (rounds mode)", choices=("bga", "classic")),
        bool_option("contest_point", True, "a contested set scores like a discarded one"),
        int_option("max_turns", 5000, 1, 1_000_000, "turn cap (C3): the game stops after this many turns"),
    )

    def new_state(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> EpizodiakState:
        self.validate_players(players)
        opts = self.validate_options(options)
        state = EpizodiakState(opts)
        state.rng.seed(seed)
        first = state.rng.randrange(PLAYERS)
        state._deal(first)
        return state

    # ------------------------------------------------------------------ snapshots
    def state_from_json(self, data: Mapping[str, Any]) -> EpizodiakState:
        try:
            return self._restore(data)
        except InvalidSnapshot:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise InvalidSnapshot(f"not an epizodiak snapshot: {type(exc).__name__}: {exc}") from None

    def _restore(self, data: Mapping[str, Any]) -> EpizodiakState:
        if not isinstance(data, Mapping) or data.get("game") != "epizodiak":
            raise InvalidSnapshot("not an epizodiak snapshot (\"game\" must be \"epizodiak\")")
        if data.get("version") != SNAPSHOT_VERSION:
            raise InvalidSnapshot(f"unsupported snapshot version {data.get('version')!r} (expected {SNAPSHOT_VERSION})")
        opts = self.validate_options(data["options"])
        state = EpizodiakState(opts)
        version, internal, gauss = data["rng"]
        state.rng.setstate((version, tuple(internal), gauss))
        state.round = int(data["round"])
        state.turns = int(data["turns"])
        hands = data["hands"]
        if len(hands) != PLAYERS:
            raise InvalidSnapshot("\"hands\" must list three hands")
        for tiles in [*hands, data["pile"], data["dial"]]:
            for t in tiles:
                if type(t) is not int or not 1 <= t <= 12:
                    raise InvalidSnapshot(f"tile {t!r} is not a value from 1 to 12")
        state.hands = [hand_counts(list(h)) for h in hands]
        state.tiles = [sorted(h) for h in hands]
        state.sizes = [len(h) for h in hands]
        state.pile = list(data["pile"])
        dial = list(data["dial"])
        longest = 11 if data["ended_by"] is None else 12  # a round's last placement may fill the dial
        if not 1 <= len(dial) <= longest or any(nxt(a) != b for a, b in zip(dial, dial[1:])):
            raise InvalidSnapshot(f"\"dial\" must be 1 to {longest} consecutive values going clockwise, not {dial}")
        state.ccw, state.length = dial[0], len(dial)
        state.sets = [list(s) for s in data["sets"]]
        state.contested = [list(s) for s in data["contested"]]
        if len(state.sets) != PLAYERS or len(state.contested) != PLAYERS:
            raise InvalidSnapshot("\"sets\" and \"contested\" must have one list per seat")
        for s in range(PLAYERS):
            if any(v not in state.sets[s] for v in state.contested[s]):
                raise InvalidSnapshot("every contested set must also be listed in \"sets\"")
            for v in state.sets[s]:
                state.single[v] = True
        total = sum(state.sizes) + len(state.pile) + state.length + 3 * sum(len(s) for s in state.sets)
        counts = [0] * 13
        for tiles in [*hands, state.pile, dial]:
            for t in tiles:
                counts[t] += 1
        for s in state.sets:
            for v in s:
                counts[v] += 3
        if total != TILES or any(counts[v] != 4 for v in VALUES):
            raise InvalidSnapshot("the snapshot does not account for exactly four tiles of each value "
                                  f"(per value: {counts[1:]})")
        state.scores = [int(x) for x in data["scores"]]
        state.passes = int(data["passes"])
        ll = data["last_laid"]
        state.last_laid = None if ll is None else (int(ll["seat"]), ll["end"], int(ll["value"]))
        if ll is not None and (state.last_laid[1] not in (CW, CCW) or not 0 <= state.last_laid[0] < PLAYERS
                               or state.last_laid[2] != (state.cw if state.last_laid[1] == CW else state.ccw)):
            raise InvalidSnapshot(f"\"last_laid\" {ll} is not the tile at that end of the dial")
        state.picked_end = data["picked_end"]
        state.emptied = data["emptied"]
        state.ended_by = data["ended_by"]
        events = data.get("events", [])
        if not isinstance(events, list) or not all(isinstance(e, Mapping) and "type" in e for e in events):
            raise InvalidSnapshot("\"events\" must be a list of event objects, each with a \"type\"")
        state.events = [dict(e) for e in events]
        state.phase = data["phase"]
        if state.phase not in PHASES:
            raise InvalidSnapshot(f"unknown phase {state.phase!r} (one of {', '.join(PHASES)})")
        if state.ended_by not in (None, "rules", "turn_cap"):
            raise InvalidSnapshot("\"ended_by\" must be null, \"rules\" or \"turn_cap\"")
        current = data["current"]
        if state.ended_by is None:
            if type(current) is not int or not 0 <= current < PLAYERS:
                raise InvalidSnapshot("\"current\" must be a seat 0-2 while the game is on")
            if state.phase == PICKED and state.picked_end not in (CW, CCW):
                raise InvalidSnapshot("phase \"picked\" needs \"picked_end\" (cw or ccw)")
            state.current_player = current
        else:
            state.current_player = None
            state.phase = OVER
            state._legal = []
        return state

    # ------------------------------------------------------------------ text form
    @staticmethod
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

    @staticmethod
    def format_action_text(action: Action) -> str:
        kind = action.get("type") if isinstance(action, dict) else None
        if kind == "place":
            return " ".join([str(action["end"]), *(str(t) for t in action["tiles"])])
        if kind in ("discard", "contest"):
            return f"{kind} {action['value']}"
        if kind in ("draw", "pickup", "pass"):
            return str(kind)
        return repr(action)

    def format_action(self, action: Action) -> str:
        """``cw 5 6 7``, ``ccw 4 3``, ``discard 4``, ``contest 9``, ``draw``, ``pickup``, ``pass``."""
        self.well_formed(action)
        return self.format_action_text(action)

    def parse_action(self, text: str) -> Action:
        """Inverse of :meth:`format_action`; :class:`InvalidAction` if the text is not an action."""
        if not isinstance(text, str):
            raise InvalidAction(f"an action text is a string, not {text!r}")
        words = text.split()
        if not words:
            raise InvalidAction("empty action text")
        head, rest = words[0].lower(), words[1:]
        try:
            numbers = [int(w) for w in rest]
        except ValueError:
            raise InvalidAction(f"cannot read {text!r}: expected numbers after {head!r}") from None
        if head in (CW, CCW):
            action: Action = {"type": "place", "end": head, "tiles": numbers}
        elif head in ("discard", "contest") and len(numbers) == 1:
            action = {"type": head, "value": numbers[0]}
        elif head in ("draw", "pickup", "pass") and not numbers:
            action = {"type": head}
        else:
            raise InvalidAction(f"cannot read {text!r} (examples: 'cw 5 6 7', 'ccw 4 3', 'discard 4', "
                                "'contest 9', 'draw', 'pickup', 'pass')")
        self.well_formed(action)
        return action
