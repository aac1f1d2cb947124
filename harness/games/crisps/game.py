"""Crisps, the game: options, new states, snapshots and the text form of actions.

The rules as implemented are in docs/rules/crisps.md; the state and its turn flow are in
:mod:`.state`, the plays in :mod:`.plays`, snapshots in :mod:`.snapshot`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ..base import Action, Evaluator, Game, InvalidAction, Sampler, bool_option, int_option
from .plays import LABELS
from .snapshot import restore
from .state import PLAYERS, CrispsState


class Crisps(Game):
    """Crisps for 2 players: rules in docs/rules/crisps.md."""

    name = "crisps"
    min_players = 2
    max_players = 2
    option_list = (
        bool_option("faceup_draw", True, "after a pass the last player chooses the face-up offer or a blind "
                                         "card and the passer takes the other (false: both draw blind)"),
        bool_option("jacks", False, "the four Queens are Jacks: rank 11, consecutive to 10, allowed in runs"),
        bool_option("auto_skip", False, "a player who cannot beat the play on public information passes "
                                        "automatically"),
        int_option("max_turns", 2000, 1, 1_000_000, "turn cap (ruling C3): decisions before the game is cut "
                                                   "off and ranked by points, then fewer cards in hand"),
    )

    def new_state(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> CrispsState:
        self.validate_players(players)
        opts = self.validate_options(options)
        state = CrispsState(opts, seed, random.Random(seed))
        state._start_deal(state._rng.randrange(PLAYERS))
        return state

    def state_from_json(self, data: Mapping[str, Any]) -> CrispsState:
        state: CrispsState = restore(self.validate_options, CrispsState, data)
        return state

    def sampler(self) -> Sampler:
        from .sampling import resample

        return resample

    def evaluator(self) -> Evaluator:
        from .evaluator import EVALUATOR

        return EVALUATOR

    def format_action(self, action: Action) -> str:
        if isinstance(action, dict):
            kind = action.get("type")
            if kind == "pass" and len(action) == 1:
                return "pass"
            if kind == "take" and action.get("source") in ("offer", "blind") and len(action) == 2:
                return f"take {action['source']}"
            cards = action.get("cards")
            if (kind == "play" and len(action) == 2 and isinstance(cards, list) and cards
                    and all(isinstance(c, str) and c.upper() in _ALL_LABELS for c in cards)):
                return " ".join(cards)
        raise InvalidAction(f"not a Crisps action: {action!r}")

    def parse_action(self, text: str) -> Action:
        words = text.split() if isinstance(text, str) else []
        if words == ["pass"]:
            return {"type": "pass"}
        if len(words) == 2 and words[0] == "take" and words[1] in ("offer", "blind"):
            return {"type": "take", "source": words[1]}
        if words and all(w.upper() in _ALL_LABELS for w in words):
            return {"type": "play", "cards": [w.upper() for w in words]}
        raise InvalidAction(f"cannot read {text!r} as a Crisps action (examples: '5 6 7', 'Q Q Q', 'pass', "
                            "'take offer', 'take blind')")


_ALL_LABELS = frozenset(LABELS[False][2:]) | frozenset(LABELS[True][2:])
