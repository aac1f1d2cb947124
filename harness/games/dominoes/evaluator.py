"""What a tree search needs to know of All-Fives Dominoes (see :class:`harness.games.base.Evaluator`).

Playouts stop at the end of the hand in progress: the few points a move decides would drown in
the noise of the ten hands of a 200-point game after it (measured in docs/bots.md).
"""

from __future__ import annotations

from typing import Any

from ..base import Evaluator


def _hand_number(state: Any) -> int:
    return int(state.hand_number)


EVALUATOR = Evaluator(horizon=_hand_number, scale=15.0)
