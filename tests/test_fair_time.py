"""A bot's time: the wall time of its turn minus the time it was kept from running (cpuclock).

Real leagues of real bots (tests/bots/attacker.py), as root with cgroups (the CPU clock):
- before, a bot that slept 2.5 x time_left_ms each move got no violation and its bank never
  shrank (its CPU time was all it was charged; the wall-clock cap was 3x);
- the time a bot was kept from running is a lower bound (per-thread waits do not add up to more
  than the tree waited), exact for one thread, over random schedules;
- a bot that uses half its time, by computing or by sleeping, on a loaded host is never charged
  for the load;
- the sandbox's own processes (bwrap and its init) are all that is left out of the freezer: a
  bot whose spinning children are orphaned to that init gets no CPU between its turns.
"""

from __future__ import annotations

import dataclasses
import os
import random
import tempfile
import time
from pathlib import Path

import pytest
from cgroup_probe import needs_cpu_clock
from kit import busy

from harness.games import get_game
from harness.league.config import load_config
from harness.league.runner import run_league
from harness.league.store import LeagueStore
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import RefereeConfig, play_game
from harness.play.sandbox import bwrap_problem

REPO = Path(__file__).resolve().parent.parent
ATTACKER = REPO / "tests" / "bots" / "attacker.py"
RANDOM = REPO / "bots" / "random_bot.py"
COLLUDER = REPO / "tests" / "bots" / "colluder.py"
GREEDY = REPO / "bots" / "dominoes_greedy.py"




def _league(tmp_path: Path, bot: str, move_ms: int, bank_ms: int = 0, workers: int = 1, rounds: int = 1) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(f"""name: t
game: crisps
rounds: {rounds}
workers: {workers}
store: {tmp_path / 't.sqlite'}
options: {{max_turns: 16}}
time: {{move_ms: {move_ms}, bank_ms: {bank_ms}}}
limits: {{sandbox: none}}
bots:
  - {{name: random, command: python3 {RANDOM}}}
  - {{name: bot, command: [python3, {ATTACKER}, {bot}]}}
""")
    return path


def _violations(path: Path) -> list[dict]:
    with LeagueStore(load_config(path).store) as store:
        return [v._asdict() for v in store.violations()]


@pytest.fixture
def busy_host():
    """8 processes spinning beside the league: a host loaded 4 times over (2 cores)."""
    with busy(8, 120.0, start="fork"):
        yield


@needs_cpu_clock
def test_a_bot_that_sleeps_two_and_a_half_times_its_time_is_out_of_time(tmp_path):
    path = _league(tmp_path, "sleep, --ms, '500'", move_ms=200)  # 2.5 x time_left_ms
    assert not run_league(load_config(path), progress=False).errors
    found = _violations(path)
    mine = [v for v in found if v["name"] == "bot"]
    assert mine and all(v["kind"] == "timeout" for v in mine), found  # each game forfeited at its first move
    assert all("not counting the time it was kept from running" in v["detail"] for v in mine), mine
    assert not [v for v in found if v["name"] == "random"]


@needs_cpu_clock
def test_the_bank_pays_for_sleep(tmp_path):
    """Sleeping 250 ms a move at move_ms 100 draws 150 ms a move from a bank of 400: the bank is
    gone at its third move, and the next sleep is out of time."""
    path = _league(tmp_path, "sleep, --ms, '250'", move_ms=100, bank_ms=400)
    assert not run_league(load_config(path), progress=False).errors
    mine = [v for v in _violations(path) if v["name"] == "bot"]
    assert mine and mine[0]["kind"] == "timeout", mine
    assert "bank left" in mine[0]["detail"]


def _timeline(rng: random.Random, threads: int, cores: int, steps: int):
    """Per-thread (run, wait), the tree's CPU time and the true time it was kept from running
    (no thread on a CPU, one waiting for it), of a random schedule: each step every thread
    sleeps or wants a CPU, the host holds some cores, the rest go to the bot's threads."""
    run = [0] * threads
    wait = [0] * threads
    kept = 0
    for _ in range(steps):
        wanting = [t for t in range(threads) if rng.random() < 0.7]
        free = max(0, cores - rng.randrange(cores + 2))
        running = set(rng.sample(wanting, min(free, len(wanting))))
        for t in wanting:
            if t in running:
                run[t] += 1
            else:
                wait[t] += 1
        kept += bool(wanting) and not running
    return list(zip(run, wait)), sum(run), kept


