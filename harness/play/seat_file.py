"""One seat of one game as a file: what the seat was sent and answered, its stderr, its violations.

A contest lets a team download every game it played from its own seat (``/me/games/G/seat/S/download``)
and every violation as the game up to the request that caused it; ``harness reproduce FILE --command
CMD`` then sends a bot on the author's machine exactly those requests, in order, with the same time
controls (:func:`reproduce_seat`), and says where its answers differ and whether the violation is gone.

The file is JSON (``format: tablebots-seat/1``)::

    {"format": "tablebots-seat/1", "game": "crisps", "options": {...}, "players": 2, "seat": 1,
     "game_id": "...", "time": {"init_ms": ..., "move_ms": ..., "bank_ms": ...}, "limits": {...},
     "lines": [{"dir": "sent" | "received", "line": "<the exact JSON line>", "ms": 12.3}, ...],
     "stderr": [{"request": 7, "text": "..."}], "violations": [{"id": ..., "kind": ..., "detail": ...,
     "request": "<line>", "received": "<line>", "stderr_tail": "..."}], "violation": <the one to
     reproduce, or null>}

It holds only what that seat saw: the messages sent to it (its own observations), its answers, its
stderr and its violations (without the referee's snapshot of the whole game, which shows every hand).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.play import protocol
from harness.play.limits import LIMIT_KEYS

__all__ = ["FORMAT", "SeatFileError", "check_seat_file", "seat_file", "seat_log", "reproduce_seat"]

FORMAT = "tablebots-seat/1"
#: the limits a downloaded file carries: not the sandbox (the author's machine's own choice), nor the
#: CPU time and stderr disk of a whole league's life
CARRIED_LIMITS = tuple(k for k in LIMIT_KEYS if k not in ("sandbox", "cpu_seconds", "stderr_bytes"))
_VIOLATION_KEYS = ("id", "game_id", "decision", "seat", "kind", "detail", "request", "received", "stderr_tail")


class SeatFileError(ValueError):
    """A file that is not a seat file; the message says what is wrong."""


def seat_file(*, game: str, options: Mapping[str, Any], players: int, seat: int, game_id: str,
              time: Mapping[str, int], limits: Mapping[str, Any], log: list[dict[str, Any]],
              violations: Sequence[Mapping[str, Any]], violation_id: int | None = None) -> dict[str, Any]:
    """The file of ``seat`` in a game whose referee ``log`` is given (every seat's entries: only
    ``seat``'s are kept); ``violations`` are that seat's stored records, ``violation_id`` the one
    to reproduce (its request ends the file's lines)."""
    lines: list[dict[str, Any]] = []
    stderr: list[dict[str, Any]] = []
    wanted = next((v for v in violations if v.get("id") == violation_id), None)
    last_id = _request_id(wanted.get("request")) if wanted else None
    for entry in log:
        if entry.get("seat") != seat:
            continue
        kind = entry.get("type")
        if kind == "send" and isinstance(entry.get("msg"), dict):
            lines.append({"dir": "sent", "line": protocol.encode(entry["msg"]).decode().rstrip("\n")})
            if last_id is not None and entry["msg"].get("type") == "request" and entry["msg"].get("id") == last_id:
                break
        elif kind == "recv":
            text = json.dumps(entry["msg"], separators=(",", ":")) if "msg" in entry else str(entry.get("raw", ""))
            lines.append({"dir": "received", "line": text, "ms": entry.get("ms")})
        elif kind == "stderr":
            stderr.append({"request": entry.get("id"), "text": entry.get("text", "")})
    kept = [{k: v.get(k) for k in _VIOLATION_KEYS} for v in violations]
    return {"format": FORMAT, "game": game, "options": dict(options), "players": players, "seat": seat,
            "game_id": game_id, "time": dict(time), "limits": {k: v for k, v in limits.items() if k in CARRIED_LIMITS},
            "lines": lines, "stderr": stderr, "violations": kept,
            "violation": next((v for v in kept if v["id"] == violation_id), None)}


def _request_id(line: Any) -> int | None:
    try:
        msg = json.loads(line) if isinstance(line, str) and line else None
    except ValueError:
        return None
    return msg.get("id") if isinstance(msg, dict) and msg.get("type") == "request" else None


def check_seat_file(data: Any, shown: str) -> dict[str, Any]:
    """``data`` if it is a seat file, else :class:`SeatFileError` naming what is wrong."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SeatFileError(f"{shown}: not a game downloaded from a seat (its 'format' is not {FORMAT!r}); "
                            f"download one from your team's page: a game's 'download' link")
    for key, kind in (("game", str), ("players", int), ("seat", int), ("time", dict), ("lines", list)):
        if not isinstance(data.get(key), kind):
            raise SeatFileError(f"{shown}: the key {key!r} is missing or not a {kind.__name__}")
    return data


def seat_log(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The file's lines as referee log entries of its seat (what :mod:`.reproduce` replays)."""
    seat = data["seat"]
    out: list[dict[str, Any]] = []
    for item in data["lines"]:
        try:
            msg = json.loads(item.get("line", ""))
        except (ValueError, AttributeError):
            msg = None
        if item.get("dir") == "sent" and isinstance(msg, dict):
            out.append({"type": "send", "seat": seat, "msg": msg})
        elif item.get("dir") == "received":
            out.append({"type": "recv", "seat": seat, **({"msg": msg} if isinstance(msg, dict) else
                                                          {"raw": item.get("line", "")})})
    return out


def reproduce_seat(data: Mapping[str, Any], **kwargs: Any) -> Any:
    """Replay a seat file to a bot (:func:`harness.play.reproduce.reproduce_violation`'s keyword
    arguments ``time_controls``, ``limits``, ``bot``, ``timeout_ms``): up to its violation's
    request, or, without a violation, up to the seat's last request."""
    from harness.games import get_game
    from harness.play.reproduce import reproduce_violation

    log = seat_log(data)
    target = data.get("violation")
    if not isinstance(target, dict):
        requests = [e["msg"] for e in log if e["type"] == "send" and e["msg"].get("type") == "request"]
        if not requests:
            raise SeatFileError("this seat was sent no request: nothing to replay")
        target = {"id": None, "kind": None, "detail": "", "seat": data["seat"],
                  "request": protocol.encode(requests[-1]).decode().rstrip("\n")}
    target = {**target, "seat": data["seat"], "game_id": data.get("game_id", "?")}
    return reproduce_violation(get_game(data["game"]), data.get("options") or {}, players=data["players"],
                               violation=target, log=log, **kwargs)
