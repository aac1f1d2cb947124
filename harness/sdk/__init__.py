"""A small Python SDK for tablebots bots: one policy, played over pipes or in process.

A *policy* is a callable taking a :class:`Decision` (the seat's observation, the offered
actions, every public event of the game so far, the time left) and returning one of the
offered actions or its index. ``run(policy)`` speaks protocol.md on stdin/stdout (hello,
ready, start, request, result, bye; one flushed line per answer; tracebacks to stderr);
``play_in_process`` plays the same policies against each other without pipes, for fast
experiments (the referee's one-legal-action rule, ruling C2, is applied the same way).

Design choice: the SDK imports only the stdlib at start-up (``harness.games`` is imported
lazily, by the in-process runner only), so a bot on the SDK starts as fast as the standalone
stdlib bots. A bot's bug must reach its author, so by default nothing is hidden: a policy
that raises ends the process with its traceback on stderr (the referee records a ``crash`` with
that stderr tail), and an answer that is not offered is sent as it is (the referee records an
``illegal`` action, saying why in the game's words). ``on_error="first"`` is the author's
explicit choice of a fallback: the first offered action is sent, the traceback goes to stderr,
and the answer carries a ``"sdk_fallback"`` field (ignored by the referee) that ``harness
check-bot`` counts and reports.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence

# A bot's start is paid for every process a league starts (one process per deal), so the SDK
# imports little: not typing (annotations only), dataclasses, traceback (on a bug only) nor the
# json package's Python half (re, enum), ~30 ms of CPU a start together (docs/performance.md).
TYPE_CHECKING = False
if TYPE_CHECKING:  # (run() never imports the engines; play_in_process does, when called)
    from typing import IO, Any

    from harness.games.base import GameResult

    Action = dict[str, Any]
else:
    Action = dict

try:  # the C half of the json package
    from _json import encode_basestring_ascii as _quote
    from _json import make_encoder as _make_encoder
    from _json import make_scanner as _make_scanner
except ImportError:  # (an interpreter without it: the json package)
    _make_scanner = _make_encoder = None  # type: ignore[misc, assignment]


class _Decoding:
    """What ``_json.make_scanner`` reads off a decoder: plain JSON, as ``json.loads`` does."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # ("NaN", "Infinity", "-Infinity")


def _unencodable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_scan = _make_scanner(_Decoding()) if _make_scanner is not None else None  # type: ignore[arg-type]
_encode = (_make_encoder(None, _unencodable, _quote, None, ": ", ", ", False, False, True)
           if _make_encoder is not None else None)


def _loads(line: str) -> Any:
    """``json.loads`` of one line (ValueError if it is no JSON), without the json package where
    the interpreter has ``_json``."""
    if _scan is None:
        import json
        return json.loads(line)
    text = line.strip()
    try:
        value, end = _scan(text, 0)
    except StopIteration as exc:
        raise ValueError(f"Expecting value: char {exc.value}") from None
    if end != len(text):
        raise ValueError(f"Extra data: char {end}")
    return value


def _dumps(value: Any) -> str:
    """``json.dumps(value)``, without the json package where the interpreter has ``_json``."""
    if _encode is None:
        import json
        return json.dumps(value)
    return "".join(_encode(value, 0))

class Decision:
    """Everything a policy may know when it must decide (a plain class with a dataclass's
    constructor, fields, ``repr`` and ``==``: the dataclasses module costs a start ~20 ms).

    ``events``: every public event of this game so far, in order (not only those since the last
    request); ``received``: the monotonic time (``time.monotonic()``) at which the request was
    read, now if not given.
    """

    __match_args__ = ("game", "options", "seat", "players", "observation", "actions", "events", "time_left_ms",
                      "received")
    __hash__ = None  # type: ignore[assignment]  # (mutable, compared by value: as a dataclass)

    def __init__(self, game: str, options: dict[str, Any], seat: int, players: int, observation: dict[str, Any],
                 actions: list[Action], events: list[dict[str, Any]], time_left_ms: int,
                 received: float | None = None) -> None:
        self.game = game
        self.options = options
        self.seat = seat
        self.players = players
        self.observation = observation
        self.actions = actions
        self.events = events
        self.time_left_ms = time_left_ms
        self.received = time.monotonic() if received is None else received

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"Decision({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__match_args__)

    def deadline(self, fraction: float = 0.5, reserve_ms: int = 50) -> float:
        """A monotonic time by which to answer: ``fraction`` of the time left, less ``reserve_ms``."""
        budget = max(1.0, self.time_left_ms * fraction - reserve_ms)
        return self.received + budget / 1000.0


Policy = Callable[[Decision], "Action | int"]


#: What the SDK does when the policy raises or answers with something not offered.
ON_ERROR = ("raise", "first")


class NotOffered(ValueError):
    """A policy's answer that is not among the offered actions."""


