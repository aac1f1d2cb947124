"""A refereed game's log: the kinds of its entries (``GameRecord.log``).

The referee appends one entry per message each way, public event, forced or fallback move,
stderr excerpt, violation and forfeit (only violations when messages are not recorded), each
with ``t``, its seconds since the game started. The store keeps the log compressed
(:mod:`harness.league.logcodec`); the replay viewer, seat files, ``reproduce`` and ``check-bot``
read it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

from harness.play.violations import Violation, ViolationKind

__all__ = ["LogEntry", "Sent", "Received", "StderrExcerpt", "PublicEvent", "AutoMove", "Forfeit"]


class Sent(TypedDict):
    """A message the referee sent a seat's bot."""

    type: Literal["send"]
    seat: int
    bot: str
    msg: Mapping[str, Any]
    t: NotRequired[float]


class Received(TypedDict):
    """A bot's answer: its protocol fields (``msg``), or its first bytes (``raw``) if rejected."""

    type: Literal["recv"]
    seat: int
    bot: str
    #: wall time from the request to the answer; ``cpu_ms``, the bot's CPU time; ``charged_ms``,
    #: what its clock was charged (where bots are frozen between turns)
    ms: float
    cpu_ms: NotRequired[float]
    charged_ms: NotRequired[float]
    #: fields outside the protocol that the answer had (dropped from ``msg``)
    dropped_fields: NotRequired[int]
    msg: NotRequired[dict[str, Any]]
    raw: NotRequired[str]
    t: NotRequired[float]


class StderrExcerpt(TypedDict):
    """What a bot wrote to stderr while it decided request ``id`` (its last KiB)."""

    type: Literal["stderr"]
    seat: int
    id: int
    text: str
    t: NotRequired[float]


class PublicEvent(TypedDict):
    """A public event of the game (the engine's)."""

    type: Literal["event"]
    event: dict[str, Any]
    t: NotRequired[float]


class AutoMove(TypedDict):
    """A move the referee played for a seat without asking its bot, and why."""

    type: Literal["auto"]
    seat: int
    action: dict[str, Any]
    why: str
    t: NotRequired[float]


class Forfeit(TypedDict):
    """A seat forfeited, after a violation of ``kind``."""

    type: Literal["forfeit"]
    seat: int
    bot: str
    kind: ViolationKind
    t: NotRequired[float]


#: One entry of a game's log (a violation is logged as its record, with ``t``).
LogEntry = Sent | Received | StderrExcerpt | PublicEvent | AutoMove | Forfeit | Violation
