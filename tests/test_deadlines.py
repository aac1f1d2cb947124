"""Clock pins: how long a deadline is, what the bank is charged, and which deadline governs start-up.

Real bot processes (tests/bots/timed.py) answer at chosen delays against the toy game of
tests/toygame.py. Deadlines count the time charged to the bot (cpuclock) where the harness can freeze
bots (root: harness.play.cpuclock), so the bots compute (``--burn``) for their delays. Margins
are wide so the tests hold on a loaded 2-core machine: a bot that must be on time computes at
most 0.3-0.6x of its budget, a bot that must be late computes past it. The bank's arithmetic is
pinned exactly from the referee's own log: every request tells the bot ``time_left_ms``
(move_ms + bank), and every answer is logged with what it was charged (``cpu_ms``), so the next
``time_left_ms`` is known to the millisecond.
"""

from __future__ import annotations

import math
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from cgroup_probe import needs_cpu_clock

from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import GameRecord, RefereeConfig, play_game

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toygame import ToyGame  # noqa: E402

TOY = ToyGame()


TIMED = Path(__file__).resolve().parent / "bots" / "timed.py"


def timed_bot(tmp_path: Path, *args: str) -> BotSpec:
    d = tmp_path / f"timed-{uuid.uuid4().hex[:8]}"
    d.mkdir()
    d.chmod(0o777)  # it counts requests in a file there; as root the bot runs as an unprivileged uid
    return BotSpec(name="timed", command=(sys.executable, str(TIMED), *args), cwd=str(d))


def config(tmp_path: Path, init_ms: int, move_ms: int, bank_ms: int) -> RefereeConfig:
    return RefereeConfig(time=TimeControls(init_ms=init_ms, move_ms=move_ms, bank_ms=bank_ms),
                         limits=ResourceLimits(), strikes=5, log_dir=str(tmp_path / "logs"),
                         record_messages=True)


def play(tmp_path: Path, cfg: RefereeConfig, seat1: BotSpec, pile: int = 8, games: int = 1) -> list[GameRecord]:
    quick = timed_bot(tmp_path)
    with BotPool(cfg) as pool:
        return [play_game(TOY, {"pile": pile}, 1, f"g-clock-{i}", [quick, seat1], pool, cfg)
                for i in range(games)]


def seat_exchanges(record: GameRecord, seat: int) -> list[tuple[int, float | None]]:
    """(time_left_ms of each request to ``seat``, ms its answer took or None if none came)."""
    out: list[tuple[int, float | None]] = []
    for entry in record.log:
        if entry.get("seat") != seat:
            continue
        if entry["type"] == "send" and entry["msg"]["type"] == "request":
            out.append((entry["msg"]["time_left_ms"], None))
        elif entry["type"] == "recv" and out and out[-1][1] is None and "msg" in entry \
                and entry["msg"].get("type") == "action":
            out[-1] = (out[-1][0], entry.get("charged_ms", entry["ms"]))  # what the bank is charged
    return out


def kinds(record: GameRecord, seat: int = 1) -> list[str]:
    return [v["kind"] for v in record.violations if v["seat"] == seat]


@pytest.mark.parametrize("delay_ms,expected", [(300, []), (3000, ["timeout"])])
def test_the_move_deadline_is_move_ms(tmp_path, delay_ms, expected):
    """move_ms=1000, no bank: an answer after 0.3x of computing is on time, one at 3x is a timeout."""
    [record] = play(tmp_path, config(tmp_path, 5000, 1000, 0),
                    timed_bot(tmp_path, "--burn", "--delays", str(delay_ms)))
    assert kinds(record) == expected
    if expected:
        assert "move_ms=1000" in record.violations[0]["detail"]


@needs_cpu_clock
@pytest.mark.parametrize("sleep_ms,expected", [(300, []), (2500, ["timeout"])])
def test_a_bot_that_sleeps_is_charged_its_wall_time(tmp_path, sleep_ms, expected):
    """Sleeping uses no CPU but counts: a bot is charged its wall time minus the time it was kept
    from running (cpuclock). 0.3x move_ms asleep is on time; 2.5x is not, stopped at the budget."""
    [record] = play(tmp_path, config(tmp_path, 5000, 1000, 0), timed_bot(tmp_path, "--delays", str(sleep_ms)))
    assert kinds(record) == expected
    if expected:
        v = record.violations[0]
        assert "not counting the time it was kept from running" in v["detail"] and v["clock"]["ran_out"] == "wall"
        assert 1000 <= v["clock"]["charged_ms"] and v["clock"]["wall_ms"] < 2500 and v["clock"]["cpu_ms"] < 500


