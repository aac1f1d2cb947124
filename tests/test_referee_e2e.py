"""End-to-end tests of the referee with real bot processes.

Every misbehaving bot (tests/bots/misbehave.py, one mode per misbehaviour) plays a real
game through ``harness.play.referee.play_game``; each test checks the violation kind and its
fields, that the game completes with the offender ranked last, that no process of the
offender survives (found by a marker in its command line, via /proc) and that the
referee's own memory stays bounded; each under the default isolation and under
``pid_namespace``. Then: the ``strikes`` policy, the time bank, restarts across games, games
between the reference bots in every game, ``harness play``, and the bwrap sandbox.

Most games here are "race", a tiny game defined below (always three legal actions, so
every decision is a request to a bot), to keep the file fast and independent of the
real engines; the reference-bot games, the CLI and the sandbox use the real games.
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.games import GAMES, Game, IllegalAction, InvalidSnapshot, State, get_game, ranking_from_keys
from harness.games.base import int_option
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import GameRecord, RefereeConfig, play_game

ROOT = Path(__file__).resolve().parent.parent
BOTS = ROOT / "bots"
MISBEHAVE = ROOT / "tests" / "bots" / "misbehave.py"
PROBE = ROOT / "tests" / "bots" / "sandbox_probe.py"

VIOLATION_FIELDS = ("game_id", "seed", "decision", "seat", "bot", "kind", "detail", "request", "received",
                    "stderr_tail", "snapshot")
#: The referee (a Python process) may not grow by anything near the 100 MB line or the 50 MB of stderr:
#: it may hold about one line at the 1 MiB cap (measured: ~1.1 MiB traced peak for the 100 MB line).
MEMORY_BOUND_BYTES = 8 << 20


# --------------------------------------------------------------------------- a tiny game


class RaceState(State):
    """Seats take turns adding 1, 2 or 3 to a shared total; the game ends at ``target``."""

    def __init__(self, players: int, seed: int, options: Mapping[str, Any]) -> None:
        self.players = players
        self.seed = seed
        self.options = dict(options)
        self.total = 0
        self.turns = 0
        self.scores = [0] * players
        self.current_player: int | None = 0
        self.events: list[dict[str, Any]] = []
        self.capped = False

    def legal_actions(self) -> list[dict[str, Any]]:
        if self.current_player is None:
            return []
        return [{"type": "add", "n": n} for n in (1, 2, 3)]

    def apply(self, action: dict[str, Any]) -> None:
        if action not in self.legal_actions():
            raise IllegalAction(f"{action!r} is not legal")
        seat = self.current_player
        assert seat is not None
        self.total += action["n"]
        self.scores[seat] += action["n"]
        self.turns += 1
        self.events.append({"type": "add", "seat": seat, "n": action["n"], "total": self.total})
        if self.total >= self.options["target"]:
            self.current_player = None
        elif self.options["max_turns"] and self.turns >= self.options["max_turns"]:
            self.current_player, self.capped = None, True
        else:
            self.current_player = (seat + 1) % self.players

    def observation(self, seat: int) -> dict[str, Any]:
        return {"seat": seat, "total": self.total, "scores": list(self.scores), "target": self.options["target"]}

    def is_terminal(self) -> bool:
        return self.current_player is None

    def result(self) -> dict[str, Any]:
        return {"ranking": ranking_from_keys(self.scores), "scores": list(self.scores),
                "ended_by": "turn_cap" if self.capped else "rules"}

    def to_json(self) -> dict[str, Any]:
        return {"players": self.players, "seed": self.seed, "options": self.options, "total": self.total,
                "turns": self.turns, "scores": self.scores, "current_player": self.current_player,
                "events": self.events, "capped": self.capped}

    def render(self) -> str:
        return f"total {self.total}/{self.options['target']} scores {self.scores} to play {self.current_player}"


class Race(Game):
    name = "race"
    min_players = 2
    max_players = 3
    option_list = (int_option("target", 40, 5, 1000, "The total that ends the game."),
                   int_option("max_turns", 0, 0, 10_000, "Turn cap, 0 for none."))

    def new_state(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> RaceState:
        return RaceState(self.validate_players(players), seed, self.validate_options(options))

    def state_from_json(self, data: Mapping[str, Any]) -> RaceState:
        try:
            state = RaceState(data["players"], data["seed"], data["options"])
            state.total, state.turns, state.capped = data["total"], data["turns"], data["capped"]
            state.scores, state.current_player = list(data["scores"]), data["current_player"]
            state.events = [dict(e) for e in data["events"]]
        except (KeyError, TypeError) as exc:
            raise InvalidSnapshot(str(exc)) from None
        return state

    def format_action(self, action: dict[str, Any]) -> str:
        return f"+{action['n']}"

    def parse_action(self, text: str) -> dict[str, Any]:
        return {"type": "add", "n": int(text.lstrip("+"))}


RACE = Race()


# --------------------------------------------------------------------------- processes


def _proc_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` from /proc, or None if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2]


def pids_with_marker(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline.split(b"\0") and _proc_state(int(entry)) not in (None, "Z"):
            found.append(int(entry))
    return found


def alive(pids: list[int], marker: str) -> list[int]:
    """Those of ``pids`` still running (not zombies) with ``marker`` in their command line."""
    live = set(pids_with_marker(marker))
    return [p for p in pids if p in live]


def wait_until_gone(pids: list[int], marker: str, grace: float = 5.0) -> list[int]:
    """Wait (loosely, a kill is asynchronous) for ``pids`` to die; return the survivors."""
    deadline = time.monotonic() + grace
    while True:
        left = alive(pids, marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_leftovers(marker: str) -> None:
    """Test hygiene only: kill whatever a failing referee left behind, so tests stay independent."""
    for pid in pids_with_marker(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Bot:
    """A misbehave.py bot with its own marker, pid file and working directory."""

    def __init__(self, tmp_path: Path, mode: str, *args: str, name: str | None = None) -> None:
        self.marker = f"tbtest-{uuid.uuid4().hex[:12]}"
        self.dir = tmp_path / f"bot-{mode}-{self.marker}"
        self.dir.mkdir()
        self.dir.chmod(0o777)  # as root the bot runs as an unprivileged uid: it may write its pid file here
        self.pidfile = self.dir / "pids.txt"
        self.spec = BotSpec(name=name or f"misbehave-{mode}",
                            command=("python3", str(MISBEHAVE), mode, *args, "--pidfile", str(self.pidfile),
                                     "--marker", self.marker),
                            cwd=str(self.dir))

    def pids(self, role: str | None = None) -> list[int]:
        rows = []
        if self.pidfile.exists():
            rows = [line.split() for line in self.pidfile.read_text().splitlines() if line.strip()]
        # sandboxed, the bot's directory is read-only: it notes its pids on stderr (in the logs)
        for log in self.dir.parent.rglob("*.stderr.log*"):
            for line in log.read_text(errors="replace").splitlines():
                words = line.split()
                if len(words) == 4 and words[0] == "PIDNOTE" and words[1] == str(self.pidfile):
                    rows.append(words[2:])
        return [int(pid) for pid, r in rows if role is None or r == role]

    def misbehaving_pids(self) -> list[int]:
        """Processes that misbehaved, and every grandchild: none may outlive the game."""
        return sorted(set(self.pids("bad")) | set(self.pids("grandchild")))


def random_bot(seed: int = 1, name: str = "random-py") -> BotSpec:
    return BotSpec(name=name, command=("python3", str(BOTS / "random_bot.py"), "--seed", str(seed)), cwd=str(ROOT))


def make_config(tmp_path: Path, *, move_ms: int = 3000, init_ms: int = 5000, strikes: int = 0,
                record_messages: bool = False, **limits: Any) -> RefereeConfig:
    log_dir = tmp_path / "logs"
    log_dir.mkdir(exist_ok=True)
    return RefereeConfig(time=TimeControls(init_ms=init_ms, move_ms=move_ms, bank_ms=0),
                         limits=dataclasses.replace(ResourceLimits(), **limits),
                         strikes=strikes, log_dir=str(log_dir), record_messages=record_messages)


def check_violation(v: dict[str, Any], record: GameRecord, game: Game, *, seat: int, bot: str, kind: str) -> None:
    """A violation dict has every field the contract names, with the right values and types."""
    missing = [f for f in VIOLATION_FIELDS if f not in v]
    assert not missing, f"violation lacks {missing}: {v}"
    assert v["kind"] == kind, f"expected kind {kind!r}, got {v['kind']!r} ({v['detail']})"
    assert v["game_id"] == record.game_id and v["seed"] == record.seed
    assert v["seat"] == seat and v["bot"] == bot
    assert isinstance(v["detail"], str) and v["detail"] and "\n" not in v["detail"], v["detail"]
    assert isinstance(v["request"], str) and isinstance(v["received"], str) and isinstance(v["stderr_tail"], str)
    assert len(v["received"]) <= 4096, "what the bot sent must be truncated"
    assert len(v["stderr_tail"]) <= 1 << 20, "the stderr tail must be a tail"
    assert isinstance(v["snapshot"], dict)
    game.state_from_json(v["snapshot"])  # enough to reproduce the decision
    json.dumps(v)  # a violation is a JSON-able log line


# --------------------------------------------------------------------------- misbehaving bots

#: Deadline of the tests that expect a timeout: short, yet long enough for a well-behaved bot on a busy machine.
HANG_MS = 500

#: mode, extra args, expected kind, config overrides (move_ms is 3000 unless given: only the
#: timeout cases wait for it, and a long deadline keeps a busy machine from causing a stray timeout)
CASES = [
    ("hang", (), "timeout", {"move_ms": HANG_MS}),
    ("garbage", (), "malformed", {}),
    ("shape", (), "malformed", {}),
    ("illegal", (), "illegal", {}),
    ("badindex", (), "illegal", {}),
    ("bigline", (), "oversize", {}),
    ("longline", (), "oversize", {}),
    ("notobject", (), "malformed", {}),
    ("exit", (), "crash", {}),
    ("closeout", (), "crash", {}),
    ("fork", (), "crash", {}),
    ("forksetsid", (), "crash", {}),
    ("escape", (), "crash", {}),
    ("daemon", (), "crash", {}),
    ("deep", (), "malformed", {}),
    ("badutf8", (), "malformed", {}),
    ("wrongid", (), "protocol", {}),
    ("early", (), "protocol", {}),
    ("noready", (), "protocol", {}),
    ("mute", (), "timeout", {"init_ms": 1500}),
    # touching 128 MiB of pages takes a while on a busy machine: a generous deadline keeps it a crash
    ("memory", (), "crash", {"memory_mb": 128, "move_ms": 5000}),
]


#: How bot processes are isolated: "plain" (process group + /proc scan, the default) or "pidns"
#: (``pid_namespace``: each bot is PID 1 of its own PID namespace; needs root, as in CI).
ISOLATIONS = {"plain": {}, "pidns": {"pid_namespace": True}}
def _misbehaviour_params():
    for mode, args, kind, limits in CASES:
        # a case that expects a timeout has a short deadline the well-behaved bot beside it must
        # meet: it runs alone under xdist (tests/conftest.py); the others' deadlines are 3-5 s
        marks = (pytest.mark.serial,) if kind == "timeout" else ()
        for isolation in ISOLATIONS:
            yield pytest.param(mode, args, kind, limits, isolation, id=f"{mode}-{isolation}", marks=marks)


@pytest.mark.parametrize("mode,args,kind,limits,isolation", list(_misbehaviour_params()))
def test_misbehaving_bot_gets_the_right_violation_and_forfeits(tmp_path, mode, args, kind, limits, isolation):
    offender_seat = 1
    bad = Bot(tmp_path, mode, *args)
    seats = [random_bot(seed=7), bad.spec]
    config = make_config(tmp_path, **{"move_ms": 3000, **limits, **ISOLATIONS[isolation]})
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 11, "g-e2e-1", seats, pool, config)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            # the processes that misbehaved are gone as soon as the game is over, pool still open
            assert bad.misbehaving_pids(), "the bot never misbehaved: the test proves nothing"
            survivors = wait_until_gone(bad.misbehaving_pids(), bad.marker)
            assert not survivors, f"{mode}: processes {survivors} survived the game"
        assert not wait_until_gone(bad.pids(), bad.marker), f"{mode}: processes survived pool.close()"
        assert not pids_with_marker(bad.marker)
    finally:
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        kill_leftovers(bad.marker)
    rss_growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) * 1024

    ours = [v for v in record.violations if v["seat"] == offender_seat]
    assert ours, f"{mode}: no violation recorded ({record.violations})"
    check_violation(ours[0], record, RACE, seat=offender_seat, bot=bad.spec.name, kind=kind)
    assert all(v["seat"] == offender_seat for v in record.violations), record.violations
    # the game completed: the fallback played the offender's seat to the end
    assert record.ended_by == "rules"
    assert sum(record.scores) >= 40
    assert record.forfeits == [offender_seat]
    other = 1 - offender_seat
    assert record.ranking[offender_seat] > record.ranking[other], record.ranking
    # the violation is in the log too, as a line of type "violation"
    logged = [e for e in record.log if e.get("type") == "violation"]
    assert [e["kind"] for e in logged][:1] == [kind]
    json.dumps(record.log)
    # the referee never held the bot's flood in memory
    assert peak < MEMORY_BOUND_BYTES, f"referee traced peak {peak / 2**20:.1f} MiB"
    assert rss_growth < 2 * MEMORY_BOUND_BYTES, f"referee RSS grew by {rss_growth / 2**20:.1f} MiB"


def test_violation_request_is_the_exact_line_sent_and_received_is_what_came_back(tmp_path):
    bad = Bot(tmp_path, "illegal")
    config = make_config(tmp_path, move_ms=1000)
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 5, "g-exact", [bad.spec, random_bot()], pool, config)
    finally:
        kill_leftovers(bad.marker)
    v = record.violations[0]
    request = json.loads(v["request"])
    assert request["type"] == "request" and request["seat"] == 0
    assert request["actions"] == [{"type": "add", "n": n} for n in (1, 2, 3)]
    assert "no-such-action" in v["received"]
    # the snapshot is the state before the decision: its legal actions are the ones offered
    before = RACE.state_from_json(v["snapshot"])
    assert before.current_player == 0 and before.legal_actions() == request["actions"]
    assert before.observation(0) == request["observation"]


def test_stderr_flood_is_capped_and_neither_deadlocks_nor_grows_memory(tmp_path):
    """50 MB on stderr: the game goes on, the per-bot log stays capped, the referee stays small."""
    bad = Bot(tmp_path, "stderr")
    cap = 256 << 10
    config = make_config(tmp_path, move_ms=20_000, stderr_bytes=cap)
    tracemalloc.start()
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 3, "g-flood", [random_bot(), bad.spec], pool, config)
            _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert not wait_until_gone(bad.pids(), bad.marker)
    finally:
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        kill_leftovers(bad.marker)
    assert bad.pids("bad"), "the bot never flooded"
    assert record.ended_by == "rules"
    logs = [p for p in (tmp_path / "logs").rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in logs)
    assert total <= cap + (64 << 10), f"stderr logs hold {total} bytes, cap {cap}"
    assert peak < MEMORY_BOUND_BYTES, f"referee traced peak {peak / 2**20:.1f} MiB"
    # flooding stderr is not itself a violation: the bot answered every request in time
    assert record.violations == [] and record.forfeits == []


def test_stderr_tail_is_in_the_violation(tmp_path):
    """A crashing Python bot prints a traceback: its tail reaches the violation record."""
    bad = Bot(tmp_path, "memory")
    config = make_config(tmp_path, move_ms=5000, memory_mb=128)
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 3, "g-tail", [random_bot(), bad.spec], pool, config)
    finally:
        kill_leftovers(bad.marker)
    v = record.violations[0]
    assert v["kind"] == "crash"
    assert "MemoryError" in v["stderr_tail"], v["stderr_tail"][-500:]


# --------------------------------------------------------------------------- policies


def test_strikes_give_the_fallback_move_and_the_game_goes_on(tmp_path):
    bad = Bot(tmp_path, "illegal", "--at", "2", "--times", "2")
    config = make_config(tmp_path, strikes=2)
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 9, "g-strikes", [random_bot(), bad.spec], pool, config)
            # a struck bot is not killed: the same process plays on
            assert len(bad.pids("start")) == 1
            assert alive(bad.pids("start"), bad.marker) == bad.pids("start")
    finally:
        kill_leftovers(bad.marker)
    assert [v["kind"] for v in record.violations] == ["illegal", "illegal"]
    assert [v["seat"] for v in record.violations] == [1, 1]
    assert record.violations[0]["decision"] < record.violations[1]["decision"]
    assert record.forfeits == []
    assert record.ended_by == "rules" and sum(record.scores) >= 40
    # ranked by the rules, not forced last
    assert record.ranking == ranking_from_keys(record.scores)


def test_one_violation_past_the_strikes_forfeits(tmp_path):
    bad = Bot(tmp_path, "illegal", "--at", "2", "--times", "3")
    config = make_config(tmp_path, strikes=2)
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 9, "g-strikes-out", [random_bot(), bad.spec], pool, config)
    finally:
        kill_leftovers(bad.marker)
    assert [v["kind"] for v in record.violations] == ["illegal"] * 3
    assert record.forfeits == [1]
    assert record.ranking[1] > record.ranking[0]


@pytest.mark.serial  # move_ms HANG_MS, which the good bot must meet: alone under xdist
def test_forfeited_bot_is_restarted_for_its_next_game_and_good_bots_persist(tmp_path):
    bad = Bot(tmp_path, "hang")
    good = Bot(tmp_path, "ok")
    config = make_config(tmp_path, move_ms=HANG_MS)
    try:
        with BotPool(config) as pool:
            records = [play_game(RACE, {"target": 30}, seed, f"g-restart-{seed}", [good.spec, bad.spec], pool, config)
                       for seed in (1, 2)]
            # the hung process of game 1 was killed; game 2 got a fresh one, which hung too and was killed
            starts = bad.pids("start")
            assert len(starts) == 2 and starts[0] != starts[1]
            assert not wait_until_gone(bad.pids(), bad.marker)
            # the well-behaved bot kept one process for both games, alive until the pool closes
            assert len(good.pids("start")) == 1
            assert alive(good.pids("start"), good.marker) == good.pids("start")
        assert not wait_until_gone(good.pids(), good.marker)
    finally:
        kill_leftovers(bad.marker)
        kill_leftovers(good.marker)
    for record in records:
        assert [v["kind"] for v in record.violations] == ["timeout"]
        assert record.forfeits == [1] and record.ranking[1] > record.ranking[0]


def test_pool_close_kills_a_setsid_grandchild_of_a_well_behaved_bot(tmp_path):
    bot = Bot(tmp_path, "forkplay")
    config = make_config(tmp_path)
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 30}, 4, "g-forkplay", [random_bot(), bot.spec], pool, config)
            assert bot.pids("grandchild"), "no grandchild was forked"
        assert record.violations == []
        survivors = wait_until_gone(bot.pids(), bot.marker)
        assert not survivors, f"pool.close() left {survivors} alive"
    finally:
        kill_leftovers(bot.marker)


@pytest.mark.serial  # move_ms HANG_MS, which the good bot must meet: alone under xdist
def test_a_timeout_within_the_strikes_kills_and_restarts_the_bot_mid_game(tmp_path):
    """A struck bot whose process had to be killed (timeout) gets a fresh process and plays on."""
    bad = Bot(tmp_path, "hang", "--once")
    config = make_config(tmp_path, move_ms=HANG_MS, strikes=1)
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 9, "g-strike-restart", [random_bot(), bad.spec], pool, config)
            starts = bad.pids("start")
            assert len(starts) == 2, f"expected one restart mid-game, got processes {starts}"
            assert not wait_until_gone(bad.pids("bad"), bad.marker), "the hung process survived"
    finally:
        kill_leftovers(bad.marker)
    assert [v["kind"] for v in record.violations] == ["timeout"]
    assert record.forfeits == [] and record.ended_by == "rules"
    assert record.ranking == ranking_from_keys(record.scores)
    # the fresh process answered the requests after the restart: only one decision was the fallback's
    assert record.requests >= 8


@pytest.mark.serial  # move_ms 300 and a bank: alone under xdist
@pytest.mark.parametrize("bank_ms,kinds", [(3000, []), (0, ["timeout"])])
def test_the_time_bank_covers_a_slow_move(tmp_path, bank_ms, kinds):
    """One 800 ms move under move_ms=300: fine with a 3 s bank, a timeout without one."""
    slow = Bot(tmp_path, "slow", "--delay-ms", "800")
    config = make_config(tmp_path, move_ms=300, record_messages=True)
    config = dataclasses.replace(config, time=TimeControls(init_ms=5000, move_ms=300, bank_ms=bank_ms))
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 30}, 6, "g-bank", [random_bot(), slow.spec], pool, config)
    finally:
        kill_leftovers(slow.marker)
    assert slow.pids("bad"), "the bot never made its slow move"
    assert [v["kind"] for v in record.violations] == kinds
    # the first request told the bot how much time it had: the move plus the full bank
    first = next(e["msg"] for e in record.log if e["type"] == "send" and e["msg"]["type"] == "request"
                 and e["seat"] == 1)
    assert first["time_left_ms"] == 300 + bank_ms
    assert record.forfeits == ([1] if kinds else [])


def test_a_bot_that_cannot_be_started_is_a_crash_and_the_game_completes(tmp_path):
    missing = BotSpec(name="missing", command=(str(tmp_path / "no-such-bot"),), cwd=str(tmp_path))
    config = make_config(tmp_path)
    with BotPool(config) as pool:
        record = play_game(RACE, {"target": 30}, 1, "g-missing", [missing, random_bot()], pool, config)
    v = record.violations[0]
    check_violation(v, record, RACE, seat=0, bot="missing", kind="crash")
    assert "no-such-bot" in v["detail"]
    assert record.forfeits == [0] and record.ranking == [1, 0] and record.ended_by == "rules"


def test_both_seats_misbehaving_tie_last_and_the_game_still_ends(tmp_path):
    a, b = Bot(tmp_path, "garbage"), Bot(tmp_path, "exit", "--at", "3")
    config = make_config(tmp_path, move_ms=3000)
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 2, "g-both", [a.spec, b.spec, random_bot()], pool, config)
    finally:
        kill_leftovers(a.marker)
        kill_leftovers(b.marker)
    assert sorted(v["kind"] for v in record.violations) == ["crash", "malformed"]
    assert sorted(record.forfeits) == [0, 1]
    assert record.ranking[0] == record.ranking[1] > record.ranking[2]
    assert record.ended_by == "rules"


# --------------------------------------------------------------------------- reference bots

def _engine_available(name: str) -> bool:
    try:
        get_game(name)
    except ImportError:
        return False
    return True


def reference_bots(game_name: str) -> list[BotSpec]:
    bots = [random_bot(seed=3, name="random-py"),
            BotSpec(name="random-js", command=("node", str(BOTS / "random_bot.js"), "--seed", "4"), cwd=str(ROOT))]
    greedy = BOTS / f"{game_name}_greedy.py"
    bots.append(BotSpec(name=f"{game_name}-greedy", command=("python3", str(greedy)), cwd=str(ROOT)))
    greedy_js = BOTS / f"{game_name}_greedy.js"
    if game_name == "crisps" or greedy_js.exists():
        bots.append(BotSpec(name=f"{game_name}-greedy-js", command=("node", str(greedy_js)), cwd=str(ROOT)))
    return bots


@pytest.mark.parametrize("game_name", list(GAMES))
def test_reference_bots_play_every_game_without_violation(tmp_path, game_name):
    game = get_game(game_name)
    bots = reference_bots(game_name)
    config = make_config(tmp_path)
    records = []
    with BotPool(config) as pool:
        for players in sorted({game.min_players, game.max_players}):
            for i in range(len(bots)):  # every bot in every seat position once
                seats = [bots[(i + k) % len(bots)] for k in range(players)]
                records.append(play_game(game, {}, 100 + i, f"g-ref-{game_name}-{players}-{i}", seats, pool, config))
    for record in records:
        assert record.violations == [], [(v["bot"], v["kind"], v["detail"]) for v in record.violations]
        assert record.forfeits == []
        assert record.ended_by == "rules"
        assert record.decisions > 0 and min(record.ranking) == 0


@pytest.mark.parametrize("game_name", list(GAMES))
def test_each_request_carries_exactly_the_seats_observation_and_the_new_public_events(tmp_path, game_name):
    """Replay the recorded messages through the engine: every request holds the deciding seat's
    own observation (nothing of the others' hidden cards), the legal actions in canonical order,
    and exactly the public events since that seat's previous request; no message holds the seed."""
    game = get_game(game_name)
    players = game.min_players
    bots = [random_bot(seed=s, name=f"random-{s}") for s in range(players)]
    config = make_config(tmp_path, record_messages=True)
    with BotPool(config) as pool:
        record = play_game(game, {}, 4242, "g-replay", bots, pool, config)
    assert record.violations == []
    state = game.new_state(players, 4242, {})
    delivered = [0] * players  # public events each seat has been sent so far
    pending: dict[int, list] = {}
    requests = 0
    for entry in record.log:
        if entry["type"] == "send":
            msg = entry["msg"]
            assert '"seed"' not in json.dumps(msg), f"a bot was sent the seed: {msg}"
            if msg["type"] != "request":
                continue
            seat = msg["seat"]
            assert entry["seat"] == seat == state.current_player
            assert msg["observation"] == state.observation(seat)
            assert msg["actions"] == state.legal_actions()
            assert msg["events"] == state.events[delivered[seat]:]
            delivered[seat] = len(state.events)
            pending[seat] = msg["actions"]
            requests += 1
        elif entry["type"] == "recv" and entry.get("msg", {}).get("type") == "action":
            answer = entry["msg"]
            legal = pending.pop(entry["seat"])
            state.apply(legal[answer["index"]] if "index" in answer else answer["action"])
        elif entry["type"] == "auto":
            state.apply(entry["action"])
    assert requests == record.requests > 0
    assert state.is_terminal()
    assert state.result()["ranking"] == record.ranking and state.result()["scores"] == record.scores


# --------------------------------------------------------------------------- harness play


def test_harness_play_logs_violations_as_json_lines(tmp_path):
    from click.testing import CliRunner

    from harness.cli import cli

    log = tmp_path / "play.jsonl"
    marker = f"tbtest-{uuid.uuid4().hex[:12]}"
    bad = f"python3 {MISBEHAVE} illegal --marker {marker}"
    good = f"python3 {BOTS / 'random_bot.py'} --seed 2"
    try:
        result = CliRunner().invoke(cli, ["play", "crisps", "--bot", good, "--bot", bad, "--seed", "5",
                                          "--games", "2", "--log", str(log)])
    finally:
        kill_leftovers(marker)
    assert result.exit_code == 0, result.output
    assert "illegal" in result.output
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    # every message each way, with timings, and the public events
    sent = [e for e in lines if e.get("type") == "send"]
    received = [e for e in lines if e.get("type") == "recv"]
    assert {e["msg"]["type"] for e in sent} >= {"hello", "start", "request", "result"}
    assert received and all(isinstance(e["ms"], (int, float)) for e in received)
    assert any(e.get("type") == "event" for e in lines)
    violations = [e for e in lines if e.get("type") == "violation"]
    assert [v["kind"] for v in violations] == ["illegal", "illegal"]  # one per game: restarted each time
    assert {v["seat"] for v in violations} == {1}
    assert not pids_with_marker(marker)


def test_harness_command_in_a_sandbox_leaves_no_process_behind(tmp_path):
    """The real console script, as a user runs it: bwrap, a forking bot, two games, then exit."""
    harness = Path(sys.executable).with_name("harness")
    log = tmp_path / "play.jsonl"
    marker = f"tbtest-{uuid.uuid4().hex[:12]}"
    botdir = tmp_path / "forker"
    botdir.mkdir()
    bad = f"python3 {MISBEHAVE} forksetsid --marker {marker}"
    try:
        done = subprocess.run([str(harness), "play", "crisps", "--bot", f"python3 {BOTS / 'random_bot.py'}",
                               "--bot", bad, "--games", "2", "--sandbox", "bwrap", "--log", str(log)],
                              capture_output=True, text=True, timeout=120, cwd=str(botdir))
        survivors = pids_with_marker(marker)
    finally:
        kill_leftovers(marker)
    assert done.returncode == 0, done.stderr
    assert "crash" in done.stdout and "FORFEIT" in done.stdout, done.stdout
    kinds = [e["kind"] for e in map(json.loads, log.read_text().splitlines()) if e.get("type") == "violation"]
    assert kinds == ["crash", "crash"]
    assert not survivors, f"processes {survivors} outlived `harness play`"


def test_bots_die_with_a_killed_harness(tmp_path):
    """SIGKILL to `harness play` mid-game (no cleanup code runs): its bot processes die too,
    even one that hangs and so never reads the end of its stdin."""
    # the bots' pid files: in a directory their unprivileged uid reaches when the tests run as
    # root (`harness play` runs them in its own directory, pytest's are closed to others)
    open_dir = Path(tempfile.mkdtemp(prefix="tbtest-"))
    open_dir.chmod(0o755)
    bots = [Bot(open_dir, "hang", "--at", "1"), Bot(open_dir, "ok")]
    harness = Path(sys.executable).with_name("harness")
    argv = [str(harness), "play", "crisps", "--move-ms", "120000", "--sandbox", "none"]  # the bots write pid files
    for bot in bots:
        argv += ["--bot", " ".join(bot.spec.command)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (bots[0].pids("bad") and bots[1].pids("start")):  # seat 0 hangs on its first request
            assert proc.poll() is None, "harness play ended before the bot hung"
            assert time.monotonic() < deadline, "the bots never got a request"
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        for bot in bots:
            assert not wait_until_gone(bot.pids(), bot.marker), "a bot outlived the harness"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for bot in bots:
            kill_leftovers(bot.marker)
        shutil.rmtree(open_dir, ignore_errors=True)


# --------------------------------------------------------------------------- sandbox


def _probe(tmp_path: Path, sandbox: str | None) -> tuple[GameRecord, dict[str, str], bool, Path]:
    """Run the sandbox probe against a random bot; return the record, the probe's findings,
    whether the listening socket got a connection, and the outside path it tried to write."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.setblocking(False)
    port = server.getsockname()[1]
    outside = tmp_path / "outside" / "escaped.txt"
    outside.parent.mkdir()
    botdir = tmp_path / "probe-home"
    botdir.mkdir()
    botdir.chmod(0o777)  # writable for the unprivileged uid a bot gets when the harness is root
    marker = f"tbtest-{uuid.uuid4().hex[:12]}"
    # what a sandboxed bot must not read: another bot's program, a league store, a file in $HOME
    store = tmp_path / "league.sqlite"
    store.write_bytes(b"SQLite format 3\0 every seat's hands")
    home_secret = Path.home() / f".tablebots-probe-secret-{marker}"
    home_secret.write_text("secret")
    spec = BotSpec(name="probe", command=("python3", str(PROBE), "--port", str(port), "--outside", str(outside),
                                          "--read", f"other_bot={BOTS / 'random_bot.py'}", "--read", f"store={store}",
                                          "--read", f"home={home_secret}", "--marker", marker),
                   cwd=str(botdir), sandbox_dir=str(botdir))
    config = make_config(tmp_path, sandbox=sandbox)
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 20}, 1, "g-probe", [spec, random_bot()], pool, config)
        try:
            server.accept()[0].close()
            connected = True
        except BlockingIOError:
            connected = False
    finally:
        server.close()
        kill_leftovers(marker)
        home_secret.unlink()
    text = "\n".join(p.read_text(errors="replace") for p in (tmp_path / "logs").rglob("*") if p.is_file())
    lines = [line for line in text.splitlines() if line.startswith("PROBE ")]
    assert lines, f"the probe's stderr line is not in the logs under {tmp_path / 'logs'}"
    findings = dict(item.split("=") for item in lines[-1].split()[1:])
    return record, findings, connected, outside


def test_without_sandbox_the_probe_does_reach_the_network_and_disk(tmp_path):
    """The control: proves the probe can see an escape, so the bwrap test below can fail."""
    record, findings, connected, outside = _probe(tmp_path, None)
    if os.geteuid() == 0:  # the bot runs as an unprivileged uid: root's private directories are closed
        assert findings == {"net": "ok", "outside": "blocked", "inside": "ok", "scratch": "ok",
                            "other_bot": "ok", "store": "blocked", "home": "blocked"}
        assert connected and not outside.exists()
    else:
        assert findings == {"net": "ok", "outside": "ok", "inside": "ok", "scratch": "ok",
                            "other_bot": "ok", "store": "ok", "home": "ok"}
        assert connected and outside.exists()
    assert record.violations == []


def test_bwrap_sandbox_keeps_secrets_blocks_network_and_every_write_but_its_scratch(tmp_path):
    """Sandboxed, a bot sees the runtime and its own files read-only and writes only its /tmp: it
    cannot read another bot's program, the league store or a file in $HOME, nor reach the network."""
    assert shutil.which("bwrap"), "bubblewrap is not installed (.ci/run installs it)"
    record, findings, connected, outside = _probe(tmp_path, "bwrap")
    assert findings == {"net": "blocked", "outside": "blocked", "inside": "blocked", "scratch": "ok",
                        "other_bot": "blocked", "store": "blocked", "home": "blocked"}
    assert not connected and not outside.exists()
    assert record.violations == [] and record.ended_by == "rules"


@pytest.mark.serial  # move_ms HANG_MS, which the good bot must meet in its sandbox: alone under xdist
@pytest.mark.parametrize("mode", ["forksetsid", "escape", "daemon", "closeout", "hang"])
def test_bwrap_sandboxed_misbehaving_bot_leaves_no_process(tmp_path, mode):
    """Inside bwrap (own PID namespace, own session) the kill must still reach every process."""
    bad = Bot(tmp_path, mode)
    config = make_config(tmp_path, move_ms=HANG_MS, sandbox="bwrap")
    try:
        with BotPool(config) as pool:
            record = play_game(RACE, {"target": 40}, 3, "g-bwrap-bad", [random_bot(), bad.spec], pool, config)
            # pids in the pid file are the sandbox's own; the marker finds the processes from outside
            assert bad.pids("bad"), "the bot never misbehaved"
            survivors = wait_until_gone(pids_with_marker(bad.marker), bad.marker) if pids_with_marker(bad.marker) else []
            assert not survivors, f"{mode} in bwrap: {survivors} survived the game"
        assert not wait_until_gone(pids_with_marker(bad.marker), bad.marker)
    finally:
        kill_leftovers(bad.marker)
    assert [v["kind"] for v in record.violations] == ["timeout" if mode == "hang" else "crash"]
    assert record.forfeits == [1]


def _path_without_bwrap(tmp_path: Path) -> str:
    nobwrap = tmp_path / "bin"
    nobwrap.mkdir()
    for tool in ("python3", "node"):
        if shutil.which(tool):
            (nobwrap / tool).symlink_to(shutil.which(tool))
    return str(nobwrap)


def test_asking_for_bwrap_without_it_is_a_clear_error_before_any_game(tmp_path, monkeypatch):
    from harness.play.limits import SandboxUnavailable

    bot = Bot(tmp_path, "ok")
    monkeypatch.setenv("PATH", _path_without_bwrap(tmp_path))
    assert shutil.which("bwrap") is None
    config = make_config(tmp_path, sandbox="bwrap")
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
        with BotPool(config) as pool:
            play_game(RACE, {}, 1, "g-nobwrap", [bot.spec, random_bot()], pool, config)
    assert bot.pids() == [], "a bot process was started although the sandbox is unavailable"


def test_harness_play_without_bwrap_fails_naming_the_flag_before_any_game(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from harness.cli import cli

    bot = Bot(tmp_path, "ok")
    monkeypatch.setenv("PATH", _path_without_bwrap(tmp_path))
    command = " ".join(bot.spec.command)
    result = CliRunner().invoke(cli, ["play", "crisps", "--sandbox", "bwrap", "--bot", command, "--bot", command])
    assert result.exit_code == 2, result.output
    assert "--sandbox" in result.output and "bubblewrap" in result.output
    assert "Traceback" not in result.output
    assert bot.pids() == [], "a bot process was started although the sandbox is unavailable"


def test_python_and_node_reference_bots_play_sandboxed_through_the_cli(tmp_path):
    """The sandbox shows each bot the runtime it needs: the reference bots in Python and
    JavaScript play whole games under bwrap without a violation."""
    from click.testing import CliRunner

    from harness.cli import cli

    assert shutil.which("node"), "node is needed for the JavaScript reference bot"
    result = CliRunner().invoke(cli, ["play", "crisps", "--sandbox", "bwrap", "--games", "2",
                                      "--bot", f"python3 {BOTS / 'crisps_greedy.py'}",
                                      "--bot", f"node {BOTS / 'random_bot.js'}"])
    assert result.exit_code == 0, result.output
    assert "violation" not in result.output.lower().replace("no violations", ""), result.output
    assert result.output.count("ended by rules") == 2, result.output
