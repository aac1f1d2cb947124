"""Epizodiak's state: legal actions, the turn flow, rounds and scoring, observations.

State is kept compact for speed: each hand is a list of 13 counts (index = tile value,
index 0 unused), the dial is one arc given by its counter-clockwise end value and its
length, the pile is a list whose last element is the top tile. The E-numbers in comments
refer to the rules in docs/rules/epizodiak.md.
"""

from __future__ import annotations

import random
from bisect import insort
from typing import Any

from ..base import Action, EndedBy, GameResult, State, ranking_from_keys
from .dial import (
    ARCS,
    CCW,
    CONTESTED,
    CW,
    DRAWN,
    NXT,
    OTHER_END,
    OVER,
    PICKED,
    PLAYERS,
    PRV,
    SNAPSHOT_VERSION,
    START,
    VALUES,
    hand_counts,
    hand_list,
    nxt,
    prv,
)
from .reasons import EpizodiakReasons


class EpizodiakState(EpizodiakReasons, State):
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

    def _placements(self, h: list[int], ends: tuple[str, ...], free: int | None = None) -> list[Action]:
        """Every placement from the given ends (E2), using at most ``free`` slots (default: all the
        free ones). A placement that fills the dial is listed once, from the cw end, when both ends
        are allowed (the two would give the same dial)."""
        out: list[Action] = []
        if free is None:
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
        # A placement on the other end: its first slot is never the one the tile came from (the
        # dial holds at most 11 tiles before the pick-up, so at least two slots are free after it
        # and the run may use all but the picked slot, E7), hence the first tile decides.
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
            # E7: the run from the other end stops before the slot the tile was picked from (a
            # picked-up tile cannot be put back), so it uses one slot less than free.
            other = OTHER_END[self.picked_end]  # type: ignore[index]
            return self._placements(h, (other,), 11 - self.length) + self._discards(h)
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
            self._end_game(EndedBy.TURN_CAP)
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
                    self._end_game(EndedBy.TURN_CAP)
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
            self._end_game(EndedBy.RULES)
        elif self.turns >= self._max_turns:
            # C3: this round is scored above, once; no round is in progress (nothing more to add).
            self._end_game(EndedBy.TURN_CAP, round_in_progress=False)
        else:
            self._deal((seat + 1) % PLAYERS)

    def _end_game(self, ended_by: str, round_in_progress: bool = True) -> None:
        if ended_by == EndedBy.TURN_CAP and round_in_progress:
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

    def result(self) -> GameResult:
        if self.ended_by is None:
            raise ValueError("the game is not over")
        if self.ended_by == EndedBy.TURN_CAP:
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
            f"pile  {len(self.pile)} tile{'' if len(self.pile) == 1 else 's'}, passes in a row {self.passes}"
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
