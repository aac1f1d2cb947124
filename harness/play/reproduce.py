"""Reproduce a violation: replay the seat's game to the bot, up to the decision that went wrong.

A bot's bug usually depends on what it saw before (the cards it tracked, the tiles it counted),
so sending only the violating request proves little: a bot that is still wrong may answer it
well in isolation. The replay therefore sends the bot exactly what its seat received in the
recorded game, in order: the same hello (rebuilt if the process had been started by an earlier
game), start, and every earlier request of that seat with its events, each answered by the bot
under test (an answer that differs from the recorded one is reported, not fatal), then the
violating request. The verdict compares that answer with the rules: a legal action on time, or
still a violation. :attr:`Reproduction.still_violation` makes ``harness violations --replay``
exit non-zero, so the command works as a regression test in a bot's own CI.

Each request is sent, timed and its answer judged by the referee's own
:func:`harness.play.referee.request_action`, so a replay and a game cannot disagree on what a
legal answer on time is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.games import Game
from harness.play import protocol
from harness.play.botproc import OK, BotProcess, StderrLog
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.referee import request_action

__all__ = ["Reproduction", "reproduce_violation"]


@dataclass
class Reproduction:
    """What a replay found: its report, and whether the bot still commits a violation."""

    lines: list[str] = field(default_factory=list)
    still_violation: bool = True

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _seat_messages(log: list[dict[str, Any]], seat: int, last_id: int | None) -> list[dict[str, Any]]:
    """The messages the referee sent to ``seat`` in the game, up to the request ``last_id``."""
    out = []
    for entry in log:
        if entry.get("type") != "send" or entry.get("seat") != seat or not isinstance(entry.get("msg"), dict):
            continue
        out.append(entry["msg"])
        if entry["msg"].get("type") == "request" and entry["msg"].get("id") == last_id:
            break
    return out


def _recorded_answers(log: list[dict[str, Any]], seat: int) -> dict[int, Any]:
    """Request id -> the action the bot answered in the recorded game (by value)."""
    answers: dict[int, Any] = {}
    pending: dict[str, Any] | None = None
    for entry in log:
        if entry.get("seat") != seat:
            continue
        msg = entry.get("msg")
        if entry.get("type") == "send" and isinstance(msg, dict) and msg.get("type") == "request":
            pending = msg
        elif entry.get("type") == "recv" and isinstance(msg, dict) and pending is not None:
            legal = pending.get("actions", [])
            if isinstance(msg.get("index"), int) and 0 <= msg["index"] < len(legal):
                answers[pending["id"]] = legal[msg["index"]]
            elif "action" in msg:
                answers[pending["id"]] = msg["action"]
            pending = None
    return answers


def _describe(game: Any, action: Any) -> str:
    try:
        return str(game.format_action(action))
    except Exception:  # noqa: BLE001 - a text form is only for reading
        return json.dumps(action)


def reproduce_violation(game: Game, options: Mapping[str, Any], time_controls: TimeControls,
                        limits: ResourceLimits, bot: BotSpec, violation: Mapping[str, Any],
                        log: list[dict[str, Any]] | None, players: int, timeout_ms: int | None = None) -> Reproduction:
    """Replay ``violation`` (its stored record: id, game_id, seat, kind, detail, request) of the
    game whose referee ``log`` is given to ``bot`` (the one that committed it, or a fixed version),
    as the module docstring says. ``timeout_ms`` replaces ``move_ms`` as the wait per request."""
    rep = Reproduction()
    seat = int(violation.get("seat", 0))
    request_text = violation.get("request") or ""
    try:
        request = json.loads(request_text) if request_text else None
    except ValueError:
        request = None
    last_id = request.get("id") if isinstance(request, dict) and request.get("type") == "request" else None
    t = time_controls
    wait_ms = timeout_ms or t.move_ms
    messages = _seat_messages(log or [], seat, last_id)
    if not any(m.get("type") == "hello" for m in messages):
        # the process had been started in an earlier game: rebuild the hello it would get now
        messages.insert(0, dict(protocol.hello(game.name, dict(options), seat, players, t.init_ms, t.move_ms, t.bank_ms)))
    if isinstance(request, dict) and last_id is not None and not any(
            m.get("type") == "request" and m.get("id") == last_id for m in messages):
        messages.append(request)  # no stored log: the violating request alone, after hello and start
    recorded = _recorded_answers(log or [], seat)
    head = (f"replaying violation #{violation['id']} ({violation['kind']}: {violation['detail']})"
            if violation.get("kind") else "replaying the seat's game up to its last request (it had no violation)")
    rep.lines += [head,
                  f"bot: {' '.join(bot.command)}" + (f" (in {bot.cwd})" if bot.cwd else ""),
                  f"game {violation['game_id']}, seat {seat}: {sum(m.get('type') == 'request' for m in messages)} "
                  f"request(s) up to the violation" + ("" if log else " (no log stored: only the violating one)")]
    stderr = StderrLog(None, bot.name, limits.stderr_bytes)
    proc = BotProcess(bot, limits, stderr)
    try:
        try:
            proc.start()
        except OSError as exc:
            rep.lines.append(f"cannot start it: {exc.strerror or exc}")
            rep.lines.append("verdict: the bot does not start")
            return rep
        if _replay(rep, proc, messages, last_id, recorded, game, t, limits, wait_ms):
            proc.drain_stderr()
            tail = proc.stderr_tail()
            if tail.strip():
                rep.lines += ["stderr tail:", *("    " + line for line in tail.rstrip().split("\n")[-15:])]
    finally:
        proc.close_politely(protocol.BYE)
        proc.kill("replay done")
        stderr.close()
    return rep


def _handshake(proc: BotProcess, line: bytes, t: TimeControls, limits: ResourceLimits) -> str | None:
    """Send hello and read the ready within ``init_ms``; what went wrong, or ``None``."""
    deadline = proc.started_at + t.init_ms / 1000
    code = proc.write(line, deadline)
    code, ready = proc.read_line(deadline) if code == OK else (code, b"")
    if code != OK:
        return proc.detail
    try:
        protocol.parse_ready(ready, limits.max_json_depth)
    except protocol.BadMessage as exc:
        return f"{exc.kind}: {exc.detail}"
    return None


def _replay(rep: Reproduction, proc: BotProcess, messages: list[dict[str, Any]], last_id: int | None,
            recorded: dict[int, Any], game: Game, t: TimeControls, limits: ResourceLimits, wait_ms: int) -> bool:
    """Send ``messages`` in order, judging each answer, until the verdict; False if it came
    before the violating request (the bot's stderr is then not worth showing)."""
    diverged = 0
    for msg in messages:
        line = protocol.encode(msg)
        kind = msg.get("type")
        if kind == "hello":
            problem = _handshake(proc, line, t, limits)
            if problem is not None:
                rep.lines += [f"no ready after hello: {problem}", "verdict: still a violation (at start-up)"]
                return False
            rep.lines.append(f"ready in {(time.monotonic() - proc.started_at) * 1000:.0f} ms")
            if last_id is None:  # a start-up violation: starting is the test
                rep.lines.append("verdict: the bot now starts correctly")
                rep.still_violation = False
                return False
            continue
        if kind != "request":
            proc.write(line, time.monotonic() + 1.0)
            continue
        legal = msg.get("actions", [])
        code, answer, took, index = request_action(proc, line, msg["id"], legal, wait_ms, limits.max_json_depth)
        problem, chosen = None, None
        if code != OK:
            problem = f"no answer after {took:.0f} ms: {proc.detail}"
        elif isinstance(index, protocol.BadMessage):
            problem = f"{index.kind}: {index.detail}"
        else:
            chosen = legal[index]
            if took > t.move_ms + t.bank_ms:
                problem = f"answered in {took:.0f} ms, over move_ms={t.move_ms}"
        if msg.get("id") != last_id:
            if problem is not None:
                rep.lines += [f"request {msg['id']} (before the violation): {problem}",
                              "verdict: still a violation (earlier in the game than recorded)"]
                return False
            if msg["id"] in recorded and not protocol.same_json(recorded[msg["id"]], chosen):
                diverged += 1
                if diverged <= 5:
                    rep.lines.append(f"request {msg['id']}: answered {_describe(game, chosen)}, recorded "
                                     f"{_describe(game, recorded[msg['id']])} (the game goes on as recorded)")
            continue
        if diverged > 5:
            rep.lines.append(f"... {diverged - 5} more answers differ from the recorded ones")
        rep.lines.append(f"sent the violating request (id {msg['id']}, {len(legal)} legal actions)")
        if problem is not None:
            shown = answer[:300].decode("utf-8", "replace")
            rep.lines += [f"answer: {shown!r}" if answer else "answer: none", f"verdict: still a violation: {problem}"]
        else:
            rep.lines.append(f"verdict: a legal answer in {took:.1f} ms: {_describe(game, chosen)}")
            rep.still_violation = False
    return True
