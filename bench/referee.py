"""Referee overhead: cost per decision of refereed games vs the bare exchange with the same bots.

Both sides run in one process pinned to one core (bots inherit the affinity), with the same
persistent bot processes (bots/random_bot.py or the game's greedy bot, one process per seat):

- referee: games played through ``harness.play.referee.play_game`` (engine, encoding, legality,
  deadlines, everything), divided by the number of requests sent to bots;
- floor: the same processes fed the request lines of those games, already encoded, by a bare
  loop that only writes a line and reads the answer (no engine, no encoding, no checks).

For each, two measures per decision: wall-clock time, and on-CPU time of the referee and its
bots (from /proc/PID/schedstat), which other processes on the machine do not inflate. The
ratio referee/floor is printed for both (target <= 1.5), with the referee's own CPU split into
the in-process engine cost (legal_actions, observation, apply, forced moves included, measured
separately) and the rest. Rounds alternate referee and floor; medians are reported.

Each game is measured with two settings side by side: ``bare`` (no sandbox, wall-clock
deadlines, bots never frozen) and ``league`` (what a league runs by default: the bwrap sandbox
where it works, and the CPU clock: each bot thawed, timed in CPU time and frozen again around
every decision). The floor thaws the bots once before its round (it is the bare exchange with
the same processes, in the same sandbox). Processes are reused across the deals of a round
(``process_per_deal`` off): this measures decisions; bench/fairplay.py measures starts.

Then the CPU clock's own cost: the referee's CPU per decision with the clock on minus off, side
by side with the referee's CPU time in its system calls (a thaw, one CPU reading and a freeze of
a live bot's cgroups; and those with the run-delay readings a turn also makes), both in a tight
loop and timed as they run in one more round of games (where the caches are cold and they cost
about three times as much): target <= 2x. Settings ``sandbox`` and ``clock`` measure each alone.

With ``--compare REF`` (a git ref of this repository, or a directory holding a ``harness``
package), every row is measured twice in one run, side by side: ``old`` (the harness of REF)
and ``new`` (this tree's), each in its own process, in the order old, new, new, old, with the
same bots and this bench's code; the load is printed before and after every pair.

    python bench/referee.py [--games N] [--rounds R] [--cpu C] [--settings S] [--compare REF] [--tiny] [GAME ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import orjson

from harness.games import GAMES, get_game
from harness.play.botproc import BotProcess
from harness.play.limits import BotSpec, ResourceLimits, pin_to_cpu
from harness.play.pool import BotPool
from harness.play.referee import FairPlay, RefereeConfig, play_game

ROOT = Path(__file__).resolve().parent.parent
RANDOM_BOT = ROOT / "bots" / "random_bot.py"


def on_cpu_ns(pid: int) -> int:
    """Nanoseconds ``pid`` has spent on a CPU (first field of /proc/PID/schedstat)."""
    with open(f"/proc/{pid}/schedstat") as fh:
        return int(fh.read().split()[0])


def tree_cpu_ns(proc: BotProcess) -> int:
    """Nanoseconds the bot's whole tree has spent on a CPU: its cgroup's counter where it has one
    (under bwrap the process started is the wrapper, not the bot), else the process's own."""
    group = proc._cgroup
    got = group.cpu_ns() if group is not None else None
    return got if got is not None else on_cpu_ns(proc.pid or 0)


class Meter:
    """Wall time and on-CPU time of this process and the bots, over one measured block."""

    def __init__(self, procs: list[BotProcess]) -> None:
        self.procs = procs

    def __enter__(self) -> Meter:
        self.cpu0 = on_cpu_ns(os.getpid())
        self.bots0 = sum(tree_cpu_ns(p) for p in self.procs)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        self.cpu = (on_cpu_ns(os.getpid()) - self.cpu0) / 1e9
        self.bots = (sum(tree_cpu_ns(p) for p in self.procs) - self.bots0) / 1e9


def referee_round(game, specs, pool, config, seeds) -> int:
    requests = 0
    for seed in seeds:
        record = play_game(game, {}, seed, f"bench-{seed}", specs, pool, config)
        requests += record.requests
        assert not record.violations, record.violations[0]
    return requests