def test_the_kept_time_is_a_lower_bound_exact_for_one_thread():
    from harness.play.cpuclock import kept_bound

    rng = random.Random(7)
    for _ in range(3000):
        threads, cores = rng.randrange(1, 6), rng.randrange(1, 5)
        per_thread, cpu, kept = _timeline(rng, threads, cores, rng.randrange(1, 60))
        seen = per_thread if threads == 1 else rng.sample(per_thread, rng.randrange(1, threads + 1))  # some exited
        bound = kept_bound(seen, cpu)
        assert bound <= kept, (per_thread, cpu, kept, bound)
        if threads == 1:
            assert bound == kept
    # 4 threads spinning on 2 cores: each waits half the time, and the tree always runs
    assert kept_bound([(50, 50)] * 4, 200) == 0
    # frozen helpers (a sandbox's init, woken by the thaw) do not hide a lone thinker's wait
    assert kept_bound([(50, 200), (0, 0), (0, 0)], 50) == 200


@needs_cpu_clock
@pytest.mark.parametrize("bot", ["think, --cpu-ms, '50'", "sleep, --ms, '50'"])
def test_a_bot_using_half_its_time_on_a_loaded_host_is_never_charged_for_the_load(tmp_path, busy_host, bot):
    path = _league(tmp_path, bot, move_ms=100, workers=2, rounds=3)
    summary = run_league(load_config(path), progress=False)
    assert not summary.errors and summary.played == 6
    assert [v for v in _violations(path) if v["name"] == "bot"] == []


def test_a_quick_turn_is_charged_its_cpu_time_and_the_run_delays_are_read_once_a_ms_of_thawed_time():
    """While a bot has been thawed under QUICK_S in all since its run delays were read, an
    answered turn is charged its CPU time (kept: wall less CPU) and nothing is read; past it the
    reading is made, becomes the next mark and starts the count again; a failed turn always reads
    (no mark: the bot is stopped)."""
    from harness.play.botproc import BotProcess, StderrLog
    from harness.play.cpuclock import QUICK_S, Clock

    class Delay:
        def __init__(self) -> None:
            self.reads: list[bool] = []

        def kept_ns(self, cpu_ns: float, remark: bool = False, at: float | None = None) -> float:
            self.reads.append(remark)
            return 250_000.0

    proc = BotProcess(BotSpec("q", ("true",)), ResourceLimits(), StderrLog(None, "q", 1000))
    delay = Delay()
    quick = Clock(cpu_ms=0.1, wall_ms=0.4)
    proc._unread_s = QUICK_S * 0.6
    quick.kept_ms = proc._kept_ms(delay, quick, 100_000, True, 0)  # type: ignore[arg-type]
    assert delay.reads == [] and quick.charged_ms == quick.cpu_ms == 0.1
    proc._unread_s = QUICK_S * 1.2
    slow = Clock(cpu_ms=0.1, wall_ms=0.7)
    slow.kept_ms = proc._kept_ms(delay, slow, 100_000, True, 50_000)  # type: ignore[arg-type]
    assert delay.reads == [True] and slow.kept_ms == 0.3 and proc._unread_s == 0.0
    proc._unread_s = QUICK_S * 0.5
    proc._kept_ms(delay, quick, 100_000, False, 0)  # type: ignore[arg-type]
    assert delay.reads == [True, False] and proc._unread_s == QUICK_S * 0.5


@needs_cpu_clock
def test_a_bot_sleeping_2_ms_a_turn_has_its_run_delays_read_at_every_turn_and_a_quick_bot_no_more_than_its_wall_time(
        monkeypatch):
    """A turn over 1 ms of thawed time reads the run delays (and marks the next turn): the
    sleeper's 2 ms of sleep is charged by the same rule as before at every turn. The random
    bot's quick turns are charged their CPU time: never more than the larger of their CPU and
    wall times."""
    from harness.play.cpuclock import RunDelay

    reads: list[tuple[str, bool]] = []
    kept_ns = RunDelay.kept_ns

    def spy(self, cpu_ns, remark=False, at=None):
        reads.append((self.tasks_file, remark))
        return kept_ns(self, cpu_ns, remark, at)

    monkeypatch.setattr(RunDelay, "kept_ns", spy)
    config = RefereeConfig(time=TimeControls(move_ms=1000), limits=ResourceLimits(sandbox=None), record_messages=True)
    bots = [BotSpec(name="sleeper", command=("python3", str(ATTACKER), "sleep", "--ms", "2")),
            BotSpec(name="random", command=("python3", str(RANDOM), "--seed", "1"))]
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 16}, 3, "g-quick", bots, pool, config)
        [sleeper_file] = [p._run_delay.tasks_file for p in pool.processes() if p.spec.name == "sleeper"]
    assert not record.violations, record.violations
    answers = [e for e in record.log if e["type"] == "recv" and "charged_ms" in e]
    sleeper = [e for e in answers if e["seat"] == 0]
    quick = [e for e in answers if e["seat"] == 1]
    assert sleeper and quick
    assert reads.count((sleeper_file, True)) == len(sleeper), (reads, len(sleeper))
    assert all(e["cpu_ms"] <= e["charged_ms"] <= max(e["ms"], e["cpu_ms"]) + 0.001 for e in quick), quick


