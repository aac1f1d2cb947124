"""One envelope per bot process tree: real hostile bots (tests/bots/attacker.py) in real games,
sandboxed as leagues are by default.

Before: at ``memory_mb: 256`` a bot with 6 children held 1,275 MB (the bound was per process);
300,000 empty files in a "64 MB" ``/tmp`` took 600 MB of kernel memory (a tmpfs bounded in
bytes, not inodes).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.games import get_game
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import GameRecord, RefereeConfig, play_game

REPO = Path(__file__).resolve().parent.parent
ATTACKER = REPO / "tests" / "bots" / "attacker.py"
RANDOM = BotSpec(name="random", command=("python3", str(REPO / "bots" / "random_bot.py"), "--seed", "1"),
                 cwd=str(REPO))


def play_attacker(tmp_path: Path, mode: str, *args: str, **limits: object) -> tuple[GameRecord, list[dict[str, str]]]:
    """One sandboxed game of the attacker against the random bot: its record and the findings."""
    config = RefereeConfig(time=TimeControls(move_ms=3000), log_dir=str(tmp_path / "logs"),
                           limits=dataclasses.replace(ResourceLimits(), sandbox="bwrap", **limits))  # type: ignore[arg-type]
    attacker = BotSpec(name=f"attacker-{mode}", command=("python3", str(ATTACKER), mode, *args), cwd=str(tmp_path))
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 40}, 1, f"g-{mode}", [attacker, RANDOM], pool, config)
    out = []
    for log in (tmp_path / "logs").glob(f"attacker-{mode}.stderr.log*"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(f"ATTACK {mode} "):
                out.append(dict(kv.split("=", 1) for kv in line.split()[2:]))
    return record, out


def test_a_bot_whose_children_hold_more_than_memory_mb_together_is_stopped(tmp_path: Path) -> None:
    """Six children of 200 MB each, at memory_mb 256: the tree goes over its bound, the kernel
    stops processes of it, and the harness stops the bot with a violation; the game goes on."""
    record, facts = play_attacker(tmp_path, "hog", "--children", "6", "--mb", "200", memory_mb=256)
    assert facts, "the hog never reported"
    seats = [v for v in record.violations if v["seat"] == 0]
    assert seats and seats[0]["kind"] == "crash" and "went over 320 MB" in seats[0]["detail"], record.violations
    assert not [v for v in record.violations if v["seat"] == 1]  # the innocent opponent is never charged
    assert record.ended_by != "error"


def test_a_bots_scratch_is_bounded_in_files_too(tmp_path: Path) -> None:
    """300,000 empty files in a 64 MB /tmp: refused long before. Where root's bubblewrap starts
    the bot, by its tmpfs's ``nr_inodes`` (one file per 4 KB of scratch: ENOSPC); where bubblewrap
    runs in a user namespace (it cannot bound inodes), by the memory bound of the bot's tree,
    which counts the files' kernel memory (the bot is stopped)."""
    from harness.play.sandbox import bwrap_userns

    record, facts = play_attacker(tmp_path, "inodes", "--files", "300000", memory_mb=128)
    if not bwrap_userns():
        [found] = facts
        assert found["error"] == "28" and int(found["made"]) <= 64 * 256, found  # ENOSPC
    else:
        assert not facts or int(facts[0]["made"]) < 300000, facts
        assert [v for v in record.violations if v["seat"] == 0 and "went over" in v["detail"]] or facts, record
    assert not [v for v in record.violations if v["seat"] == 1]
