"""One game as data for the replay viewer: every position, move, offer, note and observation.

Rebuilt from what the store keeps, never guessed: the engine replays the game from its seed
and the actions of the referee's log (:func:`harness.report.tables.replay_moves`), giving the
spectator's position after every move (the state's snapshot, without its RNG); the log gives,
for every decision a bot was asked, the exact observation and offered actions it was sent, the
answer's time, and the referee's own moves (forced, fallback, forfeited); the store gives the
violations. A seat's view of a frame is the last observation that seat was actually sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.report.tables import replay_moves

__all__ = ["DRAWN", "game_replay", "script_json"]

#: Games templates/game.html draws as pictures; any other game is shown as text.
DRAWN = frozenset({"epizodiak", "dominoes", "crisps"})

_DROP = ("rng", "events", "options", "version", "game")


def _text(game: Any, action: Any) -> str:
    try:
        return str(game.format_action(action))
    except Exception:  # noqa: BLE001 - a malformed action still shows as JSON
        return json.dumps(action)


def _snapshot(state: Any) -> dict[str, Any]:
    return {k: v for k, v in state.to_json().items() if k not in _DROP}


def game_replay(game: Any, options: dict[str, Any], game_row: Any, seats: Sequence[Any],
                log: list[dict[str, Any]] | None, violations: Sequence[Any] = ()) -> dict[str, Any]:
    """The replay of one stored game as plain data (see the module docstring)."""
    names = [f"{s['name']}@{s['version']}" for s in seats]
    data: dict[str, Any] = {
        "game": game.name, "game_id": game_row["id"], "seed": game_row["seed"], "round": game_row["round"],
        "seats": names, "result": {"ranks": [s["rank"] for s in seats], "scores": [s["score"] for s in seats],
                                   "forfeited": [bool(s["forfeited"]) for s in seats],
                                   "ended_by": game_row["ended_by"]},
        "frames": [], "observations": {}, "complete": False, "drawn": game.name in DRAWN}
    if log is None or game_row["status"] != "done":
        return data
    requests: dict[int, dict[str, Any]] = {}
    times: dict[int, float] = {}
    pending: dict[int, int] = {}
    for entry in log:
        msg = entry.get("msg")
        if entry.get("type") == "send" and isinstance(msg, dict) and msg.get("type") == "request":
            requests[msg["id"]] = msg
            pending[entry["seat"]] = msg["id"]
        elif entry.get("type") == "recv" and isinstance(msg, dict) and msg.get("type") == "action":
            if pending.get(entry.get("seat", -1)) is not None:
                times[pending.pop(entry["seat"])] = entry.get("ms", 0.0)
    by_move: dict[int, list[dict[str, Any]]] = {}
    for v in violations:
        move = (v["decision"] + 1) if isinstance(v["decision"], int) else 0
        by_move.setdefault(move, []).append({"seat": v["seat"], "kind": v["kind"], "detail": v["detail"], "id": v["id"]})
    state = game.new_state(len(seats), game_row["seed"], options)
    seen: list[int | None] = [None] * len(seats)
    text = (lambda: None) if data["drawn"] else state.render
    data["frames"].append({"move": 0, "snapshot": _snapshot(state), "views": list(seen), "events": [],
                           "violations": by_move.get(0, []), "text": text()})
    observations: dict[str, Any] = {}
    for n, (seat, action, how, request_id) in enumerate(replay_moves(log), 1):
        legal = state.legal_actions()
        offered = [_text(game, a) for a in legal]
        chosen = next((i for i, a in enumerate(legal) if a == action), None)
        if request_id is not None and request_id in requests:
            seen[seat] = request_id
            observations[str(request_id)] = requests[request_id].get("observation")
        before = len(state.events)
        try:
            state.apply(action)
        except ValueError as exc:
            data["error"] = f"the log does not replay at move {n}: {exc}"
            break
        data["frames"].append({
            "move": n, "seat": seat, "action": _text(game, action), "how": how, "request_id": request_id,
            "ms": times.get(request_id) if request_id is not None else None, "offered": offered, "chosen": chosen,
            "snapshot": _snapshot(state), "views": list(seen), "violations": by_move.get(n, []),
            "events": [json.dumps(e, separators=(",", ":")) for e in state.events[before:]], "text": text()})
    data["observations"] = observations
    data["complete"] = state.is_terminal()
    if data["complete"]:
        data["final_scores"] = list(state.result()["scores"])
    return data


def script_json(value: Any) -> str:
    """JSON safe inside an HTML ``<script type="application/json">``: no ``<``, ``>`` or ``&`` at
    all (a bot's ``</script>`` cannot close the element), read back with ``JSON.parse``."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