def _index(decision: Decision, answer: Any) -> int:
    """The index of a policy's answer among the offered actions; NotOffered if not offered."""
    if isinstance(answer, int) and not isinstance(answer, bool):
        if 0 <= answer < len(decision.actions):
            return answer
        raise NotOffered(f"index {answer} out of range (0 to {len(decision.actions) - 1})")
    try:
        return decision.actions.index(answer)
    except ValueError:
        raise NotOffered(f"{answer!r} is not among the {len(decision.actions)} offered actions") from None


def _fallback(decision: Decision, err: IO[str]) -> dict[str, Any]:
    """on_error="first": the first offered action, the traceback to stderr, and the notice."""
    import traceback  # (on a bug only)

    err.write(f"policy failed on request (seat {decision.seat}); sending the first action (on_error='first')\n")
    traceback.print_exc(file=err)
    err.flush()
    exc = sys.exc_info()[1]
    return {"index": 0, "sdk_fallback": f"{type(exc).__name__}: {exc}"[:300]}


def _answer(policy: Policy, decision: Decision, err: IO[str], on_error: str) -> dict[str, Any]:
    """The fields of the action message answering ``decision``.

    ``on_error="raise"``: an exception propagates (the process ends with its traceback: a
    ``crash``), an answer not offered is sent as it is (an ``illegal`` action).
    """
    if on_error == "raise":
        answer = policy(decision)
        try:
            return {"index": _index(decision, answer)}
        except NotOffered:
            if isinstance(answer, int) and not isinstance(answer, bool):
                return {"index": answer}
            return {"action": answer}
    try:
        return {"index": _index(decision, policy(decision))}
    except Exception:  # the author chose a fallback: this decision only, reported by the notice
        return _fallback(decision, err)


def _check_on_error(on_error: str) -> None:
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}, not {on_error!r}")


def run(policy: Policy, name: str = "sdk-bot", stdin: IO[str] | None = None,
        stdout: IO[str] | None = None, stderr: IO[str] | None = None, on_error: str = "raise") -> int:
    """Play protocol v1 on stdin/stdout with ``policy`` until ``bye`` or end of input; returns 0.

    ``on_error``: ``"raise"`` (default) lets a policy's exception end the process and sends an
    answer not offered as it is, so the referee records the violation it is; ``"first"`` sends
    the first offered action instead and marks the answer with ``"sdk_fallback"`` (reported by
    ``harness check-bot``).
    """
    _check_on_error(on_error)
    inp = stdin or sys.stdin
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    game, options, seat, players = "", {}, 0, 0
    events: list[dict[str, Any]] = []
    for line in inp:
        received = time.monotonic()
        if not line.strip():
            continue
        try:
            msg = _loads(line)
        except ValueError as exc:
            err.write(f"unreadable line from the referee ignored: {exc}\n")
            continue
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if kind == "hello":
            game, options = msg.get("game", ""), dict(msg.get("options") or {})
            seat, players = msg.get("seat", 0), msg.get("players", 0)
            out.write(_dumps({"type": "ready", "name": name}) + "\n")
            out.flush()
        elif kind == "start":
            seat, players = msg.get("seat", seat), msg.get("players", players)
            events = []
        elif kind == "request":
            events.extend(msg.get("events") or [])
            decision = Decision(game, options, msg.get("seat", seat), players, msg.get("observation") or {},
                                msg["actions"], list(events), int(msg.get("time_left_ms", 1000)), received)
            answer = _answer(policy, decision, err, on_error)
            out.write(_dumps({"type": "action", "id": msg["id"], **answer}) + "\n")
            out.flush()
        elif kind == "bye":
            break
        # result needs no answer
    return 0


def play_in_process(game_name: str, policies: Sequence[Policy], seed: int,
                    options: dict[str, Any] | None = None, time_left_ms: int = 1000,
                    err: IO[str] | None = None, on_error: str = "raise") -> GameResult:
    """Play one game between ``policies`` (seat i is ``policies[i]``) without pipes; its result.

    A decision with one legal action is applied without asking (ruling C2); each policy sees
    the same :class:`Decision` it would get over the protocol, with ``time_left_ms`` fixed.
    ``on_error="raise"`` (default): a policy's exception propagates, and an answer not offered
    raises :class:`NotOffered`; ``"first"`` plays the first offered action instead.
    """
    _check_on_error(on_error)
    from harness.games import get_game  # lazy: bots on run() never pay for the engines

    game = get_game(game_name)
    opts = game.validate_options(options)
    players = len(policies)
    state = game.new_state(players, seed, opts)
    while not state.is_terminal():
        actions = state.legal_actions()
        if len(actions) == 1:
            state.apply(actions[0])
            continue
        seat = state.current_player
        assert seat is not None
        decision = Decision(game_name, dict(opts), seat, players, state.observation(seat), actions,
                            [dict(e) for e in state.events], time_left_ms)
        if on_error == "raise":
            index = _index(decision, policies[seat](decision))
        else:
            index = int(_answer(policies[seat], decision, err or sys.stderr, on_error)["index"])
        state.apply(actions[index])
    return state.result()
