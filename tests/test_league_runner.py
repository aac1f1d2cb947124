"""The league runner, store and ratings with a fake referee injected (fast, deterministic).

The fake (tests/league_fakes.py) plays no game: a bot named ``sN`` has strength N and the stronger bot wins, with a
little seeded noise. The real referee is exercised in tests/test_league_e2e.py.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import random
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from league_fakes import FAKE, affinity_play, broken_play, fake_play, fake_pool, stuck_play

from harness.cli import cli
from harness.league import ratings as rating_mod
from harness.league.config import LeagueConfig, load_config
from harness.league.executors.local import AHEAD_PER_WORKER
from harness.league.runner import GamePlayer, RunOptions, plan_league, run_league
from harness.league.schedule_roundrobin import build_schedule
from harness.league.store import SCHEMA_VERSION, GameOutcome, LeagueStore
from harness.report.tables import format_table, league_table


def write_config(dir_: Path, n_bots: int = 4, rounds: int = 2, extra: str = "", bots: list[str] | None = None,
                 players: str = "2") -> Path:
    (dir_ / "bot.py").write_text("print('fake')\n")
    names = bots or [f"s{i}" for i in range(n_bots)]
    lines = [f"  - {{name: {n}, command: python3 bot.py {n}}}" for n in names]
    path = dir_ / "league.yaml"
    path.write_text(f"name: fake\ngame: dominoes\nplayers: {players}\nrounds: {rounds}\nworkers: 2\n"
                    f"store: {dir_ / 'league.sqlite'}\nbots:\n" + "\n".join(lines) + "\n" + extra)
    return path


def test_a_league_plays_its_schedule_once_and_ranks_by_strength(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path, players="[2, 3]"))
    _one_secret(cfg)  # the fake player's results follow the (keyed) game ids
    began = time.perf_counter()
    summary = run_league(cfg, player=FAKE, progress=False)
    took = time.perf_counter() - began
    expected = len(build_schedule(cfg))
    assert summary.played == expected == 2 * (6 * 2 + 4 * 6)
    assert 0 < summary.seconds <= took  # what `harness run` prints as the run's time and games/s
    again = run_league(cfg, player=FAKE, progress=False)
    assert again.played == 0 and again.plan.done == expected
    with LeagueStore(cfg.store) as store:
        assert store.counts() == {"pending": 0, "done": expected, "dropped": 0}
        rows = league_table(store, cfg)
        assert [r.bot for r in rows] == ["s3", "s2", "s1", "s0"]
        assert all(r.games == 2 * (3 * 2 + 3 * 6) for r in rows)  # per round: 3 pairs x 2 orders, 3 trios x 6
        assert rows[-1].violations > 0 and rows[0].violations == 0
        assert store.logs.count() == expected and store.db.execute("SELECT count(*) FROM logs").fetchone()[0] == 0


def test_adding_a_bot_plays_only_its_games(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path, bots=["s0", "s1", "s2"]))
    first = run_league(cfg, player=FAKE, progress=False)
    with LeagueStore(cfg.store) as store:
        before = {r[0]: r[1] for r in store.db.execute("SELECT id, finished_at FROM games")}
    more = load_config(write_config(tmp_path, bots=["s0", "s1", "s2", "s3"]))
    second = run_league(more, player=FAKE, progress=False)
    assert first.played == 2 * 3 * 2
    assert second.played == 2 * 3 * 2  # s3 against each of 3 bots, both seat orders, 2 rounds
    with LeagueStore(cfg.store) as store:
        after = {r[0]: r[1] for r in store.db.execute("SELECT id, finished_at FROM games")}
        assert {k: after[k] for k in before} == before  # earlier games untouched
        new_ids = set(after) - set(before)
        seats = store.db.execute(
            "SELECT count(DISTINCT g.id) FROM games g JOIN seats s ON s.game_seq = g.seq JOIN versions v "
            "ON v.id = s.version_id JOIN bots b ON b.id = v.bot_id WHERE b.name = 's3'").fetchone()[0]
        assert seats == len(new_ids)


def test_a_changed_bot_is_a_new_version_rated_separately(tmp_path: Path) -> None:
    path = write_config(tmp_path, bots=["s0", "s1", "s2"])
    cfg = load_config(path)
    run_league(cfg, player=FAKE, progress=False)
    text = path.read_text().replace("python3 bot.py s1}", "python3 bot.py s1 --depth 2}")
    path.write_text(text)
    changed = load_config(path)
    assert changed.bot("s1").version != cfg.bot("s1").version
    summary = run_league(changed, player=FAKE, progress=False)
    assert summary.played == 2 * 2 * 2  # the new s1 against s0 and s2
    with LeagueStore(changed.store) as store:
        rows = league_table(store, changed)
    s1 = [r for r in rows if r.bot == "s1"]
    assert len(s1) == 2 and {r.current for r in s1} == {True, False}
    text = format_table(rows)
    assert "(old)" in text


class OneAfterAnother:
    """A game source that decides its next game from the last result, as an adaptive schedule
    does: it hands out one game, then nothing until that game is recorded, and stops after
    ``wanted`` games; how many games it will give is not known in advance."""

    def __init__(self, store: LeagueStore, wanted: int) -> None:
        self.pending = store.pending_games()
        self.wanted = wanted
        self.handed: list[int] = []
        self.recorded_seqs: list[int] = []

    def total(self) -> None:
        return None

    def remaining(self) -> None:
        return None

    def next_games(self, n: int):
        if len(self.handed) > len(self.recorded_seqs):
            return []  # waiting for the result
        if len(self.handed) == self.wanted:
            return []
        game = self.pending[len(self.handed)]
        self.handed.append(game.seq)
        return [game]

    def recorded(self, game, outcome: GameOutcome) -> None:
        assert game.game_id == outcome.game_id and game.seq == self.handed[-1]
        self.recorded_seqs.append(game.seq)

    def new_bots(self) -> dict:
        return {}

    def bots_given(self) -> None:
        pass

    def more_later(self) -> bool:
        return False

    def stop_reason(self) -> None:
        return None


def test_the_writer_loop_asks_its_game_source_and_tells_it_every_result(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path))
    sources: list[OneAfterAnother] = []

    def source(store: LeagueStore, limit: int | None) -> OneAfterAnother:
        sources.append(OneAfterAnother(store, 5))
        return sources[0]

    summary = run_league(cfg, player=FAKE, progress="lines", options=RunOptions(source=source))
    [src] = sources
    assert summary.played == 5 and src.recorded_seqs == src.handed and len(src.handed) == 5
    with LeagueStore(cfg.store) as store:
        assert store.counts()["done"] == 5
        assert [g.seq for g in store.pending_games()][:1] == [src.pending[5].seq]


def test_ratings_are_kept_incrementally_and_equal_a_recomputation(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path, players="[2, 3]"))
    run_league(cfg, player=FAKE, progress=False)
    with LeagueStore(cfg.store) as store:
        kept = store.load_ratings()
        assert int(store.get_meta("rated_upto")) == store.counts()["done"]
        rating_mod.recompute(store, cfg.rating)
        assert store.load_ratings() == kept  # exactly: the same arithmetic in the same order


def test_ratings_do_not_depend_on_the_order_games_finish(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path, players="[2, 3]"))
    outcomes = {}
    store_a = LeagueStore(tmp_path / "a.sqlite")
    store_b = LeagueStore(tmp_path / "b.sqlite")
    store_b.set_meta("deal_secret", store_a.deal_secret() or "")  # one secret: the same (keyed) game ids
    for store in (store_a, store_b):
        plan_league(cfg, store)
    pending = store_a.pending_games()
    specs = {v: SimpleNamespace(name=n) for n, v in
             ((r.name, r.id) for r in store_a.versions())}
    for g in pending:
        rec = fake_play(None, {}, g.seed, g.game_id, [specs[v] for v in g.version_ids], None, None)
        outcomes[g.seq] = GameOutcome(rec.game_id, rec.ranking, rec.scores, "rules", [], rec.violations)
    order = list(outcomes)
    shuffled = order[:]
    random.Random(3).shuffle(shuffled)
    for store, seqs in ((store_a, order), (store_b, shuffled)):
        for i, seq in enumerate(seqs):
            with store.transaction():
                assert store.record(seq, outcomes[seq])
                rating_mod.advance(store, cfg.rating)
            if i == len(seqs) // 2:
                # half-way: the table covers every finished game, rated prefix or not
                ratings, _, tail = rating_mod.current_ratings(store, cfg.rating)
                done = [s for s in order if s in set(seqs[:i + 1])]
                expect = rating_mod.replay_all(
                    [[(v, r) for v, r in zip(next(p for p in pending if p.seq == s).version_ids,
                                             outcomes[s].ranking)] for s in done], cfg.rating)
                assert ratings == expect
        assert not store.record(seqs[0], outcomes[seqs[0]])  # never counted twice
    assert store_a.load_ratings() == store_b.load_ratings()
    assert store_a.get_meta("rated_upto") == store_b.get_meta("rated_upto") == str(order[-1])
    store_a.close()
    store_b.close()


def test_changed_rating_parameters_rebuild_the_ratings(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    cfg = load_config(path)
    run_league(cfg, player=FAKE, progress=False)
    path.write_text(path.read_text() + "rating: {beta: 2.0}\n")
    cfg2 = load_config(path)
    with LeagueStore(cfg.store) as store:
        old = store.load_ratings()
        rows = league_table(store, cfg2)
        assert store.load_ratings() != old
        assert {r.bot: r.mu for r in rows} != {}


def test_a_store_of_another_league_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    run_league(load_config(path), player=FAKE, progress=False)
    path.write_text(path.read_text().replace("game: dominoes", "game: dominoes\nseed: 5"))
    result = CliRunner().invoke(cli, ["run", str(path), "--no-progress"])
    assert result.exit_code == 2
    assert "holds games of seed 0" in result.output and "Traceback" not in result.output


def _one_secret(*configs: LeagueConfig) -> None:
    """Give these leagues' stores one deal secret: the same (keyed) game ids, so the fake
    player's results, which follow the ids, are the same from run to run."""
    for cfg in configs:
        with LeagueStore(cfg.store) as store:
            store.set_meta("deal_secret", "7" * 64)