def recorded_lines(game, specs, pool, config, seeds) -> list[tuple[int, bytes]]:
    """(seat, request line) of the games with these seeds, encoded exactly as the referee does."""
    config = dataclasses.replace(config, record_messages=True)  # the same pool key: the same processes
    lines = []
    for seed in seeds:
        record = play_game(game, {}, seed, f"bench-{seed}", specs, pool, config)
        for entry in record.log:
            if entry["type"] == "send" and entry["msg"]["type"] == "request":
                lines.append((entry["seat"], orjson.dumps(entry["msg"]) + b"\n"))
    return lines


def floor_round(fds: list[tuple[int, int]], lines: list[tuple[int, bytes]]) -> None:
    """Write each line to its seat's bot and read the answer: nothing else."""
    write, read = os.write, os.read
    for seat, line in lines:
        fd_in, fd_out = fds[seat]
        write(fd_in, line)
        data = read(fd_out, 65536)
        while not data.endswith(b"\n"):
            data += read(fd_out, 65536)


def engine_us(game, players, seeds) -> float:
    """In-process engine work per request (random play, same seeds): what the floor does not do."""
    chooser = random.Random(0)
    requests = 0
    start = time.perf_counter()
    for seed in seeds:
        state = game.new_state(players, seed, {})
        while not state.is_terminal():
            legal = state.legal_actions()
            if len(legal) > 1:
                state.observation(state.current_player)
                requests += 1
            state.apply(legal[chooser.randrange(len(legal))])
    return (time.perf_counter() - start) / requests * 1e6


def bot_specs(name: str, players: int, kind: str) -> list[BotSpec]:
    """One process per seat: the random bot (the cheapest bot, so the worst case for the ratio)
    or the game's greedy reference bot (a bot that does some work per decision)."""
    if kind == "greedy":
        return [BotSpec(name=f"greedy-{s}", command=("python3", str(ROOT / "bots" / f"{name}_greedy.py")))
                for s in range(players)]
    return [BotSpec(name=f"random-{s}", command=("python3", str(RANDOM_BOT), "--seed", str(s)))
            for s in range(players)]


#: the settings measured: (sandbox, CPU clock)
SETTINGS = {"bare": (None, False), "sandbox": ("auto", False), "clock": (None, True), "league": ("auto", True)}


def referee_config(setting: str) -> RefereeConfig:
    """The referee's settings for a row; processes reused across deals (decisions, not starts)."""
    sandbox, cpu_clock = SETTINGS[setting]
    return RefereeConfig(limits=ResourceLimits(sandbox=sandbox),
                         fair_play=FairPlay(cpu_clock=cpu_clock, process_per_deal=False))


def clock_syscalls_us(pool: BotPool, loops: int = 2000) -> tuple[float, float]:
    """The referee's CPU time (us) of the CPU clock's system calls on a live bot's cgroups, in a
    loop (0 if no bot has the clock): a thaw, one CPU reading and a freeze; and those plus the
    readings of its run delays a turn also makes (its task list, each thread's schedstat that
    the referee reads, the referee's own schedstat)."""
    procs = [p for p in pool.processes() if p.cpu_clock]
    if not procs:
        return 0.0, 0.0
    proc = procs[0]
    group, delay = proc._cgroup, proc._run_delay
    assert group is not None and delay is not None
    pread, tasks = os.pread, os.open(delay.tasks_file, os.O_RDONLY)
    own = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    threads = list(delay._fds.values())  # (the threads its last reading read)
    start = on_cpu_ns(os.getpid())
    for _ in range(loops):
        group.thaw()
        group.cpu_ns()
        group.freeze()
    three = (on_cpu_ns(os.getpid()) - start) / loops / 1e3
    start = on_cpu_ns(os.getpid())
    for _ in range(loops):
        group.thaw()
        pread(own, 128, 0)
        group.cpu_ns()
        group.freeze()
        pread(tasks, 1 << 16, 0)
        for fd in threads:
            pread(fd, 128, 0)
    every = (on_cpu_ns(os.getpid()) - start) / loops / 1e3
    os.close(tasks)
    os.close(own)
    return three, every


