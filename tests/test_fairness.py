"""No bot is charged for another's fault: start-up is awaited for all seats together.

A bot that is slow or silent at start-up in seat 0 (never answers, answers garbage, forks 300
children first, floods stderr, answers late) must never get the reference random bot in seat 1
charged with "timeout at start-up", even on a loaded machine, where killing the offender's tree
takes long enough for seat 1's own init deadline to pass. Before the fix, the referee awaited
the readys one seat after another and charged the innocent bot in 7 of 33 such runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kit import busy

from harness.games import get_game
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import RefereeConfig, play_game

ROOT = Path(__file__).resolve().parents[1]
SLOW = ROOT / "tests" / "bots" / "slowstart.py"
RANDOM = ROOT / "bots" / "random_bot.py"
KINDS = ["mute", "garbage", "forks", "flood", "late"]
RUNS = 4


@pytest.fixture
def loaded_machine():
    """One busy process per core for the test's duration: the referee and the bots compete for CPU."""
    with busy(2, 120.0):
        yield


@pytest.mark.parametrize("kind", KINDS)
def test_a_slow_starting_bot_never_gets_its_neighbour_charged(tmp_path, loaded_machine, kind):
    game = get_game("crisps")
    config = RefereeConfig(time=TimeControls(init_ms=1000, move_ms=2000, bank_ms=0),
                           limits=ResourceLimits(), strikes=0, log_dir=str(tmp_path))
    slow = BotSpec(name=f"slow-{kind}", command=(sys.executable, str(SLOW), kind, "--late-ms", "2500"),
                   cwd=str(tmp_path))
    charged = []
    for run in range(RUNS):
        # a fresh pool each run: both bots start in the same game, as in the reported case
        with BotPool(config) as pool:
            reference = BotSpec(name="random-py", command=(sys.executable, str(RANDOM), "--seed", str(run)),
                                cwd=str(ROOT))
            record = play_game(game, {}, run, f"g-{kind}-{run}", [slow, reference], pool, config)
        kinds = {v["seat"]: v["kind"] for v in record.violations}
        assert kinds.get(0) in ("timeout", "malformed", "protocol"), (kind, record.violations)
        charged += [v for v in record.violations if v["seat"] == 1]
        assert record.ranking == [1, 0], record.ranking
    assert charged == [], charged
