"""What a tree search needs to know of Crisps (see :class:`harness.games.base.Evaluator`).

Playouts stop at the end of the deal in progress (measured in docs/bots.md).
"""

from __future__ import annotations

from typing import Any

from ..base import Evaluator


def _deal(state: Any) -> int:
    return int(state.deal)


EVALUATOR = Evaluator(horizon=_deal, scale=0.5)
