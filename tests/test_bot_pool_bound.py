"""The bot pool keeps at most ``max_idle`` idle processes, stopping the least recently used first."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.games import get_game
from harness.league.config import ConfigError, load_config
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.referee import BotPool, RefereeConfig, play_game

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
