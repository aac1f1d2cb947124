"""What a run plays next: the :class:`GameSource` protocol the runner asks, and the round robin's source.

The loop asks the source for games whenever its executor has room (``next_games(n)``: up to
``n`` games to play now; an empty list means none *now*) and tells it every game it recorded
(``recorded``), so a source may decide its next games from the results so far (an adaptive
schedule). A run ends when nothing is in flight and the source gives no more games. Games that
failed inside the harness or were not played (Ctrl-C, a stop) are not reported: they stay
pending in the store.

:class:`StoreSource` is the round robin: the pending games of the store, in canonical order,
handed out in blocks of deals. No bot process may see two games of one deal (see
:class:`~harness.play.pool.BotPool`), and schedule order plays the seat orders of a deal one
after another (24 at 4 seats), so a worker would need a fresh process of every bot for nearly
every game. Within a window of :data:`DEAL_WINDOW` deals the source hands out every deal's first
seat order, then every deal's second, and so on: a process plays one game of many deals before
it needs a successor. Only the dispatch order changes: the writer records and rates in schedule
order whatever order results come back in. Its cost and the bot starts it saves are measured
by bench/fairplay.py (figures: docs/security.md, docs/performance.md).

Five modules answer "what is played next", each one part of it:

- :mod:`.schedule_roundrobin`: the round robin's games, their seeds and ids (pure; planned into
  the store by :meth:`~harness.league.store.LeagueStore.plan`);
- :mod:`.store_pending`: the store's pending games, read lazily in schedule order;
- :mod:`.game_sources` (this module): the protocol the runner asks, and :class:`StoreSource`, the
  round robin's source over the pending games;
- :mod:`.schedule_matchmaker`: the adaptive schedule's choice of the next round (pure);
- :mod:`.schedule_adaptive`: the adaptive source: the matchmaker rebuilt from the store, each
  round it chooses written to the store before it is played.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Protocol

from harness.league.config import BotEntry
from harness.league.store import GameOutcome, LeagueStore
from harness.league.store_pending import PendingGame, PendingView

__all__ = ["DEAL_WINDOW", "GameSource", "StoreSource", "blocked_by_deal"]

_NO_BOTS: Mapping[int, BotEntry] = {}

#: deals handed out together, seat order by seat order (1 keeps schedule order)
DEAL_WINDOW = 16


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

    def new_bots(self) -> Mapping[int, BotEntry]:
        """Versions (by id) that joined and that the executor does not know yet: while there are
        any, the source hands out no game; the runner restarts its executor with them once nothing
        is in flight, then calls :meth:`bots_given`."""

    def bots_given(self) -> None:
        """The executor now knows :meth:`new_bots`."""

    def more_later(self) -> bool:
        """Whether the run waits when nothing is in flight and no game is ready now (a standing
        ladder waiting for bots) instead of ending."""

    def stop_reason(self) -> str | None:
        """Why the source stopped handing out games before its end (a budget spent, a question
        answered), for the run's summary; None if it did not."""


def blocked_by_deal(games: list[PendingGame]) -> list[PendingGame]:
    """``games`` reordered so that each deal's (same seed's) i-th game comes after every deal's
    (i-1)-th: the first seat order of every deal, then the second, and so on."""
    groups: dict[int, list[PendingGame]] = {}
    for game in games:
        groups.setdefault(game.seed, []).append(game)
    depth = max((len(g) for g in groups.values()), default=0)
    return [g[i] for i in range(depth) for g in groups.values() if i < len(g)]


class StoreSource:
    """The store's pending games (at most ``limit``), read lazily in chunks, handed out in
    windows of ``window`` deals blocked by seat order (:func:`blocked_by_deal`)."""

    def __init__(self, store: LeagueStore, limit: int | None = None, window: int = DEAL_WINDOW) -> None:
        self._pending: PendingView = store.pending_view(limit=limit)
        self._next = 0
        self._window = max(1, window)
        self._ready: deque[PendingGame] = deque()

    def total(self) -> int:
        return len(self._pending)

    def remaining(self) -> int:
        return len(self._pending) - self._next + len(self._ready)

    def _fill(self) -> None:
        """Read the next window: whole deals (games of one deal are consecutive in schedule order)."""
        games: list[PendingGame] = []
        seeds: set[int] = set()
        while self._next < len(self._pending):
            game = self._pending[self._next]
            if game.seed not in seeds:
                if len(seeds) == self._window:
                    break
                seeds.add(game.seed)
            games.append(game)
            self._next += 1
        self._ready.extend(blocked_by_deal(games) if self._window > 1 else games)

    def next_games(self, n: int) -> list[PendingGame]:
        games: list[PendingGame] = []
        while len(games) < n:
            if not self._ready:
                self._fill()
                if not self._ready:
                    break
            games.append(self._ready.popleft())
        return games

    def recorded(self, game: PendingGame, outcome: GameOutcome) -> None:
        pass  # the schedule is fixed

    def new_bots(self) -> Mapping[int, BotEntry]:
        return _NO_BOTS  # the round robin's bots are the config's, known to every worker

    def bots_given(self) -> None:
        pass

    def more_later(self) -> bool:
        return False

    def stop_reason(self) -> str | None:
        return None