def test_table_formats(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    _one_secret(load_config(path))
    run_league(load_config(path), player=FAKE, progress=False)
    runner = CliRunner()
    text = runner.invoke(cli, ["table", str(path)])
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[0].split()[:3] == ["rank", "bot", "version"] and "mu-3sigma" in lines[0]
    assert lines[2].split()[:2] == ["1", "s3"]
    md = runner.invoke(cli, ["table", str(path), "--format", "md"]).output.splitlines()
    assert md[0].startswith("| rank | bot |") and md[1].startswith("| ---:") and len(md) == 6
    rows = list(csv.DictReader(io.StringIO(runner.invoke(cli, ["table", str(path), "--format", "csv"]).output)))
    assert [r["bot"] for r in rows] == ["s3", "s2", "s1", "s0"]
    assert float(rows[0]["rating"]) == pytest.approx(float(rows[0]["mu"]) - 3 * float(rows[0]["sigma"]), abs=1e-3)
    data = json.loads(runner.invoke(cli, ["table", str(path), "--format", "json"]).output)
    assert data["games_done"] == 24 and data["table"][0]["bot"] == "s3" and data["table"][0]["rank"] == 1
    recomputed = json.loads(runner.invoke(cli, ["table", str(path), "--format", "json", "--recompute"]).output)
    assert recomputed["table"] == data["table"]


def test_violations_are_listed_filtered_and_shown(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    _one_secret(load_config(path))  # the fake player's violations follow the (keyed) game ids
    run_league(load_config(path), player=FAKE, progress=False)
    runner = CliRunner()
    listing = runner.invoke(cli, ["violations", str(path)])
    assert listing.exit_code == 0
    lines = listing.output.splitlines()
    assert lines and all(" s0@" in line and " illegal " in line for line in lines)
    assert runner.invoke(cli, ["violations", str(path), "--bot", "s1"]).stdout.strip() == ""
    assert runner.invoke(cli, ["violations", str(path), "--kind", "timeout"]).stdout.strip() == ""
    first = lines[0].split()[0].lstrip("#")
    shown = runner.invoke(cli, ["violations", str(path), "--show", first])
    assert "request (the exact line sent)" in shown.output and "index 9 not offered" in shown.output
    full = json.loads(runner.invoke(cli, ["violations", str(path), "--show", first, "--json"]).output)
    assert full["snapshot"] == {"a": 1} and full["kind"] == "illegal"
    missing = runner.invoke(cli, ["violations", str(path), "--show", "99999"])
    assert missing.exit_code == 2 and "no violation #99999" in missing.output


def test_table_before_any_run_says_what_to_do(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    result = CliRunner().invoke(cli, ["table", str(path)])
    assert result.exit_code == 2 and "harness run" in result.output


def test_schema_version_is_recorded(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    cfg = load_config(path)
    LeagueStore(cfg.store).close()
    db = sqlite3.connect(cfg.store)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    assert dataclasses.is_dataclass(cfg)


def test_a_harness_bug_stops_the_run_with_the_games_left_pending(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path, rounds=10))
    summary = run_league(cfg, player=GamePlayer(play=broken_play, make_pool=fake_pool), progress=False)
    assert summary.played == 0
    assert summary.gave_up and "RuntimeError: engine bug" in summary.errors[0]
    # no game is handed out after the 5th error; those already queued may still have failed
    assert 5 <= len(summary.errors) <= 5 + 2 * AHEAD_PER_WORKER < len(build_schedule(cfg))
    with LeagueStore(cfg.store) as store:
        assert store.counts()["pending"] == len(build_schedule(cfg))
    follow = run_league(cfg, player=FAKE, progress=False)
    assert follow.played == len(build_schedule(cfg))


def test_a_fixed_version_label_survives_edits_and_auto_does_not(tmp_path: Path) -> None:
    path = write_config(tmp_path, bots=["s0", "s1"])
    path.write_text(path.read_text().replace("python3 bot.py s0}", "python3 bot.py s0, version: v1}"))
    cfg = load_config(path)
    run_league(cfg, player=FAKE, progress=False)
    (tmp_path / "bot.py").write_text("print('edited')\n")  # both bots run this file
    edited = load_config(path)
    assert edited.bot("s0").version == "v1" and edited.bot("s1").version != cfg.bot("s1").version
    with LeagueStore(edited.store) as store:
        plan, _ = plan_league(edited, store)
    assert plan.added == 4  # s1's new version replays its 2 rounds x 2 seat orders; s0 keeps its games


def test_removed_bots_drop_their_pending_games_and_come_back(tmp_path: Path) -> None:
    path = write_config(tmp_path, bots=["s0", "s1", "s2"])
    cfg = load_config(path)
    first = run_league(cfg, player=FAKE, progress=False, options=RunOptions(max_games=5))
    assert first.played == 5
    fewer = load_config(write_config(tmp_path, bots=["s0", "s1"]))
    with LeagueStore(cfg.store) as store:
        plan, _ = plan_league(fewer, store)
        assert plan.dropped > 0 and plan.added == 0
        dropped = store.counts()["dropped"]
    summary = run_league(fewer, player=FAKE, progress=False)
    with LeagueStore(cfg.store) as store:
        counts = store.counts()
        assert counts["pending"] == 0 and counts["dropped"] == dropped
        table = {r.bot: r for r in league_table(store, fewer)}
        assert table["s2"].games > 0 and not table["s2"].current  # its finished games still count
    again = run_league(cfg, player=FAKE, progress=False)  # s2 is back: its dropped games return
    assert again.plan.reactivated == dropped and again.played == dropped
    with LeagueStore(cfg.store) as store:
        assert store.counts() == {"pending": 0, "done": len(build_schedule(cfg)), "dropped": 0}
        kept = store.load_ratings()
        rating_mod.recompute(store, cfg.rating)
        assert store.load_ratings() == kept  # the reactivated games were rated in schedule order
    assert summary.played + first.played + again.played == len(build_schedule(cfg))


def test_results_can_be_read_where_the_bots_cannot_run(tmp_path: Path) -> None:
    path = write_config(tmp_path, bots=["s0", "s1"])
    cfg = load_config(path)
    run_league(cfg, player=FAKE, progress=False)
    path.write_text(path.read_text().replace("python3 bot.py s1}", "no-such-interpreter gone.py s1}"))
    runner = CliRunner()
    refused = runner.invoke(cli, ["run", str(path), "--no-progress"])
    assert refused.exit_code == 2 and "bots[1].command" in refused.output
    table = runner.invoke(cli, ["table", str(path), "--format", "json"])
    assert table.exit_code == 0, table.output
    rows = {(r["bot"], r["current"]): r for r in json.loads(table.stdout)["table"]}
    assert rows[("s1", False)]["games"] == 4 and ("s1", True) not in rows  # its results, as an old version
    assert rows[("s0", True)]["games"] == 4
    assert runner.invoke(cli, ["violations", str(path)]).exit_code == 0


def test_a_second_runner_of_the_same_league_is_refused(tmp_path: Path) -> None:
    import fcntl

    path = write_config(tmp_path)
    cfg = load_config(path)
    with open(f"{cfg.store}.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242")
        held.flush()
        result = CliRunner().invoke(cli, ["run", str(path), "--no-progress"])
        assert result.exit_code == 2
        assert "another `harness run` (pid 4242) is playing this league" in result.output
    assert run_league(cfg, player=FAKE, progress=False).played == 24  # free again


def as_schema_1(store_path: str) -> None:
    """Turn a schema-2 store back into the schema-1 layout: seat rows for every game, no versions column."""
    db = sqlite3.connect(store_path, isolation_level=None)
    db.execute("BEGIN")
    for seq, versions in db.execute("SELECT seq, versions FROM games WHERE status != 'done'").fetchall():
        db.executemany("INSERT INTO seats (game_seq, seat, version_id) VALUES (?, ?, ?)",
                       [(seq, seat, v) for seat, v in enumerate(json.loads(versions))])
    db.execute("ALTER TABLE games DROP COLUMN versions")
    db.execute("PRAGMA user_version=1")
    db.execute("COMMIT")
    db.close()


def test_a_schema_1_store_is_migrated_and_its_league_finishes_as_a_new_one_would(tmp_path: Path) -> None:
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    old_dir.mkdir()
    new_dir.mkdir()
    old = load_config(write_config(old_dir, rounds=3))
    fresh = load_config(write_config(new_dir, rounds=3))
    _one_secret(old, fresh)
    first = run_league(old, player=FAKE, progress=False, options=RunOptions(max_games=20))
    assert first.played == 20
    as_schema_1(old.store)
    with LeagueStore(old.store) as store:  # migrated on open
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == 3
        assert store.db.execute("SELECT count(*) FROM seats WHERE rank IS NULL").fetchone()[0] == 0
        pending = store.pending_games()
        assert len(pending) == len(build_schedule(old)) - 20 and all(len(g.version_ids) == 2 for g in pending)
        assert [s.name for s in store.game_seats(pending[0].seq)] == [b.name for b in build_schedule(old)[20].seats]
    run_league(old, player=FAKE, progress=False)
    run_league(fresh, player=FAKE, progress=False)
    with LeagueStore(old.store) as a, LeagueStore(fresh.store) as b:
        query = ("SELECT g.id, s.seat, s.version_id, s.rank, s.score FROM games g JOIN seats s ON s.game_seq = g.seq "
                 "ORDER BY g.seq, s.seat")
        assert a.db.execute(query).fetchall() == b.db.execute(query).fetchall()
        assert a.counts() == b.counts() == {"pending": 0, "done": len(build_schedule(old)), "dropped": 0}


@pytest.mark.parametrize("schedule", ["rounds: 2\n", "schedule: {kind: adaptive, games: 8}\n"])
@pytest.mark.parametrize("how", ["stop", "gave_up", "finished"])
def test_harness_run_says_what_it_played_and_why_it_stopped(tmp_path, monkeypatch, schedule, how):
    # one summary for both schedules: the counts, the results, the harness's errors (the first in
    # full, the others in one line, counted), and a stop, a give-up or the end, each as its exit code
    from click.testing import CliRunner

    import harness.league.runner as runner_mod
    from harness.cli import cli
    from harness.league.store import PlanSummary

    bots = Path(__file__).resolve().parent.parent / "bots"
    config = tmp_path / "l.yaml"
    config.write_text(f"name: l\ngame: crisps\nworkers: 1\n{schedule}bots:\n"
                      f"  - {{name: a, command: python3 {bots}/random_bot.py}}\n"
                      f"  - {{name: b, command: python3 {bots}/random_bot.py --seed 2}}\n")
    errors = ["Traceback (most recent call last):\nRuntimeError: engine bug\n"] * 2 + ["Traceback\nValueError: other\n"]
    summary = runner_mod.RunSummary(plan=PlanSummary(0, 0, 0, 4, 0), played=1, violations=2, seconds=2.0, workers=1,
                         errors=errors if how != "finished" else [],
                         stop_reason="the cluster is gone" if how == "stop" else None, gave_up=how == "gave_up",
                         finished="the budget of 8 games is played (schedule.games)" if how == "finished" else None)
    monkeypatch.setattr(runner_mod, "run_league", lambda cfg, **kw: summary)
    result = CliRunner().invoke(cli, ["run", str(config), "--quiet"])
    adaptive = "adaptive" in schedule
    totals = "0 done in all" if adaptive else "1 done, 3 left"
    assert f"l: played 1 games in 2.0 s (0.5 games/s, 1 worker), 2 violations; {totals}. See: harness table" in result.output
    assert f"violations: harness violations {config}" in result.output and "results: " in result.output
    if how == "finished":
        assert result.exit_code == 0, result.output
        assert ("finished: the budget of 8 games" in result.output) == adaptive
        return
    assert result.exit_code == 1, result.output
    assert "error (2 games): Traceback (most recent call last):\nRuntimeError: engine bug" in result.output
    assert "error: ValueError: other" in result.output
    pending = 0 if adaptive else 3
    said = {"stop": f"stopped: the cluster is gone; the games recorded are kept, {pending} are still pending",
            "gave_up": "stopped after 3 games failed inside the harness (not because of a bot)"}[how]
    assert said in result.output and "finished:" not in result.output


def test_closing_the_executor_ends_a_worker_stuck_in_a_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """close() asks each worker to stop, waits for it 3 s in all, then terminates it: a worker
    stuck in a game does not hold the run's end (Ctrl-C, a finished ladder) until its game ends."""
    import threading

    from harness.league.executors.local import LocalExecutor
    from harness.league.runner import worker_setup
    from harness.league.store_pending import PendingGame

    mark = tmp_path / "in-game"
    monkeypatch.setenv("STUCK_MARK", str(mark))
    cfg = load_config(write_config(tmp_path))
    with LeagueStore(cfg.store) as store:
        _, version_ids = plan_league(cfg, store)
    setup = worker_setup(cfg, version_ids, GamePlayer(play=stuck_play, make_pool=fake_pool))
    executor = LocalExecutor(setup, 1, pin=False)
    worker = executor._pool[0].process
    executor.submit([PendingGame(1, "g-stuck", 7, 0, (1, 2))])
    for _ in range(600):  # the worker is in its game
        if mark.exists():
            break
        time.sleep(0.05)
    assert mark.read_text() == "g-stuck"
    closing = threading.Thread(target=executor.close, daemon=True)
    closing.start()
    closing.join(60.0)  # a liveness bound, far past the 3 s + SIGTERM close() takes: the game sleeps 600 s
    assert not closing.is_alive(), "close() waited for the stuck game"
    assert not worker.is_alive()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning two workers apart needs two cores")
def test_a_leagues_workers_are_pinned_each_to_a_core_of_its_own_by_default(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers on two cores: each plays on one core, not the same one (a line exchanged with a
    bot on one core costs a fraction of one across cores); ``pin=False`` leaves them free."""
    log = tmp_path / "affinity.log"
    monkeypatch.setenv("AFFINITY_LOG", str(log))
    player = GamePlayer(play=affinity_play, make_pool=fake_pool)
    run_league(load_config(write_config(tmp_path, n_bots=3, rounds=2)), player=player, progress=False)
    cores = {pid: set(c.split(",")) for pid, c in (line.split() for line in log.read_text().splitlines())}
    assert len(cores) == 2 and all(len(c) == 1 for c in cores.values()) and len(set.union(*cores.values())) == 2
    log.unlink()
    (tmp_path / "league.sqlite").unlink()
    run_league(load_config(write_config(tmp_path, n_bots=3, rounds=2)), player=player, progress=False,
               options=RunOptions(pin=False))
    free = {c for line in log.read_text().splitlines() for c in [line.split()[1]]}
    assert free == {",".join(map(str, sorted(os.sched_getaffinity(0))))}
