"""The logs file beside the store: written before the results, never shown for another store's games."""

from __future__ import annotations

from pathlib import Path

from harness.league.config import BotEntry, LeagueConfig
from harness.league.logstore import logs_path
from harness.league.runner import plan_league
from harness.league.store import GameOutcome, LeagueStore, compress_log


def config(tmp_path: Path) -> LeagueConfig:
    bots = tuple(BotEntry(name=f"b{i}", command=("true",), cwd="/", version="v1") for i in range(3))
    return LeagueConfig(path="x.yaml", name="logs", game="crisps", options={}, table_sizes=(2,), bots=bots, rounds=2,
                        store=str(tmp_path / "league.sqlite"))


def outcome(game_id: str, text: str) -> GameOutcome:
    return GameOutcome(game_id, [0, 1], [1, 0], "rules", log=compress_log([{"type": "note", "text": text}]))


def test_a_recorded_game_has_its_log_in_the_logs_file_and_a_second_delivery_changes_nothing(tmp_path):
    cfg = config(tmp_path)
    with LeagueStore(cfg.store) as store:
        plan_league(cfg, store)
        games = store.pending_games()
        assert store.record_many([(g.seq, outcome(g.game_id, f"first {g.seq}")) for g in games[:4]]) == \
            [g.seq for g in games[:4]]
        assert store.record_many([(games[0].seq, outcome(games[0].game_id, "again"))]) == []  # at least once
        assert store.game_log(games[0].seq) == [{"type": "note", "text": f"first {games[0].seq}"}]
        assert store.game_log(games[5].seq) is None  # not played
        assert store.logs.count() == 4
    assert logs_path(cfg.store).exists()
    with LeagueStore(cfg.store) as store:  # read back by another connection
        assert store.game_log(games[3].seq) == [{"type": "note", "text": f"first {games[3].seq}"}]


def test_an_orphan_log_of_a_pending_game_is_replaced_when_the_game_is_recorded(tmp_path):
    """A crash between the logs' commit and the results' commit leaves the log of a pending game."""
    cfg = config(tmp_path)
    with LeagueStore(cfg.store) as store:
        plan_league(cfg, store)
        game = store.pending_games()[0]
        store.logs.submit([(game.seq, game.game_id, compress_log([{"run": 1}]))]).result()  # then "killed"
        assert store.counts()["done"] == 0
        store.record(game.seq, GameOutcome(game.game_id, [1, 0], [0, 1], "rules", log=compress_log([{"run": 2}])))
        assert store.game_log(game.seq) == [{"run": 2}]


def test_a_new_store_at_the_same_path_does_not_show_the_deleted_stores_logs(tmp_path):
    cfg = config(tmp_path)
    with LeagueStore(cfg.store) as store:
        plan_league(cfg, store)
        game = store.pending_games()[0]
        store.record(game.seq, outcome(game.game_id, "old league"))
    for suffix in ("", "-wal", "-shm"):
        Path(cfg.store + suffix).unlink(missing_ok=True)  # the user deletes the store, not its logs
    with LeagueStore(cfg.store) as store:
        plan_league(cfg, store)  # the same league again (its ids are keyed with the new store's secret)
        assert store.game_log(game.seq) is None and store.logs.count() == 0
        assert store.logs.read(game.seq, game.game_id) is None  # not even under the old game's id
