"""The timing channel between two colluding bots, with and without ``time.jitter_ms``.

A sender answers each request at once or after ``--ms`` of sleep (a random bit a request); the
receiver, the next to move, times the gap from its own answer to its next request and reads the
bit from it (above or below the midpoint of the two classes' median gaps, the best a receiver
could calibrate). Both write what they did with CLOCK_MONOTONIC stamps; this script matches each
receiver gap with the sender decision inside it and prints how many bits were read right (50%:
no channel). Crisps between the two (2 seats, turns alternate), the referee in this process,
no sandbox, the CPU clock where cgroups can be made (root). Sleeping costs the sender its time:
``--ms`` stays well inside ``move_ms``.

    python3 bench/timing_channel.py --games 6 --ms 40 --jitter 0 40 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

BOT = r"""
import json, random, sys, time
role, ms, out = sys.argv[1], float(sys.argv[2]), open(sys.argv[3], "a")
rng = random.Random()
last = None
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        print(json.dumps({"type": "ready"}), flush=True)
    elif msg["type"] == "start":
        last = None
    elif msg["type"] == "request":
        now = time.monotonic()
        if role == "send":
            bit = rng.getrandbits(1)
            out.write(f"S {now} {bit}\n")
            if bit:
                time.sleep(ms / 1000)
        elif last is not None:
            out.write(f"R {last} {now}\n")
        out.flush()
        print(json.dumps({"type": "action", "id": msg["id"], "index": 0}), flush=True)
        last = time.monotonic()
    elif msg["type"] == "bye":
        break
"""


def run(games: int, ms: float, jitter: int, where: Path) -> tuple[int, int]:
    from harness.games import get_game
    from harness.play.limits import BotSpec, ResourceLimits, TimeControls
    from harness.play.pool import BotPool
    from harness.play.referee import RefereeConfig, play_game

    log = where / f"j{jitter}.log"
    script = where / "bot.py"
    script.write_text(BOT)
    log.touch()
    for made in (where, script, log):  # (as root, the bots run as an unprivileged uid of their own)
        made.chmod(0o777 if made.is_dir() else 0o666)
    specs = [BotSpec(name=role, command=(sys.executable, str(script), role, str(ms), str(log))) for role in ("send", "recv")]
    config = RefereeConfig(time=TimeControls(move_ms=max(200, int(4 * ms)), jitter_ms=jitter),
                           limits=ResourceLimits(sandbox=None))
    with BotPool(config) as pool:
        for g in range(games):
            play_game(get_game("crisps"), {"max_turns": 200}, g + 1, f"g-{g}", specs, pool, config)
    sends, gaps = [], []
    for line in log.read_text().splitlines():
        kind, a, b = line.split()
        (sends if kind == "S" else gaps).append((float(a), float(b)))
    pairs = []
    for start, end in gaps:
        inside = [bit for t, bit in sends if start < t < end]
        if len(inside) == 1:
            pairs.append((end - start, int(inside[0])))
    ones = [g for g, bit in pairs if bit]
    zeros = [g for g, bit in pairs if not bit]
    if not ones or not zeros:
        return 0, len(pairs)
    cut = (statistics.median(ones) + statistics.median(zeros)) / 2
    return sum((g > cut) == bool(bit) for g, bit in pairs), len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=6)
    parser.add_argument("--ms", type=float, default=40.0, help="the sender's sleep for a 1")
    parser.add_argument("--jitter", type=int, nargs="+", default=[0, 40, 100])
    parser.add_argument("--tiny", action="store_true", help="one short game a jitter (does it still run?)")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.ms, args.jitter = 1, 5.0, [0, 10]
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; a 1 is {args.ms:.0f} ms of sleep")
    with tempfile.TemporaryDirectory() as tmp:
        for jitter in args.jitter:
            right, total = run(args.games, args.ms, jitter, Path(tmp))
            print(f"jitter_ms {jitter:4}: {right} of {total} bits read right ({100 * right / max(total, 1):.0f}%)")


if __name__ == "__main__":
    main()
