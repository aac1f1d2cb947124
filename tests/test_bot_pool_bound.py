"""The bot pool keeps at most ``max_idle`` idle processes, stopping the least recently used first."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest

from harness.games import get_game
from harness.league.config import ConfigError, load_config
from harness.league.game_sources import StoreSource
from harness.league.runner import IDLE_BOTS_CAP, RunOptions, idle_bound, run_league
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import RefereeConfig, play_game

ROOT = Path(__file__).resolve().parent.parent
BOT = str(ROOT / "bots" / "random_bot.py")


def bot(seed: int) -> BotSpec:
    return BotSpec(name=f"r{seed}", command=("python3", BOT, "--seed", str(seed)), cwd=str(ROOT))


def test_the_idle_pool_is_bounded_least_recently_used_first(tmp_path: Path) -> None:
    config = RefereeConfig(time=TimeControls(init_ms=5000, move_ms=3000, bank_ms=0),
                           limits=dataclasses.replace(ResourceLimits()), log_dir=str(tmp_path))
    game = get_game("crisps")
    a, b, c = bot(1), bot(2), bot(3)
    with BotPool(config, max_idle=2) as pool:
        play_game(game, {"max_turns": 20}, 1, "g1", [a, b], pool, config)
        assert pool.idle_count() == 2 and pool.evicted == 0 and pool.started == 2
        play_game(game, {"max_turns": 20}, 2, "g2", [b, c], pool, config)
        # a is least recently used: stopped; b was reused, c started
        assert pool.idle_count() == 2 and pool.evicted == 1 and pool.started == 3
        assert {p.spec.name for p in pool.processes()} == {"r2", "r3"}
        play_game(game, {"max_turns": 20}, 3, "g3", [b, c], pool, config)
        assert pool.started == 3  # both reused: no new process
        pool.max_idle = 0  # settable: the next release stops everything idle
        play_game(game, {"max_turns": 20}, 4, "g4", [b, c], pool, config)
        assert pool.idle_count() == 0 and pool.processes() == []


def test_idle_bots_is_a_league_key(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("print('x')\n")
    path = tmp_path / "l.yaml"
    path.write_text("name: l\ngame: crisps\nidle_bots: 4\nbots:\n  - {name: a, command: python3 bot.py}\n"
                    "  - {name: b, command: python3 bot.py b}\n")
    assert load_config(path).idle_bots == 4
    path.write_text(path.read_text().replace("idle_bots: 4", "idle_bots: -1"))
    with pytest.raises(ConfigError, match="idle_bots"):
        load_config(path)


def test_the_default_idle_bound_keeps_what_one_process_per_deal_needs(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("print('x')\n")
    path = tmp_path / "l.yaml"
    bots = "".join(f"  - {{name: {n}, command: python3 bot.py {n}}}\n" for n in "abcd")
    path.write_text(f"name: l\ngame: dominoes\nplayers: 4\nworkers: 2\nbots:\n{bots}")
    config = load_config(path)
    assert config.idle_bots is None
    # 4 bots x 24 seat orders, over 2 workers, and half as much again for their uneven split
    assert idle_bound(config) == 72
    assert idle_bound(dataclasses.replace(config, workers=1)) == IDLE_BOTS_CAP == 96  # 144, capped
    assert idle_bound(dataclasses.replace(config, table_sizes=(2,))) == 32  # 6 needed: the least kept
    assert idle_bound(dataclasses.replace(config, idle_bots=5)) == 5  # set by the league: as it says


def _starts(path: Path) -> int:
    """Bot processes started in the league of ``path`` (its stderr logs say each start)."""
    logs = Path(str(Path(load_config(path).store).with_suffix("")) + ".logs")
    return sum(log.read_text(errors="replace").count("# tablebots: started pid") for log in logs.glob("**/*.log*"))


def test_a_league_starts_each_bot_once_per_seat_order_however_many_windows_it_plays(tmp_path: Path) -> None:
    """One process per deal at tables of 3: each bot needs 6 processes (a deal's seat orders), and
    kept alive by the default idle bound they play every later deal: 4 bots x 6 = 24 starts in 8
    deals handed out in windows of 2. Kept fewer than that need (``idle_bots: 12``), the pool
    stopped some after each window and started them again: starts that grow with the league."""
    bots = "".join(f"  - {{name: {n}, command: python3 {BOT} --seed {i}}}\n" for i, n in enumerate("abcd"))
    starts = {}
    for idle in ("", "idle_bots: 12\n"):
        path = tmp_path / f"l{len(idle)}.yaml"
        path.write_text(f"name: l{len(idle)}\nstore: {tmp_path / f'l{len(idle)}.sqlite'}\ngame: dominoes\n"
                        f"players: 3\nrounds: 2\nworkers: 1\noptions: {{max_turns: 4}}\nlimits: {{sandbox: none}}\n"
                        f"{idle}bots:\n{bots}")
        summary = run_league(load_config(path), progress=False,
                             options=RunOptions(source=functools.partial(StoreSource, window=2)))
        assert not summary.errors and summary.played == 48  # 2 rounds of 4 tables of 3 (each its deal) x 6 seat orders
        starts[idle] = _starts(path)
    assert starts[""] == 4 * 6, starts
    assert starts["idle_bots: 12\n"] > 4 * 6 + 6, starts


def test_spares_start_ahead_play_the_next_seat_order_and_never_see_a_deal_twice(tmp_path: Path) -> None:
    """One process per deal: the second seat order of a deal needs new processes for both bots;
    with ``spares`` they were started (and sent their hello) during the first game, so the second
    game starts none of its own, and every process still plays one game of the deal at most."""
    config = RefereeConfig(time=TimeControls(init_ms=5000, move_ms=3000, bank_ms=0), log_dir=str(tmp_path),
                           record_messages=True)
    game = get_game("crisps")
    a, b = bot(1), bot(2)
    with BotPool(config) as pool:
        pool.spares = 1
        first = play_game(game, {"max_turns": 20}, 7, "g1", [a, b], pool, config)
        assert not first.violations and pool.started == 4  # the two seats, and a spare of each bot
        spares = {s.proc.pid for group in pool._spares.values() for s in group}
        assert len(spares) == 2
        second = play_game(game, {"max_turns": 20}, 7, "g2", [b, a], pool, config)
        assert not second.violations, second.violations
        hellos = [e for e in second.log if e["type"] == "send" and e["msg"]["type"] == "hello"]
        readys = [e for e in second.log if e["type"] == "recv" and e["msg"]["type"] == "ready"]
        assert len(hellos) == 2 and len(readys) == 2  # the spares' hello and ready are in the game's log
        assert pool.started == 6  # the spares played; two more started for the next game that needs them
        by_deal: dict[int, int] = {}
        for proc in pool.processes():
            assert len(proc.deals) <= 1, proc.deals  # no process was dealt two games of one deal
            for deal in proc.deals:
                by_deal[deal] = by_deal.get(deal, 0) + 1
        assert by_deal == {7: 4}  # four processes played deal 7: two per seat order
        assert spares <= {p.pid for p in pool.processes() if 7 in p.deals}  # the spares were the second game's


def test_a_spare_that_fails_its_start_up_is_charged_to_the_game_that_takes_it(tmp_path: Path) -> None:
    config = RefereeConfig(time=TimeControls(init_ms=3000, move_ms=3000, bank_ms=0), log_dir=str(tmp_path))
    game = get_game("crisps")
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)  # the bot runs as its own uid where the tests run as root
    (tmp_path / "once.py").write_text(
        "import os, sys\n"  # the first process of this bot plays; every later one answers hello with junk
        f"first = not os.path.exists({str(state / 'played')!r})\n"
        f"open({str(state / 'played')!r}, 'a').close()\n"
        "if not first:\n    sys.stdin.readline(); print('not ready', flush=True); sys.stdin.readline(); sys.exit(0)\n"
        f"os.execv(sys.executable, [sys.executable, {BOT!r}])\n")
    once = BotSpec(name="once", command=("python3", str(tmp_path / "once.py")), cwd=str(tmp_path))
    with BotPool(config) as pool:
        pool.spares = 1
        first = play_game(game, {"max_turns": 20}, 7, "g1", [once, bot(2)], pool, config)
        assert not first.violations, [(v["kind"], v["detail"], v["stderr_tail"]) for v in first.violations]
        record = play_game(game, {"max_turns": 20}, 7, "g2", [bot(2), once], pool, config)
        assert [(v["seat"], v["bot"], v["kind"]) for v in record.violations] == [(1, "once", "malformed")]
        assert "at start-up" in record.violations[0]["detail"] and record.forfeits == [1]


def test_spares_are_bounded_by_a_quarter_of_the_idle_bound_and_at_least_four(tmp_path: Path) -> None:
    """Spares wait, started, while other games play: all of them together stay within a quarter of
    ``max_idle`` (20: 5), or 4 where that is less (2: 4), whatever ``spares`` asks (3 a bot)."""
    config = RefereeConfig(time=TimeControls(init_ms=5000, move_ms=3000, bank_ms=0), log_dir=str(tmp_path))
    game = get_game("crisps")
    for max_idle, bound in [(2, 4), (20, 5)]:
        with BotPool(config, max_idle=max_idle) as pool:
            pool.spares = 3
            record = play_game(game, {"max_turns": 20}, 7, "g1", [bot(1), bot(2)], pool, config)
            assert not record.violations
            assert sorted(len(group) for group in pool._spares.values()) == [bound - 3, 3], max_idle
            assert pool.started == 2 + bound