def in_game_syscalls_us(game, specs, pool: BotPool, config: RefereeConfig, seeds: list[int]) -> tuple[float, float]:
    """The referee's CPU time (us per decision) in the CPU clock's system calls as they run in
    one more round of games (caches as cold as the game leaves them), each timed by thread CPU
    time with the timer's own cost taken off: thaw + CPU reading + freeze; and those + the
    run-delay readings (the bot's threads, with their parsing; the referee's own)."""
    from harness.play import botproc, cgroups, cpuclock
    spent = {"three": 0, "delays": 0}
    calls = [0]
    clock = time.thread_time_ns

    def timed(f, key):
        def call(*a, **k):
            t0 = clock()
            try:
                return f(*a, **k)
            finally:
                spent[key] += clock() - t0
                calls[0] += 1
        return call

    def nothing() -> None:
        pass

    empty = timed(nothing, "delays")
    start = clock()
    for _ in range(10000):
        empty()
    overhead = (clock() - start) / 10000
    spent["delays"] = calls[0] = 0
    patched = [(cgroups.BotCgroup, "thaw", "three"), (cgroups.BotCgroup, "freeze", "three"),
               (cgroups.BotCgroup, "cpu_ns", "three"), (cpuclock.RunDelay, "_read", "delays"),
               (botproc, "own_wait_ns", "delays")]
    saved = [getattr(obj, name) for obj, name, _ in patched]
    for obj, name, key in patched:
        setattr(obj, name, timed(getattr(obj, name), key))
    try:
        requests = referee_round(game, specs, pool, config, seeds)
    finally:
        for (obj, name, _), f in zip(patched, saved):
            setattr(obj, name, f)
    # each timed call also pays about half the timer pair inside what it measures
    per_call = overhead / 2
    three = spent["three"] - per_call * 3 * requests
    every = three + spent["delays"] - per_call * (calls[0] - 3 * requests)
    return max(three, 0) / requests / 1e3, max(every, 0) / requests / 1e3


def bench_game(name: str, n_games: int, rounds: int, bots: str = "random",
               setting: str = "bare") -> dict[str, float]:
    game = get_game(name)
    players = game.min_players
    specs = bot_specs(name, players, bots)
    config = referee_config(setting)
    seeds = list(range(1000, 1000 + n_games))
    rows: dict[str, list[float]] = {k: [] for k in ("ref", "floor", "ref_cpu", "floor_cpu", "ref_self", "floor_self",
                                                    "engine")}
    with BotPool(config) as pool:
        referee_round(game, specs, pool, config, seeds[:2])  # start the processes, warm up
        lines = recorded_lines(game, specs, pool, config, seeds)
        # every process of the pool is one of this game's (one per seat: processes are reused across deals)
        procs = sorted(pool.processes(), key=lambda p: p.spec.name)
        assert [p.spec.name for p in procs] == [s.name for s in specs], [p.spec.name for p in procs]
        fds = [(p._in, p._out) for p in procs]
        for _ in range(rounds):
            with Meter(procs) as m:
                requests = referee_round(game, specs, pool, config, seeds)
            rows["ref"].append(m.wall / requests * 1e6)
            rows["ref_cpu"].append((m.cpu + m.bots) / requests * 1e6)
            rows["ref_self"].append(m.cpu / requests * 1e6)
            for proc in procs:
                proc.thaw()  # the floor is the bare exchange: no freezer
            for _, fd_out in fds:
                os.set_blocking(fd_out, True)
            with Meter(procs) as m:
                floor_round(fds, lines)
            for _, fd_out in fds:
                os.set_blocking(fd_out, False)
            for proc in procs:
                proc.freeze()
            rows["floor"].append(m.wall / len(lines) * 1e6)
            rows["floor_cpu"].append((m.cpu + m.bots) / len(lines) * 1e6)
            rows["floor_self"].append(m.cpu / len(lines) * 1e6)
            rows["engine"].append(engine_us(game, players, seeds))
        syscalls, all_syscalls = clock_syscalls_us(pool)
        in_game = in_game_syscalls_us(game, specs, pool, config, seeds) if syscalls else (0.0, 0.0)
    out: dict = {k: statistics.median(v) for k, v in rows.items()}
    out["decisions"] = len(lines)
    out["syscalls"] = syscalls
    out["all_syscalls"] = all_syscalls
    out["in_game"], out["all_in_game"] = in_game
    out["rounds"] = rows
    return out


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("games", nargs="*", help="games to measure (default: every game that imports)")
    parser.add_argument("--games", dest="n_games", type=int, default=20, help="games per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=0, help="core to pin the referee and its bots to")
    parser.add_argument("--bots", choices=("random", "greedy", "both"), default="both",
                        help="reference bots in every seat (default: a row for each)")
    parser.add_argument("--settings", default="bare,league",
                        help="which settings: bare, sandbox (the sandbox alone), clock (the CPU clock alone), "
                             "league (both); default bare,league")
    parser.add_argument("--compare", metavar="REF", help="also measure the harness of REF (a git ref, or a "
                        "directory holding a harness package), side by side in the same run")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # one row as JSON (--compare)
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing); compares with this tree itself unless --compare is given")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.n_games, args.rounds, args.bots = args.games or ["crisps"], 2, 1, "random"
        args.compare = args.compare or str(ROOT)
    return args


