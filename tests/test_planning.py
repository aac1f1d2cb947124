"""Planning at scale: bulk rows equal to the object schedule, a re-run that skips planning, lazy
pending games, and a schedule past the bound refused with one line naming the key."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.league import store as store_mod
from harness.league.config import MAX_GAMES, BotEntry, LeagueConfig
from harness.league.runner import plan_league
from harness.league.schedule_roundrobin import build_schedule, deal_seed, game_id, schedule_rows
from harness.league.store import LeagueStore, PendingView

REPO = Path(__file__).resolve().parent.parent


def make_config(tmp_path: Path, n_bots: int = 5, players: tuple[int, ...] = (2, 3), rounds: int = 4) -> LeagueConfig:
    bots = tuple(BotEntry(name=f"b{i}", command=("true",), cwd="/", version=f"v{i}") for i in range(n_bots))
    return LeagueConfig(path="x.yaml", name="plan", game="dominoes", options={}, table_sizes=players, bots=bots,
                        rounds=rounds, seed=3, store=str(tmp_path / "plan.sqlite"))


@pytest.mark.parametrize("secret, key, deals", [(None, None, "per_version"), ("s3cret", "k3y", "per_version"),
                                                 ("s3cret", None, "per_bot")])
def test_bulk_rows_are_exactly_the_schedule(tmp_path, secret, key, deals):
    """The bulk rows against the schedule's definition, written out game by game: every round,
    table size, combination (config order) and seat order, each deal's seed (of the versions at
    the table, or of the names under ``deals: per_bot``) and game's id (keyed or public) hashed by
    deal_seed and game_id."""
    cfg = dataclasses.replace(make_config(tmp_path), deals=deals)
    ids = {b.label: 10 + i for i, b in enumerate(cfg.bots)}
    expected = []
    for r in range(cfg.rounds):
        for size in cfg.table_sizes:
            for combo in itertools.combinations(cfg.bots, size):
                members = [b.label if deals == "per_version" else b.name for b in combo]
                seed = deal_seed(cfg.name, cfg.seed, r, members, secret)
                for seats in itertools.permutations(combo):
                    gid = game_id(cfg.name, cfg.seed, r, [b.label for b in seats], key)
                    expected.append((gid, seed, r, size, tuple(ids[b.label] for b in seats)))
    assert list(schedule_rows(cfg, ids, secret, key)) == expected
    assert [(g.game_id, g.seed, g.round, g.players, tuple(ids[b.label] for b in g.seats))
            for g in build_schedule(cfg, secret=secret, id_key=key)] == expected


def test_a_fresh_bulk_plan_stores_what_the_object_plan_stores(tmp_path):
    cfg = make_config(tmp_path)
    other = dataclasses.replace(cfg, store=str(tmp_path / "objects.sqlite"))
    with LeagueStore(cfg.store) as bulk, LeagueStore(other.store) as objects:
        _, bulk_ids = plan_league(cfg, bulk)
        objects.bind(other)
        objects.set_meta("deal_secret", bulk.deal_secret() or "")  # one secret: the same deals
        objects.plan(build_schedule(other, secret=bulk.deal_secret(), id_key=bulk.id_key()),
                     objects.register_versions(other.bots))
        query = "SELECT seq, id, round, players, seed, versions, status FROM games ORDER BY seq"
        rows = bulk.db.execute(query).fetchall()
        assert len(rows) == len(build_schedule(cfg)) and rows == objects.db.execute(query).fetchall()
        assert [json.loads(r[5]) for r in rows[:3]] == [
            [bulk_ids[b.label] for b in g.seats] for g in build_schedule(cfg)[:3]]
        indexes = "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"
        assert bulk.db.execute(indexes).fetchall() == objects.db.execute(indexes).fetchall()
        assert bulk.db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert bulk.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1  # switched back on


def test_a_rerun_skips_planning_and_a_changed_league_plans_again(tmp_path, monkeypatch):
    cfg = make_config(tmp_path)
    with LeagueStore(cfg.store) as store:
        first, _ = plan_league(cfg, store)
        assert first.added == first.pending > 0

        def refuse(*args, **kwargs):
            raise AssertionError("planned again although nothing changed")

        monkeypatch.setattr(store_mod, "planned_chunks", refuse)
        again, _ = plan_league(cfg, store)
        assert (again.added, again.pending) == (0, first.pending)
        monkeypatch.undo()
        more = dataclasses.replace(cfg, rounds=cfg.rounds + 1)  # one more round: only its games are new
        grown, _ = plan_league(more, store)
        assert grown.added == first.added // cfg.rounds and grown.pending == first.pending + grown.added
        fewer = dataclasses.replace(cfg, bots=cfg.bots[:-1])  # a bot removed: its pending games dropped
        shrunk, _ = plan_league(fewer, store)
        assert shrunk.dropped > 0 and shrunk.added == 0


def test_pending_view_reads_lazily_in_order(tmp_path, monkeypatch):
    cfg = make_config(tmp_path, rounds=7)
    monkeypatch.setattr(PendingView, "CHUNK", 16)
    with LeagueStore(cfg.store) as store:
        plan_league(cfg, store)
        everything = store.pending_games()
        view = store.pending_view()
        assert len(view) == len(everything) and [view[i] for i in range(len(view))] == everything
        limited = store.pending_view(limit=20)
        assert len(limited) == 20 and list(limited) == everything[:20]
        assert view[3] == everything[3] and view[-1] == everything[-1]  # backwards and from the end
        with pytest.raises(IndexError):
            view[len(view)]


def test_a_schedule_past_the_bound_is_refused_in_one_line(tmp_path):
    config = tmp_path / "huge.yaml"
    config.write_text(f"name: huge\ngame: crisps\nstore: {tmp_path / 'h.sqlite'}\nrounds: 100000000000\n"
                      f"bots:\n  - {{name: a, command: {sys.executable} {REPO}/bots/random_bot.py}}\n"
                      f"  - {{name: b, command: {sys.executable} {REPO}/bots/random_bot.py}}\n")
    result = CliRunner().invoke(cli, ["run", str(config)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "huge.yaml: rounds:" in lines[0] and f"{MAX_GAMES:,}" in lines[0], result.output
    assert not (tmp_path / "h.sqlite").exists()
    result = CliRunner().invoke(cli, ["run", str(config.with_name("huge.yaml")), "--rounds", "60000000"])
    assert "--rounds" in result.output and "at most 50,000,000 rounds" in result.output


def test_a_big_league_hashed_in_a_helper_process_gives_the_same_rows_in_order(tmp_path, monkeypatch):
    from harness.league import schedule_roundrobin as schedule_mod

    cfg = make_config(tmp_path, n_bots=6, rounds=9)  # 6 bots, 2 and 3 seats: 150 games a round
    ids = {b.label: 10 + i for i, b in enumerate(cfg.bots)}
    expected = [row for chunk in schedule_mod.schedule_chunks(cfg, ids) for row in chunk]
    monkeypatch.setattr(schedule_mod, "PARALLEL_FROM", 100)
    monkeypatch.setattr(schedule_mod, "_CHUNK_GAMES", 300)  # 2 rounds a chunk: 5 chunks, 4 from the helper
    chunks = list(schedule_mod.planned_chunks(cfg, ids))
    assert len(chunks) == 5
    assert [row for chunk in chunks for row in chunk] == expected and len(expected) == 9 * 150


def test_without_a_helper_process_the_big_league_is_hashed_here(tmp_path, monkeypatch):
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from harness.league import schedule_roundrobin as schedule_mod

    class NoProcesses:  # a machine where the helper cannot start: every task fails
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, *args):
            future: Future = Future()
            future.set_exception(BrokenProcessPool("cannot start"))
            return future

    cfg = make_config(tmp_path, n_bots=6, rounds=9)
    ids = {b.label: 10 + i for i, b in enumerate(cfg.bots)}
    expected = [row for chunk in schedule_mod.schedule_chunks(cfg, ids) for row in chunk]
    monkeypatch.setattr(schedule_mod, "PARALLEL_FROM", 100)
    monkeypatch.setattr(schedule_mod, "_CHUNK_GAMES", 300)
    monkeypatch.setattr(schedule_mod, "ProcessPoolExecutor", NoProcesses)
    assert [row for chunk in schedule_mod.planned_chunks(cfg, ids) for row in chunk] == expected
