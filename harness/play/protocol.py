"""Protocol v1 messages: building them (referee -> bot) and checking what a bot sends back.

Encoding and decoding use orjson (about 10x faster than the stdlib ``json`` on these messages).
Every check on a bot's line raises :class:`BadMessage` whose ``kind`` is the violation kind
(``malformed``, ``protocol`` or ``illegal``) and whose message is a one-line detail. See
protocol.md for the contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

import orjson

from harness.play.violations import ViolationKind

__all__ = ["PROTOCOL_VERSION", "Hello", "TimeInfo", "Start", "Request", "Result", "BadMessage", "encode", "hello",
           "start", "result", "BYE",
           "decode", "check_depth", "parse_ready", "parse_action", "same_json"]

PROTOCOL_VERSION = 1
BYE = b'{"type":"bye"}\n'

_dumps = orjson.dumps
_loads = orjson.loads


class TimeInfo(TypedDict):
    """A hello's time controls, in milliseconds."""

    init_ms: int
    move_ms: int
    bank_ms: int


class Hello(TypedDict):
    """referee -> bot, once per process: the game it will play (protocol.md, hello)."""

    type: Literal["hello"]
    protocol: int
    game: str
    options: dict[str, Any]
    seat: int
    players: int
    time: TimeInfo


class Start(TypedDict):
    """referee -> bot, at the start of each game (protocol.md, start)."""

    type: Literal["start"]
    game_id: str
    seat: int
    players: int


class Request(TypedDict):
    """referee -> bot, one per decision: the seat's observation, the offered actions, the public
    events since its last request and its time (protocol.md, request)."""

    type: Literal["request"]
    id: int
    seat: int
    observation: dict[str, Any]
    actions: list[dict[str, Any]]
    events: list[dict[str, Any]]
    time_left_ms: int


class Result(TypedDict):
    """referee -> bot, at the end of each game (protocol.md, result)."""

    type: Literal["result"]
    game_id: str
    ranking: list[int]
    scores: list[Any]
    ended_by: str


class BadMessage(ValueError):
    """A line from a bot that is not an acceptable answer; ``kind`` names the violation."""

    def __init__(self, kind: ViolationKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def encode(message: Mapping[str, Any]) -> bytes:
    """One protocol line: compact JSON, UTF-8, ending in a newline."""
    return _dumps(message) + b"\n"


def hello(game: str, options: Mapping[str, Any], seat: int, players: int,
          init_ms: int, move_ms: int, bank_ms: int) -> Hello:
    return {"type": "hello", "protocol": PROTOCOL_VERSION, "game": game, "options": dict(options),
            "seat": seat, "players": players,
            "time": {"init_ms": init_ms, "move_ms": move_ms, "bank_ms": bank_ms}}


def start(game_id: str, seat: int, players: int) -> Start:
    return {"type": "start", "game_id": game_id, "seat": seat, "players": players}


def result(game_id: str, ranking: Sequence[int], scores: Sequence[Any], ended_by: str) -> Result:
    return {"type": "result", "game_id": game_id, "ranking": list(ranking), "scores": list(scores),
            "ended_by": ended_by}


def _shorten(data: bytes, n: int = 80) -> str:
    text = data[:n].decode("utf-8", "replace")
    return repr(text + ("..." if len(data) > n else ""))


def check_depth(line: bytes, max_depth: int) -> None:
    """Refuse nesting deeper than ``max_depth`` before handing the line to a decoder.

    Counting brackets is a cheap upper bound; only when it exceeds the limit is the line
    scanned properly (brackets inside strings do not count).
    """
    if line.count(b"[") + line.count(b"{") <= max_depth:
        return
    depth = 0
    in_string = False
    escaped = False
    for byte in line:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte == 0x5B or byte == 0x7B:
            depth += 1
            if depth > max_depth:
                raise BadMessage(ViolationKind.MALFORMED, f"JSON nested deeper than {max_depth} levels")
        elif byte == 0x5D or byte == 0x7D:
            depth -= 1


def decode(line: bytes, max_depth: int) -> Any:
    """Decode one line: depth check, then UTF-8 and JSON. ``BadMessage(ViolationKind.MALFORMED)`` otherwise."""
    check_depth(line, max_depth)
    try:
        return _loads(line)
    except orjson.JSONDecodeError:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadMessage(ViolationKind.MALFORMED, f"not UTF-8 (byte {exc.start}): {_shorten(line)}") from None
        raise BadMessage(ViolationKind.MALFORMED, f"not JSON: {_shorten(line)}") from None


def parse_ready(line: bytes, max_depth: int) -> str:
    """The bot's name from its ready line."""
    msg = decode(line, max_depth)
    if not isinstance(msg, dict) or msg.get("type") != "ready":
        raise BadMessage(ViolationKind.PROTOCOL, f"expected {{\"type\":\"ready\"}} in answer to hello, got {_shorten(line)}")
    name = msg.get("name", "")
    return name if isinstance(name, str) else str(name)


def same_json(a: Any, b: Any) -> bool:
    """Equality of JSON values that does not confuse true with 1 or 1.0 with 1."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return bool(a == b)


def parse_action(line: bytes, request_id: int, legal: Sequence[Any], max_depth: int) -> int:
    """The index in ``legal`` of the action the bot chose in ``line``.

    The answer is ``{"type":"action","id":ID,"action":{...}}`` or ``{"type":"action","id":ID,
    "index":N}``. Wrong id: ``protocol``; not an offered action or index out of range:
    ``illegal``; anything else wrong: ``malformed``.
    """
    msg = decode(line, max_depth)
    if type(msg) is not dict:
        raise BadMessage(ViolationKind.MALFORMED, f"not a JSON object: {_shorten(line)}")
    if msg.get("type") != "action":
        raise BadMessage(ViolationKind.MALFORMED, f"expected \"type\":\"action\", got {_shorten(line)}")
    rid = msg.get("id")
    if rid != request_id or type(rid) is not int:
        raise BadMessage(ViolationKind.PROTOCOL, f"answered request id {rid!r}, expected {request_id}")
    if "index" in msg:
        if "action" in msg:
            raise BadMessage(ViolationKind.MALFORMED, "give either \"action\" or \"index\", not both")
        index = msg["index"]
        if type(index) is not int:
            raise BadMessage(ViolationKind.MALFORMED, f"\"index\" must be an integer, got {index!r}"[:200])
        if not 0 <= index < len(legal):
            raise BadMessage(ViolationKind.ILLEGAL, f"index {index} is not among the {len(legal)} offered actions")
        return index
    if "action" not in msg:
        raise BadMessage(ViolationKind.MALFORMED, "an action message needs \"action\" or \"index\"")
    action = msg["action"]
    if type(action) is not dict:
        raise BadMessage(ViolationKind.MALFORMED, f"\"action\" must be an object, got {_shorten(orjson.dumps(action))}")
    for i, candidate in enumerate(legal):
        if candidate == action and same_json(candidate, action):
            return i
    raise BadMessage(ViolationKind.ILLEGAL, f"action {_shorten(orjson.dumps(action), 120)} is not among the offered actions")