def main() -> None:
    args = parse_args()
    pin_to_cpu(args.cpu)
    settings = args.settings.split(",")
    if args.worker:
        [name] = args.games
        got = bench_game(name, args.n_games, args.rounds, args.bots, settings[0])
        import harness
        print(json.dumps({**got, "harness": str(Path(harness.__file__).parent)}))
        return
    print(f"load average {load()} on {os.cpu_count()} cores; us per decision, median of "
          f"{args.rounds} rounds of {args.n_games} games; bare: no sandbox, no CPU clock; league: the sandbox "
          f"(where it works) and the CPU clock")
    print(f"{'game':<10} {'bots':<6} {'setting':<7} {'code':<4} {'decisions':>9} | {'wall: referee':>13} {'floor':>6} "
          f"{'ratio':>6} | {'cpu: referee':>12} {'floor':>6} {'ratio':>6} | {'referee self':>12} {'engine':>6} "
          f"{'floor self':>10}")
    with tempfile.TemporaryDirectory(prefix="bench-referee-") as tmp:
        codes = {"new": str(ROOT)}
        if args.compare:
            codes = {"old": old_tree(args.compare, Path(tmp)), "new": str(ROOT)}
            print(f"old: the harness of {args.compare} ({codes['old']}); new: {ROOT}")
        clock_rows = measure_all(args, settings, codes)
    print("target: ratio <= 1.5")
    if clock_rows:
        print("\nthe CPU clock's cost to the referee (its CPU per decision, league minus bare, the sandbox's share "
              "included) against the referee's CPU time in its system calls: thaw + CPU reading + freeze (3), and "
              "those + the run-delay readings (all: the referee's own wait, and the task list and the bot's threads: "
              "in the loop every time, in a game once a ms of the bot's thawed time), "
              "in a loop and as they run in a game; us (ratio)")
        print(f"{'game':<10} {'bots':<6} {'code':<4} {'cost':>6} | {'loop: 3':>14} {'all':>14} | {'in game: 3':>14} "
              f"{'all':>14}")
        for name, bots, code, bare, league in clock_rows:
            cost = league["ref_self"] - bare["ref_self"]
            cells = " | ".join(" ".join(f"{league[k]:>6.1f} ({cost / league[k] if league[k] else 0:>5.2f})"
                                        for k in pair)
                               for pair in (("syscalls", "all_syscalls"), ("in_game", "all_in_game")))
            print(f"{name:<10} {bots:<6} {code:<4} {cost:>6.1f} | {cells}")
        print("target: ratio <= 2 against the clock's system calls (thaw + reading + freeze)")
    print(f"load average {load()} at the end")


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def measure_all(args: argparse.Namespace, settings: list[str], codes: dict[str, str]) -> list[tuple]:
    """Every row (game x bots x setting), for each code; the pairs (bare, league) for the clock's cost."""
    clock_rows = []
    for name in args.games or list(GAMES):
        try:
            get_game(name)
        except ImportError as exc:
            print(f"{name:<10} skipped: {exc}", file=sys.stderr)
            continue
        for bots in (("random", "greedy") if args.bots == "both" else (args.bots,)):
            got: dict[str, dict[str, dict]] = {code: {} for code in codes}
            for setting in settings:
                if len(codes) == 1:
                    got["new"][setting] = bench_game(name, args.n_games, args.rounds, bots, setting)
                else:
                    compared(args, codes, name, bots, setting, got)
                for code in codes:
                    report(name, bots, setting, code, got[code][setting])
            for code in codes:
                if "bare" in got[code] and "league" in got[code] and got[code]["league"]["syscalls"]:
                    clock_rows.append((name, bots, code, got[code]["bare"], got[code]["league"]))
    return clock_rows


