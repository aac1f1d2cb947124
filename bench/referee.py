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
by side with its system calls alone (a thaw, a freeze and one CPU reading of a live bot's
cgroups, in a tight loop): target <= 2x.

    python bench/referee.py [--games N] [--rounds R] [--cpu C] [--tiny] [GAME ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import statistics
import sys
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
SETTINGS = {"bare": (None, False), "league": ("auto", True)}


def referee_config(setting: str) -> RefereeConfig:
    """The referee's settings for a row; processes reused across deals (decisions, not starts)."""
    sandbox, cpu_clock = SETTINGS[setting]
    return RefereeConfig(limits=ResourceLimits(sandbox=sandbox),
                         fair_play=FairPlay(cpu_clock=cpu_clock, process_per_deal=False))


def clock_syscalls_us(pool: BotPool, loops: int = 2000) -> float:
    """Microseconds of one thaw + one CPU reading + one freeze of a live bot's cgroups (0 if none)."""
    procs = [p for p in pool.processes() if p.cpu_clock]
    if not procs:
        return 0.0
    group = procs[0]._cgroup
    assert group is not None
    start = time.perf_counter()
    for _ in range(loops):
        group.thaw()
        group.cpu_ns()
        group.freeze()
    return (time.perf_counter() - start) / loops * 1e6


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
        syscalls = clock_syscalls_us(pool)
    out = {k: statistics.median(v) for k, v in rows.items()}
    out["decisions"] = len(lines)
    out["syscalls"] = syscalls
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("games", nargs="*", help="games to measure (default: every game that imports)")
    parser.add_argument("--games", dest="n_games", type=int, default=20, help="games per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=0, help="core to pin the referee and its bots to")
    parser.add_argument("--bots", choices=("random", "greedy", "both"), default="both",
                        help="reference bots in every seat (default: a row for each)")
    parser.add_argument("--settings", default="bare,league", help="which settings (bare, league)")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.n_games, args.rounds, args.bots = args.games or ["crisps"], 2, 1, "random"
    pin_to_cpu(args.cpu)
    settings = args.settings.split(",")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; us per decision, median of "
          f"{args.rounds} rounds of {args.n_games} games; bare: no sandbox, no CPU clock; league: the sandbox "
          f"(where it works) and the CPU clock")
    print(f"{'game':<10} {'bots':<6} {'setting':<7} {'decisions':>9} | {'wall: referee':>13} {'floor':>6} "
          f"{'ratio':>6} | {'cpu: referee':>12} {'floor':>6} {'ratio':>6} | {'referee self':>12} {'engine':>6} "
          f"{'floor self':>10}")
    clock_rows = []
    for name in args.games or list(GAMES):
        try:
            get_game(name)
        except ImportError as exc:
            print(f"{name:<10} skipped: {exc}", file=sys.stderr)
            continue
        for bots in (("random", "greedy") if args.bots == "both" else (args.bots,)):
            got = {}
            for setting in settings:
                got[setting] = bench_game(name, args.n_games, args.rounds, bots, setting)
                report(name, bots, setting, got[setting])
            if "bare" in got and "league" in got and got["league"]["syscalls"]:
                clock_rows.append((name, bots, got["bare"], got["league"]))
    print("target: ratio <= 1.5")
    if clock_rows:
        print("\nthe CPU clock's cost to the referee (its CPU per decision, league minus bare, the sandbox's share "
              "included) against its system calls (thaw + reading + freeze), us")
        for name, bots, bare, league in clock_rows:
            cost = league["ref_self"] - bare["ref_self"]
            print(f"{name:<10} {bots:<6} referee cost {cost:>7.1f}  system calls {league['syscalls']:>6.1f}  "
                  f"ratio {cost / league['syscalls']:>5.2f}")
        print("target: ratio <= 2")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def report(name: str, bots: str, setting: str, r: dict[str, float]) -> None:
    wall_ratio = r["ref"] / r["floor"]
    cpu_ratio = r["ref_cpu"] / r["floor_cpu"]
    print(f"{name:<10} {bots:<6} {setting:<7} {r['decisions']:>9.0f} | {r['ref']:>13.1f} {r['floor']:>6.1f} "
          f"{wall_ratio:>6.2f} | {r['ref_cpu']:>12.1f} {r['floor_cpu']:>6.1f} {cpu_ratio:>6.2f} | "
          f"{r['ref_self']:>12.1f} {r['engine']:>6.1f} {r['floor_self']:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
