"""The store's pending games, read lazily in schedule order (what the round-robin source hands out).

Knows nothing of the store: :meth:`harness.league.store.LeagueStore.pending_view` hands it the
count and the function that reads the next chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PendingGame", "PendingView"]


@dataclass(frozen=True)
class PendingGame:
    """A scheduled game not played yet, as stored."""

    seq: int
    game_id: str
    seed: int
    round: int
    version_ids: tuple[int, ...]


class PendingView(Sequence["PendingGame"]):
    """The pending games of a store as a sequence read lazily, 5,000 at a time, for a caller that
    walks it forwards (the runner): its length is counted once, when it is made. Games are read
    by ``seq`` after the last one read, so games recorded meanwhile (only ever ones already read)
    do not shift it."""

    CHUNK = 5_000

    def __init__(self, read_after: Callable[[int, int], list[PendingGame]], total: int,
                 limit: int | None = None) -> None:
        """``read_after(seq, n)``: the next ``n`` pending games after ``seq``; ``total``: how many are pending."""
        self._read_after = read_after
        self._len = total if limit is None else min(total, limit)
        self._chunk: list[PendingGame] = []
        self._first = 0  # index of self._chunk[0]
        self._after_seq = 0

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        if index < self._first:
            self._chunk, self._first, self._after_seq = [], 0, 0  # backwards: read again from the start
        while index >= self._first + len(self._chunk):
            self._first += len(self._chunk)
            self._chunk = self._read_after(self._after_seq, self.CHUNK)
            if not self._chunk:
                raise IndexError(index)
            self._after_seq = self._chunk[-1].seq
        return self._chunk[index - self._first]


