"""Leagues on a Dask LocalCluster (127.0.0.1 only): same results as the local runner, each game once."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from league_fakes import FAKE
from test_league_runner import write_config

from harness.cli import cli
from harness.league.config import load_config
from harness.league.executors.dask import batches, check_bot_files, file_hashes
from harness.league.runner import GamePlayer, RunOptions, referee_player, run_league
from harness.league.schedule_roundrobin import build_schedule
from harness.league.store import LeagueStore, PendingGame
from harness.report.tables import format_table, league_table

BOTS = Path(__file__).resolve().parent.parent / "bots"


def results(store_path: str) -> list[tuple]:
    with LeagueStore(store_path) as st:
        return [tuple(r) for r in st.db.execute(
            "SELECT g.id, s.seat, s.version_id, s.rank, s.score FROM games g JOIN seats s ON s.game_seq = g.seq "
            "WHERE g.status = 'done' ORDER BY g.seq, s.seat")]


def test_dask_local_2_gives_the_same_table_as_the_local_runner(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    local = load_config(write_config(tmp_path / "a", n_bots=5, rounds=3, players="[2, 3]"))
    on_dask = load_config(write_config(tmp_path / "b", n_bots=5, rounds=3, players="[2, 3]"))
    total = len(build_schedule(local))
    for cfg in (local, on_dask):  # one secret: the same (keyed) game ids and deals
        with LeagueStore(cfg.store) as st:
            st.set_meta("deal_secret", "d" * 64)
    assert run_league(local, player=FAKE, progress=False).played == total
    summary = run_league(on_dask, player=FAKE, progress=False, options=RunOptions(dask="local:2"))
    assert summary.played == total and summary.workers == 2 and not summary.errors
    assert results(local.store) == results(on_dask.store)
    with LeagueStore(local.store) as a, LeagueStore(on_dask.store) as b:
        assert format_table(league_table(a, local)) == format_table(league_table(b, on_dask))
    # nothing left to do: a second run plays nothing
    assert run_league(on_dask, player=FAKE, progress=False, options=RunOptions(dask="local:1")).played == 0


def test_batches_are_bounded_grouped_by_bots_and_shrink_at_the_tail() -> None:
    games = [PendingGame(seq=i, game_id=f"g{i}", seed=i, round=0, version_ids=(i % 3, 3 + i % 2))
             for i in range(500)]
    out = batches(games, n_workers=2)
    assert sorted(g.seq for b in out for g in b) == list(range(500))
    assert max(len(b) for b in out) == 64 and len(out[-1]) == 1
    mixed = sum(len({tuple(sorted(g.version_ids)) for g in b}) > 1 for b in out)
    assert mixed <= 6  # one pairing per batch, but where one pairing's games run out


def _killing_play(*args):
    """The real referee, but the worker SIGKILLs itself once, in the middle of a batch."""
    marker = Path(os.environ["TABLEBOTS_TEST_KILL_MARKER"])
    count = marker.with_suffix(".count")
    with open(count, "a") as fh:
        fh.write("x")
    if not marker.exists() and count.stat().st_size >= 5:
        marker.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    from harness.play.referee import play_game
    return play_game(*args)


def _processes_with(text: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if text in line and "ps -eo" not in line]


def test_sigkill_of_a_dask_worker_mid_batch_records_every_game_once(tmp_path: Path, monkeypatch) -> None:
    bot = tmp_path / "marked_dask_bot.py"  # a unique path: find its processes afterwards
    shutil.copy(BOTS / "random_bot.py", bot)
    path = tmp_path / "k.yaml"
    path.write_text(f"name: k\nstore: {tmp_path / 'k.sqlite'}\ngame: crisps\nrounds: 6\noptions: {{max_turns: 30}}\n"
                    f"bots:\n  - {{name: a, command: python3 {bot}}}\n  - {{name: b, command: python3 {bot} --name b}}\n"
                    f"  - {{name: c, command: python3 {bot} --name c}}\n")
    monkeypatch.setenv("TABLEBOTS_TEST_KILL_MARKER", str(tmp_path / "killed"))
    cfg = load_config(path)
    total = len(build_schedule(cfg))
    player = GamePlayer(play=_killing_play, make_pool=referee_player().make_pool)
    summary = run_league(cfg, player=player, progress=False, options=RunOptions(dask="local:1"))
    assert (tmp_path / "killed").exists(), "no worker was killed"
    assert summary.played == total and not summary.errors
    with LeagueStore(cfg.store) as st:
        assert st.counts() == {"pending": 0, "done": total, "dropped": 0}
        ids = [r[0] for r in st.db.execute("SELECT id FROM games")]
        assert sorted(ids) == sorted(g.game_id for g in build_schedule(cfg, id_key=st.id_key()))
        assert st.db.execute("SELECT count(*) FROM seats WHERE rank IS NULL").fetchone()[0] == 0
    # the first batch was played twice: the count file saw more games than the league has
    assert (tmp_path / "killed.count").stat().st_size > total
    assert _processes_with(str(bot)) == []


def test_run_dask_on_the_command_line_plays_real_bots(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"name: c\nstore: {tmp_path / 'c.sqlite'}\ngame: crisps\nrounds: 2\noptions: {{max_turns: 40}}\n"
                    f"bots:\n  - {{name: py, command: python3 {BOTS}/random_bot.py}}\n"
                    f"  - {{name: js, command: node {BOTS}/random_bot.js}}\n")
    result = CliRunner().invoke(cli, ["run", str(path), "--no-progress", "--dask", "local:2"])
    assert result.exit_code == 0, result.output
    assert "played 4 games" in result.output and "2 Dask workers" in result.output


def test_an_unreachable_scheduler_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.league.executors import dask as dask_executor

    monkeypatch.setenv(dask_executor.CONNECT_ENV, "2")  # the same path, without 20 s of retries
    path = write_config(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(path), "--no-progress", "--dask", "tcp://127.0.0.1:9"])
    assert result.exit_code != 0
    assert "--dask tcp://127.0.0.1:9: cannot reach a Dask scheduler" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("value", ["soon", "0", "-1", "inf", "nan"])
def test_a_bad_connect_timeout_in_the_environment_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    value: str) -> None:
    monkeypatch.setenv("TABLEBOTS_DASK_CONNECT_SECONDS", value)
    result = CliRunner().invoke(cli, ["run", str(write_config(tmp_path)), "--no-progress", "--dask", "tcp://127.0.0.1:9"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and f"TABLEBOTS_DASK_CONNECT_SECONDS={value!r}: give a number of seconds" in lines[0], lines


def test_the_executor_key_is_checked(tmp_path: Path) -> None:
    path = write_config(tmp_path, extra="executor: {dask: ''}\n")
    result = CliRunner().invoke(cli, ["run", str(path), "--no-progress"])
    assert result.exit_code != 0 and "executor.dask" in result.output and "local:N" in result.output
    path.write_text(path.read_text().replace("executor: {dask: ''}", "executor: {dask: 'local:1'}"))
    assert load_config(path).executor == "local:1"


def test_a_worker_with_other_bot_files_refuses_naming_itself_and_the_file(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text("print('v1')\n")
    expected = file_hashes([str(bot)])
    assert check_bot_files(expected, "tcp://127.0.0.1:1 (here)") is None
    bot.write_text("print('v2')\n")
    line = check_bot_files(expected, "tcp://127.0.0.1:1 (here)")
    assert line is not None and line.startswith("worker tcp://127.0.0.1:1 (here): bot file ")
    assert str(bot) in line and "differs" in line
    bot.unlink()
    assert "is missing" in (check_bot_files(expected, "w") or "")


def test_a_dask_worker_is_pinned_by_the_number_its_name_ends_with_and_a_name_without_one_is_not() -> None:
    """LocalCluster names its workers 0, 1...; ``dask worker --nworkers N`` ends them in ``-K``:
    worker K takes this process's K-th core (modulo the cores); any other name is left unpinned."""
    import os

    from harness.league.executors.dask import _cpu_for

    cpus = sorted(os.sched_getaffinity(0))
    assert _cpu_for(0) == cpus[0]
    assert _cpu_for(3) == cpus[3 % len(cpus)]
    assert _cpu_for("tcp://127.0.0.1:40000-5") == cpus[5 % len(cpus)]
    assert _cpu_for("a-worker") is None
    assert _cpu_for(None) is None


def test_a_workers_plugin_pins_its_task_thread_to_the_workers_core_at_its_first_batch() -> None:
    """The task thread (affinity is per thread) takes the worker's core before the first game, so
    that the bots it starts inherit it; and the GIL is handed back sooner (switch interval 0.5 ms)."""
    import os
    import sys
    import threading
    from types import SimpleNamespace

    from harness.league.executors.dask import LeaguePlugin

    plugin = LeaguePlugin(SimpleNamespace(referee_config=None), {})  # type: ignore[arg-type]
    plugin.cpu = sorted(os.sched_getaffinity(0))[-1]
    seen: list[object] = []
    interval = sys.getswitchinterval()

    def task_thread() -> None:
        plugin.play([])
        seen.extend([os.sched_getaffinity(0), sys.getswitchinterval()])

    try:
        thread = threading.Thread(target=task_thread)
        thread.start()
        thread.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert seen == [{plugin.cpu}, 0.0005]
