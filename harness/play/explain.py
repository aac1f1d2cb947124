"""Why an answer is illegal, in the game's own words (the slow path: only on a violation).

The protocol check only knows that an answer is not among the offered actions. The engine knows
why: a tile not in hand, the wrong end, not a run, a set already discarded. The referee asks it
on a copy of the state (``apply`` of an illegal action raises ``IllegalAction`` or
``InvalidAction`` with the reason and changes nothing, but a copy costs nothing that matters
here and keeps the real game safe from an engine bug), and adds the offered actions nearest to
the answer, so the bot author sees at once what was possible.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from harness.games.base import Game, State
from harness.play import protocol

__all__ = ["explain_illegal"]


def _text(game: Game, action: Any) -> str:
    try:
        return str(game.format_action(action))
    except Exception:  # noqa: BLE001 - a malformed action has no text form
        return repr(action)[:80]


def explain_illegal(game: Game, state: State, answer: bytes, legal: Sequence[Any], max_depth: int,
                    detail: str) -> str:
    """``detail`` (the protocol's "not among the offered actions") with the engine's reason and the
    nearest offered actions, when the answer named an action by value."""
    try:
        msg = protocol.decode(answer, max_depth)
    except protocol.BadMessage:
        return detail
    if not isinstance(msg, dict) or "action" not in msg:
        shown = ", ".join(_text(game, a) for a in legal[:8]) + (", ..." if len(legal) > 8 else "")
        return f"{detail} (offered: {shown})" if legal else detail
    action = msg["action"]
    reason = ""
    try:
        game.state_from_json(state.to_json()).apply(action)
    except ValueError as exc:  # IllegalAction and InvalidAction: the engine's reason
        reason = str(exc)
    except Exception as exc:  # noqa: BLE001 - an engine bug must not cost the bot its explanation
        reason = f"(the engine could not say why: {type(exc).__name__})"
    texts = [_text(game, a) for a in legal]
    shown = _text(game, action)
    nearest = difflib.get_close_matches(shown, texts, n=3, cutoff=0.0)
    if not reason:
        out = f"{shown} is not among the offered actions"
    else:  # the engine's reason, naming the action once ("Q Q Q Q Q is no play: ...")
        out = reason if reason.startswith(shown) else f"{shown}: {reason}"
    if nearest and "legal:" not in out:
        out += f" (nearest offered: {', '.join(nearest)})"
    return out
