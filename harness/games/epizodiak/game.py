"""Epizodiak: three players, 48 tiles (1-12 four times), a circular dial of twelve slots.

The rules as implemented, the options and every data format are in docs/rules/epizodiak.md;
the E-numbers in comments refer to the rulings in that page. This module is the game: its
options, new states, snapshots and the text form of actions. The state and its turn flow are
in :mod:`.state`, the dial's vocabulary in :mod:`.dial`, the reasons for a rejection in
:mod:`.reasons`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base import (
    Action,
    EndedBy,
    Evaluator,
    Game,
    InvalidAction,
    InvalidSnapshot,
    Option,
    Sampler,
    bool_option,
    int_option,
)
from .dial import *  # noqa: F403  (re-exported: the game's vocabulary)
from .dial import CCW, CW, OVER, PHASES, PICKED, PLAYERS, SNAPSHOT_VERSION, TILES, VALUES, hand_counts, nxt
from .reasons import format_action_text, well_formed
from .state import EpizodiakState

__all__ = ["Epizodiak", "EpizodiakState"]


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
        state = EpizodiakState(self.validate_options(data["options"]))
        version, internal, gauss = data["rng"]
        state.rng.setstate((version, tuple(internal), gauss))
        state.round = int(data["round"])
        state.turns = int(data["turns"])
        _restore_tiles(state, data)
        _restore_play(state, data)
        return state

    # ------------------------------------------------------------------ text form
    well_formed = staticmethod(well_formed)

    format_action_text = staticmethod(format_action_text)

    def sampler(self) -> Sampler:
        from .sampling import resample

        return resample

    def evaluator(self) -> Evaluator:
        from .evaluator import EVALUATOR

        return EVALUATOR

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


def _restore_tiles(state: EpizodiakState, data: Mapping[str, Any]) -> None:
    """Hands, pile, dial and sets from a snapshot, checked to hold exactly four tiles of each value."""
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
        for t in tiles:  # a list of tile values
            counts[t] += 1
    for tile_set in state.sets:
        for v in tile_set:
            counts[v] += 3
    if total != TILES or any(counts[v] != 4 for v in VALUES):
        raise InvalidSnapshot("the snapshot does not account for exactly four tiles of each value "
                              f"(per value: {counts[1:]})")


def _restore_play(state: EpizodiakState, data: Mapping[str, Any]) -> None:
    """Scores, the last tile laid, events, phase and the seat to move from a snapshot, checked."""
    state.scores = [int(x) for x in data["scores"]]
    state.passes = int(data["passes"])
    ll = data["last_laid"]
    laid = None if ll is None else (int(ll["seat"]), str(ll["end"]), int(ll["value"]))
    state.last_laid = laid
    if laid is not None and (laid[1] not in (CW, CCW) or not 0 <= laid[0] < PLAYERS
                             or laid[2] != (state.cw if laid[1] == CW else state.ccw)):
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
    if state.ended_by not in (None, *EndedBy):
        raise InvalidSnapshot("\"ended_by\" must be null, \"rules\" or \"turn_cap\"")
    current = data["current"]
    if state.ended_by is not None:
        state.current_player = None
        state.phase = OVER
        state._legal = []
        return
    if type(current) is not int or not 0 <= current < PLAYERS:
        raise InvalidSnapshot("\"current\" must be a seat 0-2 while the game is on")
    if state.phase == PICKED and state.picked_end not in (CW, CCW):
        raise InvalidSnapshot("phase \"picked\" needs \"picked_end\" (cw or ccw)")
    if state.phase == PICKED and state.length > 10:
        # E7: the picked tile's slot stays free, and a placement after the pick-up needs
        # another: a pick-up always leaves at least two free slots
        raise InvalidSnapshot("phase \"picked\" needs a dial of at most 10 tiles (a pick-up leaves "
                              "its slot and at least one more free)")
    state.current_player = current
