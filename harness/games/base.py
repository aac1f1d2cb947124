"""The game API every rules engine implements.

A :class:`Game` holds the rules and validates options; a :class:`State` is one
play-through. Engines are pure: no I/O, no module-level mutable state, and fully
deterministic from ``(options, seed, actions)`` (ruling C1).

Actions are small JSON-able dicts with a ``"type"`` key. ``legal_actions()``
returns them in a canonical order without duplicates; ``apply`` accepts exactly
those values. Each game also gives every action a short text form
(``format_action``) that ``parse_action`` reads back to the same dict.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, TypedDict

Action = dict[str, Any]


class EndedBy(StrEnum):
    """How a game ended (``ended_by`` of :meth:`State.result` and of the ``game_end`` event)."""

    #: by the game's own rules (a target score reached, the cards or tiles gone, ...)
    RULES = "rules"
    #: at the turn cap (the game's ``max_turns`` option), ranked by the game's tie-breaks
    TURN_CAP = "turn_cap"


class GameResult(TypedDict):
    """How a game ended (:meth:`State.result`): the referee sends it to the bots (protocol.md,
    result) and the store records it.

    ``ranking[seat]`` is 0 for the best, tied seats share a rank; ``scores[seat]`` is the game's
    own score (a number for the built-in games); ``ended_by`` is an :class:`EndedBy` (``"rules"`` or ``"turn_cap"``)
    (None only from a game that ranks a state not yet over, as Crisps does: the scores so far).
    """

    ranking: list[int]
    scores: list[Any]
    ended_by: str | None

#: A game's sampler: ``(validated options, observation, events, rng)`` -> a full state consistent
#: with what the observing seat knows (see :meth:`Game.resample_from_infostate`).
Sampler = Callable[[dict[str, Any], Mapping[str, Any], Sequence[Mapping[str, Any]], random.Random], "State"]


class IllegalAction(ValueError):
    """An action that is not legal in the current state; the message says why."""


class InvalidAction(IllegalAction):
    """An action that is not even well-formed for this game (wrong shape or type).

    It is an :class:`IllegalAction` too, so catching that catches every rejection.
    """


class InvalidOptions(ValueError):
    """Unknown option, or an option value outside the allowed values."""


class InvalidSnapshot(ValueError):
    """A ``to_json`` snapshot that cannot be restored."""


@dataclass(frozen=True)
class Option:
    """One game option: its default, its allowed values and a one-line description.

    Either ``choices`` (an explicit tuple of allowed values) or ``check`` (a
    predicate plus ``allowed``, a human description of the allowed values) is given.
    """

    name: str
    default: Any
    doc: str
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], bool] | None = None
    allowed: str = ""

    def describe_allowed(self) -> str:
        if self.choices is not None:
            return ", ".join(repr(c) if isinstance(c, str) else str(c).lower() if isinstance(c, bool) else str(c)
                             for c in self.choices)
        return self.allowed

    def validate(self, value: Any) -> Any:
        """Return ``value`` if allowed, else raise :class:`InvalidOptions` naming the option."""
        if self.choices is not None:
            # bool is an int subclass: do not let True pass as 1 or 1 as True.
            ok = any(value == c and type(value) is type(c) for c in self.choices)
        else:
            ok = self.check is not None and self.check(value)
        if not ok:
            raise InvalidOptions(
                f"option {self.name!r}: {value!r} is not allowed (allowed: {self.describe_allowed()})")
        return value


def int_option(name: str, default: int, lo: int, hi: int, doc: str) -> Option:
    """An integer option in ``[lo, hi]``."""
    return Option(name, default, doc,
                  check=lambda v: type(v) is int and lo <= v <= hi,
                  allowed=f"an integer from {lo} to {hi}")


def bool_option(name: str, default: bool, doc: str) -> Option:
    """A true/false option."""
    return Option(name, default, doc, choices=(True, False))


def ranking_from_keys(keys: Sequence[Any]) -> list[int]:
    """Rank seats by sort key, higher key is better; equal keys share a rank.

    Ranks are competition ranks starting at 0: keys ``[5, 9, 5]`` give ``[1, 0, 1]``.
    """
    return [sum(1 for other in keys if other > k) for k in keys]


class State(ABC):
    """One play-through of a game. Subclasses keep ``current_player`` and ``events`` current."""

    #: Seat to decide next, ``None`` once the game is over.
    current_player: int | None
    #: Public event log: JSON-able dicts, each with a ``"type"``, in order.
    events: list[dict[str, Any]]

    @abstractmethod
    def legal_actions(self) -> list[Action]:
        """Legal actions of ``current_player`` in canonical order; empty when terminal."""

    @abstractmethod
    def apply(self, action: Action) -> None:
        """Play ``action`` for ``current_player``; raise :class:`IllegalAction` if not legal."""

    @abstractmethod
    def observation(self, seat: int) -> dict[str, Any]:
        """Exactly what ``seat`` may know now, as a JSON-able dict (never a state dump)."""

    @abstractmethod
    def is_terminal(self) -> bool:
        """True once the game has ended, by the rules or by the turn cap."""

    @abstractmethod
    def result(self) -> GameResult:
        """``{"ranking": [...], "scores": [...], "ended_by": "rules" | "turn_cap"}`` (:class:`GameResult`).

        ``ranking[seat]`` is 0 for the best; tied seats share a rank. Only valid once terminal.
        """

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """Full snapshot, hidden information and RNG included; ``Game.state_from_json`` restores it exactly."""

    @abstractmethod
    def render(self) -> str:
        """A readable multi-line text picture of the table, for replays and logs."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.render()!s}>"