def test_jitter_delays_each_request_by_a_fresh_draw_up_to_jitter_ms(tmp_path, monkeypatch):
    """time.jitter_ms: each request waits 0..jitter_ms before it is sent, drawn from the system's
    entropy (never the game's seed); the bot is frozen meanwhile, so it is never charged."""
    from harness.games import get_game
    from harness.play import referee
    from harness.play.limits import BotSpec, ResourceLimits, TimeControls
    from harness.play.pool import BotPool

    draws: list[float] = []

    class Recording:
        def uniform(self, low: float, high: float) -> float:
            draws.append(referee.random.SystemRandom().uniform(low, high))
            return draws[-1]

    monkeypatch.setattr(referee, "_JITTER", Recording())
    bots = [BotSpec(name=f"r{i}", command=("python3", str(RANDOM), "--seed", str(i))) for i in range(2)]
    for jitter in (0, 20):
        draws.clear()
        config = referee.RefereeConfig(time=TimeControls(jitter_ms=jitter), limits=ResourceLimits(sandbox=None),
                                       record_messages=True)
        with BotPool(config) as pool:
            record = referee.play_game(get_game("crisps"), {"max_turns": 12}, 5, "g-j", bots, pool, config)
        requests = [e for e in record.log if e.get("type") == "send" and e["msg"]["type"] == "request"]
        assert not record.violations and requests
        if jitter:
            assert len(draws) == len(requests) and all(0 <= d <= 20 for d in draws) and len(set(draws)) > 1
        else:
            assert draws == []


def test_a_bad_jitter_is_one_line_naming_the_key(tmp_path):
    from harness.league.config import ConfigError
    path = _league(tmp_path, "plain", move_ms=100)
    path.write_text(path.read_text().replace("bank_ms: 0}", "bank_ms: 0, jitter_ms: -5}"))
    with pytest.raises(ConfigError, match=r"time\.jitter_ms: -5 is not allowed") as err:
        load_config(path)
    assert "\n" not in str(err.value)


def _procs(path: str) -> set[int]:
    with open(os.path.join(path, "cgroup.procs")) as fh:
        return {int(p) for p in fh.read().split()}


@needs_cpu_clock
@pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap unusable: {bwrap_problem()}")
def test_only_the_sandboxs_own_processes_escape_the_freezer_and_orphans_of_the_bot_stay_frozen(tmp_path):
    """bwrap and the init it forks in the bot's PID namespace are moved out of the freezer (waking
    them at every freeze and thaw cost the referee a third of the CPU clock's price). The bot's
    children, orphaned and adopted by that init, spin forever: they are still the bot's, frozen
    between its turns, so its tree uses no CPU while it waits for its next request."""
    config = RefereeConfig(time=TimeControls(move_ms=3000),
                           limits=dataclasses.replace(ResourceLimits(), sandbox="bwrap"))
    attacker = BotSpec(name="attacker-orphans", command=("python3", str(ATTACKER), "orphans", "--children", "2"),
                       cwd=str(tmp_path))
    rand = BotSpec(name="random", command=("python3", str(RANDOM), "--seed", "1"), cwd=str(REPO))
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 8}, 1, "g-orphans", [attacker, rand], pool, config)
        assert record.violations == [] and record.requests > 2
        [proc] = [p for p in pool.processes() if p.spec == attacker]
        group = proc._cgroup
        assert group is not None and proc.cpu_clock
        every, frozen = _procs(group.paths["pids"]), _procs(group.paths["freezer"])
        unfrozen = every - frozen
        bwrap = os.stat(f"/proc/{proc.pid}/exe")
        assert proc.pid in unfrozen and len(unfrozen) == 2, (every, frozen)
        for pid in unfrozen:  # bwrap as started and its init: nothing of the bot
            got = os.stat(f"/proc/{pid}/exe")
            assert (got.st_dev, got.st_ino) == (bwrap.st_dev, bwrap.st_ino)
        assert len(frozen) >= 3  # the bot and its two orphans
        before = group.cpu_ns() or 0
        time.sleep(0.3)
        assert (group.cpu_ns() or 0) - before < 5_000_000  # two spinners would have used ~300-600 ms
        with open(os.path.join(group.paths["freezer"], "freezer.state")) as fh:
            assert fh.read().strip() == "FROZEN"  # (FREEZING for a moment after the freeze)