def expected_bank(exchanges: list[tuple[int, float | None]], move_ms: int, bank_ms: int) -> list[int]:
    """The time_left_ms each request should announce, from the logged answer times (ceil of the overrun)."""
    bank = bank_ms
    out = []
    for _left, took in exchanges:
        out.append(move_ms + bank)
        if took is not None and took > move_ms:
            bank = max(0, bank - math.ceil(took - move_ms))
    return out


def test_the_bank_is_charged_the_overrun_rounded_up(tmp_path):
    """Overruns of move_ms come out of the bank, each rounded up to a whole millisecond."""
    move_ms, bank_ms = 300, 3000
    [record] = play(tmp_path, config(tmp_path, 5000, move_ms, bank_ms),
                    timed_bot(tmp_path, "--burn", "--delays", "900,600,0,700"), pile=20)
    assert kinds(record) == []
    ex = seat_exchanges(record, 1)
    assert len(ex) >= 5 and all(took is not None for _, took in ex)
    announced = [left for left, _ in ex]
    assert announced[0] == move_ms + bank_ms
    # the log keeps 3 decimals; where that rounding could move the ceiling, allow the neighbour
    ambiguous = any(took is not None and abs(took - round(took)) < 0.001 for _, took in ex)
    want = expected_bank(ex, move_ms, bank_ms)
    if ambiguous:
        assert all(abs(a - w) <= 1 for a, w in zip(announced, want))
    else:
        assert announced == want
    # the slow moves cost at least what they overran (900-300 + 600-300 + 700-300)
    assert announced[-1] <= move_ms + bank_ms - 1300
    assert all(a >= move_ms for a in announced)


def test_the_bank_carries_over_within_a_game_and_refills_for_the_next(tmp_path):
    """A 1500 ms move spends ~1000 of a 2000 ms bank; a later 2000 ms move then overruns.

    With the bank refilled per move the second move would be on time (500 + 2000 > 2000). In the
    next game (same pool, same process) the bank is full again.
    """
    move_ms, bank_ms = 500, 2000
    spec = timed_bot(tmp_path, "--burn", "--delays", "1500,2000")
    first, second = play(tmp_path, config(tmp_path, 5000, move_ms, bank_ms), spec, pile=12, games=2)
    assert kinds(first) == ["timeout"]
    assert first.violations[0]["decision"] > 1  # the second request of seat 1, not its first
    ex = seat_exchanges(first, 1)
    assert ex[0][0] == move_ms + bank_ms and ex[1][0] < move_ms + bank_ms - 900
    # the timed-out process was replaced; the new one answers at once: the next game is clean
    assert kinds(second) == []
    assert seat_exchanges(second, 1)[0][0] == move_ms + bank_ms


def test_a_bank_never_goes_below_zero_and_then_move_ms_alone_applies(tmp_path):
    """Bank 200 ms, move 300 ms: a 450 ms move is on time (charge ~150); later announcements never drop below move_ms."""
    move_ms, bank_ms = 300, 200
    [record] = play(tmp_path, config(tmp_path, 5000, move_ms, bank_ms),
                    timed_bot(tmp_path, "--burn", "--delays", "0,0,1500"), pile=20)
    # the third request overruns the whole budget (300 + at most 200): a timeout, the bank stays >= 0
    assert kinds(record) == ["timeout"]
    for left, _ in seat_exchanges(record, 1):
        assert move_ms <= left <= move_ms + bank_ms


@pytest.mark.parametrize("ready_ms,init_ms,expected", [(1200, 4000, []), (4000, 1000, ["timeout"])])
def test_start_up_is_governed_by_init_ms_not_move_ms(tmp_path, ready_ms, init_ms, expected):
    """A bot that takes 4x move_ms to send ready is fine inside init_ms; past init_ms it times out."""
    [record] = play(tmp_path, config(tmp_path, init_ms, 300, 0), timed_bot(tmp_path, "--ready-ms", str(ready_ms)))
    # a bot that failed start-up is restarted (and fails again): every violation is that timeout
    assert sorted(set(kinds(record))) == expected
    if expected:
        assert record.violations[0]["decision"] == 0
        assert "start-up" in record.violations[0]["detail"]
    else:
        assert len(seat_exchanges(record, 1)) >= 2  # and it then played its moves


def test_an_empty_line_sent_when_not_asked_is_a_protocol_violation(tmp_path):
    [record] = play(tmp_path, config(tmp_path, 5000, 2000, 0), timed_bot(tmp_path, "--blank-after", "1"), pile=12)
    assert kinds(record) == ["protocol"]
    v: dict[str, Any] = record.violations[0]
    assert "not asked" in v["detail"]