@dataclass(frozen=True)
class Evaluator:
    """What a tree search may know of a game beyond its rules: where playouts stop and how a
    position is judged there. Every field is optional; a game without an evaluator is searched
    with uniformly random playouts to the end of the game, scored by rank.

    The callables take the game's own state class (they may read its internals, being part of
    the game's package).
    """

    #: Playouts stop when this key of the state changes (the end of the hand, deal or round in
    #: progress) and score each seat by its points gained (``state.scores``) since the start.
    horizon: Callable[[Any], int] | None = None
    #: The score difference worth one logistic unit at the horizon.
    scale: float = 1.0
    #: Playout policy: ``(state, legal actions, rng)`` -> index of the action to play.
    playout: Callable[[Any, list[Action], random.Random], int] | None = None
    #: The action a heuristic prefers, ``(state, legal actions)`` -> index, for a progressive bias.
    prior: Callable[[Any, list[Action]], int] | None = None
    #: Estimated gain of each seat, for playouts cut off before the horizon.
    estimate: Callable[[Any], list[float]] | None = None


class Game(ABC):
    """Rules and options of one game. Stateless: every method is a pure function."""

    name: ClassVar[str]
    min_players: ClassVar[int]
    max_players: ClassVar[int]
    option_list: ClassVar[tuple[Option, ...]]

    def default_options(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.option_list}

    def validate_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """Fill defaults and check every option; raise :class:`InvalidOptions` naming the bad one."""
        options = dict(options or {})
        known = {o.name: o for o in self.option_list}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise InvalidOptions(
                f"unknown option {unknown[0]!r} for {self.name} (known options: {', '.join(sorted(known)) or 'none'})")
        out = {}
        for name, opt in known.items():
            out[name] = opt.validate(options[name]) if name in options else opt.default
        return out

    def validate_players(self, players: int) -> int:
        if type(players) is not int or not self.min_players <= players <= self.max_players:
            allowed = (str(self.min_players) if self.min_players == self.max_players
                       else f"{self.min_players} to {self.max_players}")
            raise InvalidOptions(f"{self.name} is played by {allowed} players, not {players!r}")
        return players

    @abstractmethod
    def new_state(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> State:
        """A new game for ``players`` seats, every random event drawn from ``seed``."""

    @abstractmethod
    def state_from_json(self, data: Mapping[str, Any]) -> State:
        """Restore a :meth:`State.to_json` snapshot; :class:`InvalidSnapshot` if it is not one."""

    @abstractmethod
    def format_action(self, action: Action) -> str:
        """Short text form of an action, e.g. for logs; ``parse_action`` reads it back."""

    @abstractmethod
    def parse_action(self, text: str) -> Action:
        """Inverse of :meth:`format_action`; :class:`InvalidAction` if unparseable."""

    def sampler(self) -> Sampler | None:
        """The game's sampler (see :meth:`resample_from_infostate`), or ``None`` if it has none.

        Games import it on first use (from their package's ``sampling`` module), so playing a
        game never loads it.
        """
        return None

    def evaluator(self) -> Evaluator | None:
        """What a search needs to know of this game (see :class:`Evaluator`), or ``None``."""
        return None

    def resample_from_infostate(self, observation: Mapping[str, Any], events: Sequence[Mapping[str, Any]],
                                rng: random.Random, options: Mapping[str, Any] | None = None) -> State:
        """A full state drawn at random among those consistent with what one seat knows.

        ``observation`` is the seat's observation, ``events`` every public event of the game so
        far, ``options`` the game's options. The state's observation for that seat equals
        ``observation``; hidden cards and tiles are dealt at random over the places they can be
        (OpenSpiel's ``resample_from_infostate``). Implemented by the game's :meth:`sampler`.
        """
        resample = self.sampler()
        if resample is None:
            raise NotImplementedError(f"{self.name} has no sampler")
        return resample(self.validate_options(options), observation, events, rng)

    def __repr__(self) -> str:
        return f"<Game {self.name}>"