def test_the_referees_own_wait_is_read_from_its_own_thread_in_a_forked_child_too():
    """own_wait_ns keeps its thread's schedstat open; a forked child (a league worker) must not
    read its parent's thread through the inherited file."""
    from harness.play import cpuclock

    cpuclock.own_wait_ns()
    parent_file = os.readlink(f"/proc/self/fd/{cpuclock._own.fd}")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        cpuclock.own_wait_ns()
        os.write(write, os.readlink(f"/proc/self/fd/{cpuclock._own.fd}").encode())
        os._exit(0)
    os.close(write)
    child_file = os.read(read, 4096).decode()
    os.waitpid(pid, 0)
    assert f"/{os.getpid()}/" in parent_file and f"/{pid}/" in child_file, (parent_file, child_file)



def _handshakes(where: Path, jitter: int, games: int) -> list[bool]:
    """A timing-channel pair (tests/bots/colluder.py: each sleeps 80 ms x its seat + 1 once, the
    other reads the seat from its gaps) and a greedy third seat at 3-seat Dominoes, seats
    rotating; whether each colluder read its partner's seat right, game by game."""
    from harness.games import get_game
    from harness.play.limits import BotSpec, ResourceLimits, TimeControls
    from harness.play.pool import BotPool
    from harness.play.referee import RefereeConfig, play_game

    log = where / f"read-{jitter}.txt"
    log.touch()
    log.chmod(0o666)  # (as root, the bots run as an unprivileged uid of their own)
    specs = {"greedy": BotSpec(name="greedy", command=("python3", str(GREEDY))),
             "take": BotSpec(name="take", command=("python3", str(COLLUDER), "--mode", "take", "--log", str(log))),
             "feed": BotSpec(name="feed", command=("python3", str(COLLUDER), "--mode", "feed", "--log", str(log)))}
    config = RefereeConfig(time=TimeControls(move_ms=2000, jitter_ms=jitter), limits=ResourceLimits(sandbox=None))
    orders = {}
    with BotPool(config) as pool:
        for g in range(games):
            order = orders[f"g-{g}"] = [["greedy", "take", "feed"], ["take", "feed", "greedy"], ["feed", "greedy", "take"]][g % 3]
            record = play_game(get_game("dominoes"), {"max_turns": 15}, g + 1, f"g-{g}", [specs[n] for n in order], pool, config)
            assert not record.violations
    right = []  # (the pool's bye came after every result: each read is in the log)
    for line in log.read_text().splitlines():
        game_id, seat, partner, _ = line.split()
        order = orders[game_id]
        right.append(partner == str(order.index({"take": "feed", "feed": "take"}[order[int(seat)]])))
    return right


def test_a_timing_channel_pair_finds_its_partner_and_jitter_ms_blinds_it(tmp_path):
    """The attack: two bots recognise each other through the time they take (a sleep costs only
    their own time). Without jitter they read each other's seat; with time.jitter_ms they cannot."""
    with tempfile.TemporaryDirectory(dir="/tmp") as where:  # (pytest's tmp_path is root's alone)
        Path(where).chmod(0o777)
        plain = _handshakes(Path(where), 0, 6)
        jittered = _handshakes(Path(where), 400, 6)
    print(f"partner read right: {sum(plain)} of {len(plain)} without jitter, {sum(jittered)} of {len(jittered)} at 400 ms")
    assert len(plain) == len(jittered) == 12
    assert sum(plain) >= 8, plain  # the channel works: most games' partners found
    assert sum(jittered) <= 3, jittered  # 400 ms of jitter a request drowns an 80 ms symbol