def compared(args: argparse.Namespace, codes: dict[str, str], name: str, bots: str, setting: str,
             got: dict[str, dict[str, dict]]) -> None:
    """One row for each code into ``got``, each measured in two processes, in the order old, new, new, old."""
    runs: dict[str, list[dict]] = {code: [] for code in codes}
    before = load()
    for code in ("old", "new", "new", "old"):
        runs[code].append(worker(args, codes[code], name, bots, setting))
    print(f"  (load {before} -> {load()})", flush=True)
    for code, results in runs.items():
        rounds = {k: [x for r in results for x in r["rounds"][k]] for k in results[0]["rounds"]}
        row = {k: statistics.median(v) for k, v in rounds.items()}
        row.update({k: statistics.median(r[k] for r in results)
                    for k in ("syscalls", "all_syscalls", "in_game", "all_in_game")}, decisions=results[0]["decisions"])
        got[code][setting] = row


def worker(args: argparse.Namespace, tree: str, name: str, bots: str, setting: str) -> dict:
    """One row measured by this bench in a process of its own, with the harness of ``tree``."""
    cmd = [sys.executable, __file__, "--worker", "--games", str(args.n_games), "--rounds", str(args.rounds),
           "--cpu", str(args.cpu), "--bots", bots, "--settings", setting, name]
    env = dict(os.environ, PYTHONPATH=tree)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"bench/referee.py: the row {name} {bots} {setting} with {tree} failed:\n{done.stderr[-3000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(got["harness"]).resolve() != (Path(tree) / "harness").resolve():
        sys.exit(f"bench/referee.py: the row with {tree} ran the harness of {got['harness']} (check PYTHONPATH)")
    return got


def old_tree(ref: str, tmp: Path) -> str:
    """A directory holding the harness package of ``ref``: the directory itself, or the ref's
    ``harness`` extracted from git into ``tmp``."""
    if (Path(ref) / "harness").is_dir():
        return str(Path(ref).resolve())
    done = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, "harness"], capture_output=True,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"bench/referee.py: --compare {ref}: not a directory with a harness package, nor a git ref here "
                 f"({done.stderr.decode(errors='replace').strip()})")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(tmp, filter="data")
    return str(tmp)


def report(name: str, bots: str, setting: str, code: str, r: dict) -> None:
    wall_ratio = r["ref"] / r["floor"]
    cpu_ratio = r["ref_cpu"] / r["floor_cpu"]
    print(f"{name:<10} {bots:<6} {setting:<7} {code:<4} {r['decisions']:>9.0f} | {r['ref']:>13.1f} {r['floor']:>6.1f} "
          f"{wall_ratio:>6.2f} | {r['ref_cpu']:>12.1f} {r['floor_cpu']:>6.1f} {cpu_ratio:>6.2f} | "
          f"{r['ref_self']:>12.1f} {r['engine']:>6.1f} {r['floor_self']:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
