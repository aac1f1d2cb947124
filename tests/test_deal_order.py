"""The round robin's dispatch order: windows of deals blocked by seat order (see harness/league/game_sources.py)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest

from harness.league.executors.local import (
    AFFINITY_SLACK,
    LocalExecutor,
    _Worker,
    preferred_worker,
    seat_order_rank,
)
from harness.league.game_sources import StoreSource, blocked_by_deal
from harness.league.store_pending import PendingGame


def games(deals: int, per_deal: int) -> list[PendingGame]:
    return [PendingGame(seq=d * per_deal + i + 1, game_id=f"g{d}-{i}", seed=1000 + d, round=d, version_ids=(1, 2))
            for d in range(deals) for i in range(per_deal)]


class FakeStore:
    def __init__(self, pending: list[PendingGame]) -> None:
        self.pending = pending

    def pending_view(self, limit: int | None = None) -> list[PendingGame]:
        return self.pending[:limit] if limit is not None else self.pending


def test_blocked_by_deal_hands_out_each_deals_ith_game_before_any_deals_next():
    order = blocked_by_deal(games(3, 2))
    assert [g.game_id for g in order] == ["g0-0", "g1-0", "g2-0", "g0-1", "g1-1", "g2-1"]


def test_the_source_hands_out_every_game_once_in_windows_of_whole_deals():
    pending = games(10, 6)
    source = StoreSource(FakeStore(pending), window=4)  # type: ignore[arg-type]
    out = []
    while batch := source.next_games(5):
        out.extend(batch)
        assert source.remaining() == len(pending) - len(out)
    assert sorted(g.seq for g in out) == [g.seq for g in pending]
    # windows: deals 0-3, 4-7, 8-9; within one, seat order by seat order
    assert [g.seed - 1000 for g in out[:8]] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert {g.seed - 1000 for g in out[24:48]} == {4, 5, 6, 7}
    assert {g.seed - 1000 for g in out[48:]} == {8, 9}
    # a window of 1 is schedule order
    assert StoreSource(FakeStore(pending), window=1).next_games(60) == pending  # type: ignore[arg-type]


def test_every_seat_order_of_a_table_has_its_own_rank():
    for k in (2, 3, 4):
        orders = list(itertools.permutations([7, 3, 11, 5][:k]))
        assert sorted(seat_order_rank(o) for o in orders) == list(range(math.factorial(k)))


class _Conn:
    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(self, task: tuple) -> None:
        self.sent.append(task)


def _executor(workers: int) -> tuple[LocalExecutor, list[_Conn]]:
    """A LocalExecutor's dispatch without processes: each worker's pipe records what it was sent."""
    ex = LocalExecutor.__new__(LocalExecutor)
    conns = [_Conn() for _ in range(workers)]
    ex._pool = [_Worker(None, conn) for conn in conns]  # type: ignore[arg-type]
    ex._remaining = None
    ex._deals = {}
    return ex, conns


def _table_games(deals: int, seats: int) -> list[PendingGame]:
    out = []
    for d in range(deals):
        for i, order in enumerate(itertools.permutations(range(1, seats + 1))):
            out.append(PendingGame(seq=len(out) + 1, game_id=f"g{d}-{i}", seed=7919 * d + 13, round=d,
                                   version_ids=order))
    return out


@pytest.mark.parametrize("seats,workers", [(2, 2), (3, 2), (4, 2), (3, 3), (4, 3)])
def test_each_worker_is_sent_an_equal_share_of_every_deals_seat_orders(seats, workers):
    # a process plays one game of a deal at most: a worker sent k of a deal's seat orders needs k
    # processes of each bot, so an even split is the fewest processes per worker
    ex, conns = _executor(workers)
    games = blocked_by_deal(_table_games(16, seats))
    for g in games:  # one at a time, each worker finishing its game at once: the loads stay level
        ex.submit([g])
        for w in ex._pool:
            w.in_flight = 0
    share = math.factorial(seats) // workers
    for conn in conns:
        per_deal = Counter(seed for _seq, _id, seed, _ids in conn.sent)
        assert set(per_deal.values()) == {share}, per_deal


def test_a_deals_first_game_goes_to_the_least_busy_and_its_other_seat_orders_to_the_other_worker():
    ex, conns = _executor(2)
    first, second, third, fourth = _table_games(2, 2)  # two deals of two seat orders
    ex._pool[0].in_flight, ex._pool[1].in_flight = 5, 2
    ex.submit([first])
    assert [len(c.sent) for c in conns] == [0, 1]  # the least busy
    ex.submit([second])
    assert [len(c.sent) for c in conns] == [1, 1]  # the deal's other seat order: the other worker
    ex.submit([third])
    assert [len(c.sent) for c in conns] == [1, 2]
    ex._pool[0].in_flight = ex._pool[1].in_flight + AFFINITY_SLACK  # worker 0's queue is long
    ex.submit([fourth])  # its worker (0) holds AFFINITY_SLACK more games: the least busy takes it
    assert [len(c.sent) for c in conns] == [1, 3]
    assert preferred_worker(fourth, 2, 1) == 0 and preferred_worker(third, 2, 1) == 1
