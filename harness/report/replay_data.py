"""One game as data for the replay viewer: every position, move, offer, note and observation.

Rebuilt from what the store keeps, never guessed: the engine replays the game from its seed
and the actions of the referee's log (:func:`harness.report.tables.replay_moves`), giving the
spectator's position after every move (the state's snapshot, without its RNG); the log gives,
for every decision a bot was asked, the exact observation and offered actions it was sent, the
answer's time, and the referee's own moves (forced, fallback, forfeited); the store gives the
violations, and the log the seats that forfeited (from which move) and what each bot wrote to
stderr while it decided (logged beside its answer). A seat's observation of a frame is the last
one it was actually sent; the viewer draws a seat's picture from the spectator's position with
the other hands hidden, so it is never older than the move shown.

The data is plain JSON (the ``replay_viewer.html`` template draws it), so another page, the
contest site's spectator replays, embeds the same viewer with its own data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.league.store_rows import GameRow, SeatRow, ViolationRow
from harness.report.tables import replay_moves, truncation_note

__all__ = ["DRAWN", "game_replay", "script_json"]

#: Games the viewer draws as pictures (a renderer each in templates/replay_games.js); any other
#: game is shown as text, its engine's render() kept with every frame.
DRAWN = frozenset({"epizodiak", "dominoes", "crisps"})

_DROP = ("rng", "events", "options", "version", "game")


def _text(game: Any, action: Any) -> str:
    try:
        return str(game.format_action(action))
    except Exception:  # noqa: BLE001 - a malformed action still shows as JSON
        return json.dumps(action)


def _snapshot(state: Any) -> dict[str, Any]:
    return {k: v for k, v in state.to_json().items() if k not in _DROP}


@dataclass
class _LogScan:
    requests: dict[int, dict[str, Any]] = field(default_factory=dict)  # request id -> the request sent
    times: dict[int, float] = field(default_factory=dict)  # request id -> ms to the answer
    stderr: dict[int, str] = field(default_factory=dict)  # request id -> stderr while deciding
    rejected: dict[int, int] = field(default_factory=dict)  # move -> the request whose answer was rejected
    forfeits: list[dict[str, Any]] = field(default_factory=list)


def _scan_log(log: list[dict[str, Any]]) -> _LogScan:
    """What the log says besides the moves: requests, answer times, stderr, rejected answers, forfeits."""
    scan = _LogScan()
    pending: dict[int, int] = {}
    last_decision = 0
    for entry in log:
        msg = entry.get("msg")
        kind = entry.get("type")
        if kind == "send" and isinstance(msg, dict) and msg.get("type") == "request":
            scan.requests[msg["id"]] = msg
            pending[entry["seat"]] = msg["id"]
        elif kind == "recv" and isinstance(msg, dict) and msg.get("type") == "action":
            if pending.get(entry.get("seat", -1)) is not None:
                scan.times[pending.pop(entry["seat"])] = entry.get("ms", 0.0)
        elif kind == "stderr" and isinstance(entry.get("id"), int):
            scan.stderr[entry["id"]] = str(entry.get("text", ""))
        elif kind == "violation" and isinstance(entry.get("decision"), int):
            last_decision = entry["decision"]
            try:  # the request it answered (none for a violation before any request)
                request_id = json.loads(entry.get("request") or "null")["id"]
            except (ValueError, TypeError, KeyError):
                continue
            if isinstance(request_id, int):
                scan.rejected[last_decision + 1] = request_id
        elif kind == "forfeit":
            # the seat forfeits on the decision of its last violation: that move is the referee's
            scan.forfeits.append({"seat": entry.get("seat"), "move": last_decision + 1, "kind": entry.get("kind", "")})
    return scan


def game_replay(game: Any, options: dict[str, Any], game_row: GameRow, seats: Sequence[SeatRow],
                log: list[dict[str, Any]] | None, violations: Sequence[ViolationRow] = ()) -> dict[str, Any]:
    """The replay of one stored game as plain data (see the module docstring)."""
    names = [f"{s.name}@{s.version}" for s in seats]
    data: dict[str, Any] = {
        "game": game.name, "game_id": game_row.id, "seed": game_row.seed, "round": game_row.round,
        "seats": names, "result": {"ranks": [s.rank for s in seats], "scores": [s.score for s in seats],
                                   "forfeited": [bool(s.forfeited) for s in seats],
                                   "ended_by": game_row.ended_by},
        "frames": [], "observations": {}, "complete": False, "drawn": game.name in DRAWN}
    if log is None or game_row.status != "done":
        return data
    scan = _scan_log(log)
    requests = scan.requests
    data["forfeits"] = scan.forfeits
    by_move: dict[int, list[dict[str, Any]]] = {}
    for v in violations:
        move = (v.decision + 1) if isinstance(v.decision, int) else 0
        by_move.setdefault(move, []).append({"seat": v.seat, "kind": v.kind, "detail": v.detail, "id": v.id})
    state = game.new_state(len(seats), game_row.seed, options)
    seen: list[int | None] = [None] * len(seats)
    text = (lambda: None) if data["drawn"] else state.render
    data["frames"].append({"move": 0, "snapshot": _snapshot(state), "views": list(seen), "events": list(state.events),
                           "violations": by_move.get(0, []), "text": text()})
    observations: dict[str, Any] = {}
    for n, (seat, action, how, request_id) in enumerate(replay_moves(log), 1):
        legal = state.legal_actions()
        offered = [_text(game, a) for a in legal]
        chosen = next((i for i, a in enumerate(legal) if a == action), None)
        asked = request_id if request_id is not None else scan.rejected.get(n)  # a rejected answer's request
        if asked is not None and asked in requests:
            seen[seat] = asked
            observations[str(asked)] = requests[asked].get("observation")
        before = len(state.events)
        try:
            state.apply(action)
        except ValueError as exc:
            data["error"] = f"the log does not replay at move {n}: {exc}"
            break
        data["frames"].append({
            "move": n, "seat": seat, "action": _text(game, action), "how": how, "request_id": request_id,
            "asked": asked, "ms": scan.times.get(request_id) if request_id is not None else None,
            "offered": offered, "chosen": chosen,
            "snapshot": _snapshot(state), "views": list(seen), "violations": by_move.get(n, []),
            "stderr": scan.stderr.get(request_id, "") if request_id is not None else "",
            "events": list(state.events[before:]), "text": text()})
    data["observations"] = observations
    data["complete"] = state.is_terminal()
    note = truncation_note(log)
    if note:
        data["truncated"] = True
        data.setdefault("error", note + "; the moves after this one are not in it")
    if data["complete"]:
        data["final_scores"] = list(state.result()["scores"])
    return data


def script_json(value: Any) -> str:
    """JSON safe inside an HTML ``<script type="application/json">``: no ``<``, ``>`` or ``&`` at
    all (a bot's ``</script>`` cannot close the element), read back with ``JSON.parse``."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
