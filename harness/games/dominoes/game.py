"""All-Fives Dominoes, the game: options, new states, snapshots and the text form of actions.

The rules as implemented are in docs/rules/dominoes.md; the state and its turn flow are in
:mod:`.state`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from ..base import Action, Evaluator, Game, InvalidAction, InvalidSnapshot, Sampler, int_option
from .state import DominoesState, restore, tile_text

_TEXT_RE = re.compile(r"^\s*([0-6])\s*-\s*([0-6])(?:\s+(left|right|l|r))?\s*$", re.IGNORECASE)


class Dominoes(Game):
    """All-Fives Dominoes for 2, 3 or 4 players (rulings D1-D8 of docs/rules/dominoes.md)."""

    name = "dominoes"
    min_players = 2
    max_players = 4
    option_list = (
        int_option("target", 200, 5, 10_000, "score that wins the game (D8)"),
        int_option("max_turns", 5000, 1, 1_000_000,
                   "turn cap (C3): the game stops after this many actions (plays, draws and passes)"),
    )

    def new_state(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> DominoesState:
        players = self.validate_players(players)
        opts = self.validate_options(options)
        state = DominoesState(players, opts, random.Random(seed))
        state._start_hand(None)
        return state

    def state_from_json(self, data: Mapping[str, Any]) -> DominoesState:
        try:
            return restore(self, data)
        except InvalidSnapshot:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise InvalidSnapshot(f"not a dominoes snapshot: {type(exc).__name__}: {exc}") from None

    def sampler(self) -> Sampler:
        from .sampling import resample

        return resample

    def evaluator(self) -> Evaluator:
        from .evaluator import EVALUATOR

        return EVALUATOR

    def format_action(self, action: Action) -> str:
        kind = action.get("type") if isinstance(action, dict) else None
        if kind in ("draw", "pass"):
            return str(kind)
        if kind == "play":
            text = tile_text(action["tile"])
            return f"{text} {action['end']}" if "end" in action else text
        raise InvalidAction(f"not a dominoes action: {action!r}")

    def parse_action(self, text: str) -> Action:
        word = text.strip().lower() if isinstance(text, str) else None
        if word in ("draw", "pass"):
            return {"type": word}
        match = _TEXT_RE.match(text) if isinstance(text, str) else None
        if not match:
            raise InvalidAction(f'cannot read {text!r} as a dominoes action (e.g. "6-4 left", "5-5", "draw", "pass")')
        a, b = int(match[1]), int(match[2])
        action: Action = {"type": "play", "tile": [max(a, b), min(a, b)]}
        if match[3]:
            action["end"] = "left" if match[3].lower().startswith("l") else "right"
        return action
