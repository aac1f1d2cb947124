"""The round robin's dispatch order: windows of deals blocked by seat order (see harness/league/game_sources.py)."""

from __future__ import annotations

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
