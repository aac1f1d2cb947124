"""A bot's violation: its kind (the one list of them) and the record the referee keeps of it.

The referee (:mod:`harness.play.referee`) makes these records; the league store keeps them (its
``violations`` table: the kind and detail in columns, the whole record as JSON), and the reports,
the contest site and ``harness violations`` read them back. protocol.md explains each kind to bot
authors.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal, NotRequired, TypedDict

__all__ = ["ViolationKind", "VIOLATION_KINDS", "KILLING_KINDS", "DecisionCost", "Violation"]


class ViolationKind(StrEnum):
    """What a bot did wrong (protocol.md, Violations)."""

    #: no answer (or no ready) within its deadline
    TIMEOUT = "timeout"
    #: an answer choosing an action that was not offered
    ILLEGAL = "illegal"
    #: a line that is not a JSON action message (not JSON, not UTF-8, too deep, wrong fields)
    MALFORMED = "malformed"
    #: a line longer than ``max_line_bytes``
    OVERSIZE = "oversize"
    #: the process died, or could not be started
    CRASH = "crash"
    #: out of step: a wrong request id, output nobody asked for, no ready in answer to hello
    PROTOCOL = "protocol"


#: every kind's word, in the order above (``harness violations --kind``)
VIOLATION_KINDS: tuple[str, ...] = tuple(kind.value for kind in ViolationKind)
#: violations after which the process cannot be trusted to be in step, so it is killed at once
KILLING_KINDS = frozenset({ViolationKind.TIMEOUT, ViolationKind.OVERSIZE, ViolationKind.CRASH})


class DecisionCost(TypedDict):
    """What a decision cost (:meth:`harness.play.cpuclock.Clock.to_json`), kept with a timeout."""

    cpu_ms: float
    wall_ms: float
    kept_ms: float
    charged_ms: float
    #: how its time ran out: "cpu", "wall", "hard", or "" (answered in time)
    ran_out: str
    load: float
    cores: int
    host_overloaded: bool


class Violation(TypedDict):
    """One violation as the referee records it (and the store keeps it, as JSON).

    ``request`` is the line the bot had been sent (without its newline; empty for output sent
    unasked), ``received`` the first bytes of what it sent, ``snapshot`` the game's state when it
    happened (``Game.state_from_json`` restores it), ``clock`` what the decision cost (timeouts of
    a request only). The store adds ``id`` when it reads one back.
    """

    type: Literal["violation"]
    game_id: str
    seed: int
    decision: int
    seat: int
    bot: str
    kind: ViolationKind
    detail: str
    request: str
    received: str
    stderr_tail: str
    snapshot: dict[str, Any] | None
    clock: NotRequired[DecisionCost]
    id: NotRequired[int]
    #: in the game's log only: when, in seconds since the game started
    t: NotRequired[float]
