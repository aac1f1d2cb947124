"""A small Python SDK for tablebots bots: one policy, played over pipes or in process.

A *policy* is a callable taking a :class:`Decision` (the seat's observation, the offered
actions, every public event of the game so far, the time left) and returning one of the
offered actions or its index. ``run(policy)`` speaks protocol.md on stdin/stdout (hello,
ready, start, request, result, bye; one flushed line per answer; tracebacks to stderr);
``play_in_process`` plays the same policies against each other without pipes, for fast
experiments (the referee's one-legal-action rule, ruling C2, is applied the same way).

Design choice: the SDK imports only the stdlib at start-up (``harness.games`` is imported
lazily, by the in-process runner only), so a bot on the SDK starts as fast as the standalone
stdlib bots; a policy that crashes or answers with something not offered costs only that
decision (the first offered action is sent and the error goes to stderr), never the process.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

Action = dict[str, Any]


@dataclass
class Decision:
    """Everything a policy may know when it must decide."""

    game: str
    options: dict[str, Any]
    seat: int
    players: int
    observation: dict[str, Any]
    actions: list[Action]
    #: every public event of this game so far, in order (not only those since the last request)
    events: list[dict[str, Any]]
    time_left_ms: int
    #: monotonic time (``time.monotonic()``) at which the request was read
    received: float = field(default_factory=time.monotonic)

    def deadline(self, fraction: float = 0.5, reserve_ms: int = 50) -> float:
        """A monotonic time by which to answer: ``fraction`` of the time left, less ``reserve_ms``."""
        budget = max(1.0, self.time_left_ms * fraction - reserve_ms)
        return self.received + budget / 1000.0


Policy = Callable[[Decision], "Action | int"]


def _index(decision: Decision, answer: Any) -> int:
    """The index of a policy's answer among the offered actions; ValueError if not offered."""
    if isinstance(answer, int) and not isinstance(answer, bool):
        if 0 <= answer < len(decision.actions):
            return answer
        raise ValueError(f"index {answer} out of range (0 to {len(decision.actions) - 1})")
    return decision.actions.index(answer)


def _choose(policy: Policy, decision: Decision, err: IO[str]) -> int:
    try:
        return _index(decision, policy(decision))
    except Exception:  # a policy bug costs one decision, never the process
        err.write(f"policy failed on request (seat {decision.seat}); sending the first action\n")
        traceback.print_exc(file=err)
        err.flush()
        return 0


def run(policy: Policy, name: str = "sdk-bot", stdin: IO[str] | None = None,
        stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Play protocol v1 on stdin/stdout with ``policy`` until ``bye`` or end of input; returns 0."""
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
            msg = json.loads(line)
        except ValueError as exc:
            err.write(f"unreadable line from the referee ignored: {exc}\n")
            continue
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if kind == "hello":
            game, options = msg.get("game", ""), dict(msg.get("options") or {})
            seat, players = msg.get("seat", 0), msg.get("players", 0)
            out.write(json.dumps({"type": "ready", "name": name}) + "\n")
            out.flush()
        elif kind == "start":
            seat, players = msg.get("seat", seat), msg.get("players", players)
            events = []
        elif kind == "request":
            events.extend(msg.get("events") or [])
            decision = Decision(game, options, msg.get("seat", seat), players, msg.get("observation") or {},
                                msg["actions"], list(events), int(msg.get("time_left_ms", 1000)), received)
            index = _choose(policy, decision, err)
            out.write(json.dumps({"type": "action", "id": msg["id"], "index": index}) + "\n")
            out.flush()
        elif kind == "bye":
            break
        # result needs no answer
    return 0


def play_in_process(game_name: str, policies: Sequence[Policy], seed: int,
                    options: dict[str, Any] | None = None, time_left_ms: int = 1000,
                    err: IO[str] | None = None) -> dict[str, Any]:
    """Play one game between ``policies`` (seat i is ``policies[i]``) without pipes; its result.

    A decision with one legal action is applied without asking (ruling C2); each policy sees
    the same :class:`Decision` it would get over the protocol, with ``time_left_ms`` fixed.
    """
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
        state.apply(actions[_choose(policies[seat], decision, err or sys.stderr)])
    return state.result()
