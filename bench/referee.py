"""Referee overhead: cost per decision of refereed games vs the bare exchange with the same bots.

Both sides run in one process pinned to one core (bots inherit the affinity), with the same
persistent random-bot processes (bots/random_bot.py):

- referee: games played through ``harness.referee.play_game`` (engine, encoding, legality,
  deadlines, everything), time divided by the number of requests sent to bots;
- floor: the same processes fed the request lines of those games, already encoded, by a bare
  loop that only writes a line and reads the answer (no engine, no encoding, no checks).

Prints both in microseconds per decision and their ratio (target <= 1.5). Rounds alternate
referee and floor so that drift affects both; the median round is reported.

    python bench/referee.py [--games N] [--rounds R] [--cpu C] [GAME ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import orjson

from harness.botproc import BotSpec, pin_to_cpu
from harness.games import GAMES, get_game
from harness.referee import BotPool, RefereeConfig, play_game

ROOT = Path(__file__).resolve().parent.parent
RANDOM_BOT = ROOT / "bots" / "random_bot.py"


def referee_round(game, players, specs, pool, config, seeds) -> tuple[float, int]:
    requests = 0
    start = time.perf_counter()
    for seed in seeds:
        record = play_game(game, {}, seed, f"bench-{seed}", specs, pool, config)
        requests += record.requests
        assert not record.violations, record.violations[0]
    return time.perf_counter() - start, requests


def recorded_lines(game, players, specs, pool, seeds) -> list[tuple[int, bytes]]:
    """(seat, request line) of the games with these seeds, exactly as the referee encodes them."""
    config = RefereeConfig(record_messages=True)
    lines = []
    for seed in seeds:
        record = play_game(game, {}, seed, f"bench-{seed}", specs, pool, config)
        for entry in record.log:
            if entry["type"] == "send" and entry["msg"]["type"] == "request":
                lines.append((entry["seat"], orjson.dumps(entry["msg"]) + b"\n"))
    return lines


def floor_round(fds: list[tuple[int, int]], lines: list[tuple[int, bytes]]) -> float:
    """Write each line to its seat's bot and read the answer: nothing else."""
    write, read = os.write, os.read
    start = time.perf_counter()
    for seat, line in lines:
        fd_in, fd_out = fds[seat]
        write(fd_in, line)
        data = read(fd_out, 65536)
        while not data.endswith(b"\n"):
            data += read(fd_out, 65536)
    return time.perf_counter() - start


def bench_game(name: str, n_games: int, rounds: int) -> tuple[float, float, int]:
    game = get_game(name)
    players = game.min_players
    # distinct specs (one process per seat), each bot seeded
    specs = [BotSpec(name=f"random-{s}", command=("python3", str(RANDOM_BOT), "--seed", str(s))) for s in range(players)]
    config = RefereeConfig()
    seeds = list(range(1000, 1000 + n_games))
    with BotPool(config) as pool:
        referee_round(game, players, specs, pool, config, seeds[:2])  # start the processes, warm up
        lines = recorded_lines(game, players, specs, pool, seeds)
        # the processes the pool holds for this config, in seat order
        procs = sorted((p for p in pool.processes() if p.key[2:] == (config.time, config.limits)),
                       key=lambda p: p.spec.name)
        fds = [(p._in, p._out) for p in procs]
        ref_us, floor_us = [], []
        for _ in range(rounds):
            elapsed, requests = referee_round(game, players, specs, pool, config, seeds)
            ref_us.append(elapsed / requests * 1e6)
            for fd_in, fd_out in fds:
                os.set_blocking(fd_out, True)
            elapsed = floor_round(fds, lines)
            for fd_in, fd_out in fds:
                os.set_blocking(fd_out, False)
            floor_us.append(elapsed / len(lines) * 1e6)
    return statistics.median(ref_us), statistics.median(floor_us), len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("games", nargs="*", help="games to measure (default: every game that imports)")
    parser.add_argument("--games", dest="n_games", type=int, default=20, help="games per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=0, help="core to pin the referee and its bots to")
    parser.add_argument("--toy", action="store_true", help="also measure the toy game of the tests")
    args = parser.parse_args()
    pin_to_cpu(args.cpu)
    names = args.games or list(GAMES)
    print(f"{'game':<10} {'players':>7} {'decisions':>9} {'referee us':>11} {'floor us':>9} {'ratio':>6} {'target':>7}")
    for name in names:
        try:
            get_game(name)
        except ImportError as exc:
            print(f"{name:<10} skipped: {exc}", file=sys.stderr)
            continue
        ref, floor, n = bench_game(name, args.n_games, args.rounds)
        ratio = ref / floor
        print(f"{name:<10} {get_game(name).min_players:>7} {n:>9} {ref:>11.1f} {floor:>9.1f} {ratio:>6.2f} "
              f"{'ok' if ratio <= 1.5 else 'OVER':>7}")


if __name__ == "__main__":
    main()
