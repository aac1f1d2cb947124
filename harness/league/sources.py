"""Where the games a run plays come from: a :class:`GameSource`, asked by the runner's writer loop.

The loop asks the source for games whenever its executor has room (``next_games(n)``: up to
``n`` games to play now; an empty list means none *now*) and tells it every game it recorded
(``recorded``), so a source may decide its next games from the results so far (an adaptive
schedule). A run ends when nothing is in flight and the source gives no more games. Games that
failed inside the harness or were not played (Ctrl-C, a stop) are not reported: they stay
pending in the store.

:class:`StoreSource` is the round robin: the pending games of the store, in canonical order.
"""

from __future__ import annotations

from typing import Protocol

from harness.league.pending import PendingGame, PendingView
from harness.league.store import GameOutcome, LeagueStore

__all__ = ["GameSource", "StoreSource"]


class GameSource(Protocol):
    """The games of a run; see the module docstring."""

    def total(self) -> int | None:
        """The games this run is expected to play (the progress bar's total), or None if unknown."""

    def remaining(self) -> int | None:
        """The games not handed out yet, when known (executors shorten their queues near the end)."""

    def next_games(self, n: int) -> list[PendingGame]:
        """Up to ``n`` games to play now."""

    def recorded(self, game: PendingGame, outcome: GameOutcome) -> None:
        """``game`` was recorded with ``outcome``."""


class StoreSource:
    """The store's pending games in schedule order (at most ``limit``), read lazily in chunks."""

    def __init__(self, store: LeagueStore, limit: int | None = None) -> None:
        self._pending: PendingView = store.pending_view(limit=limit)
        self._next = 0

    def total(self) -> int:
        return len(self._pending)

    def remaining(self) -> int:
        return len(self._pending) - self._next

    def next_games(self, n: int) -> list[PendingGame]:
        end = min(len(self._pending), self._next + n)
        games = [self._pending[i] for i in range(self._next, end)]
        self._next = end
        return games

    def recorded(self, game: PendingGame, outcome: GameOutcome) -> None:
        pass  # the schedule is fixed
