#!/usr/bin/env python3
"""A hostile test bot: one attack of a bot author who wants to win, then random legal play.

    python3 tests/bots/attacker.py MODE [options]

Every finding is one stderr line ``ATTACK <mode> key=value ...`` (the tests read the bot's
stderr log). Modes:

- ``deal-spy --league L --seed S --names a,b``: rebuild the deal from public facts (league name
  and seed, round 0, the bots' names) with the engine, and say whether its own hand matches.
- ``mirror-spy``: remember each game's first hand under the game's first public event (the
  deal); when a later game opens with the same event, it is the same deal in another seat
  order, and the opponent holds the remembered hand: say ``game=ID guess=CARDS`` (the test
  checks the guess against the stored deal).
- ``deal-log``: report a per-process token and each game id it plays (who saw which deal).
- ``talk``: look for another process of this bot through every shared place (files in /tmp,
  /dev/shm and its directory, an abstract unix socket, SysV shared memory, signals to pids).
- ``root``: try what only root may do, each in a form harmless if it succeeds: open /proc/sys
  files for writing (never writes), mount a tmpfs on its own empty directory (unmounted at
  once), set the hostname to what it is, chown its own file, raise a hard limit; report the uid
  and capabilities it holds.
- ``scratch --mb N``: write up to N MB to each writable place; report what it wrote.
- ``think --cpu-ms N``: burn N ms of CPU time per request (``--threads K``: in K threads, or
  ``--children K``: in K forked children), then answer.
- ``sleep --ms N``: sleep N ms per request, then answer (``--threads K``: while K threads spin).
- ``spin --threads K --children N``: spin K threads and N forked children from start-up on,
  forever (a CPU hog), and answer at once.
- ``orphans --children N``: at start-up fork N children that leave its session and spin forever
  once their parent has exited: orphans, adopted by the sandbox's init (bwrap's, which the
  harness never freezes); answer at once.
- ``hog --children K --mb N``: at start-up fork K children that each touch N MB and hold it
  forever; report how many got their memory (``held=``), then play.
- ``hog-later --children K --mb N``: the same at its second request, mid-game (then answers).
- ``forkbomb``: at start-up fork children (each sleeps forever) until refused; report how many.
- ``inodes --files N``: create up to N empty files in /tmp; report how many it could.
- ``id-spy --league L --seed S --labels a@v1,b@v1 --rounds N``: recompute the game id from public
  facts (league name and seed, every round below N, every seat order of the labels a leaderboard
  prints, as a round robin or an adaptive league hashes them): say ``known=yes`` if the id it was
  sent is one of them (it would know its round, its opponents and their seats).
- ``check-spy --seeds N``: tell a conformance check from a league game by what the referee sends:
  an id that says so, or a hand dealt from one of the seeds 1..N; say ``check=yes|no``. With
  ``--cheat`` it plays legally only when it believes it is checked (an illegal index otherwise).
- ``oracle --deals FILE``: FILE is a JSON list of seeds scraped from public replays; at its first
  request, look for a known deal whose hand at its seat is its own, and if one is, name every
  other hand (``known=yes others=...``; the test checks them against the stored deal).
- ``plain``: random play only.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import socket
import sys
import tempfile
import threading
import time


def say(mode: str, **facts: object) -> None:
    sys.stderr.write(f"ATTACK {mode} " + " ".join(f"{k}={v}" for k, v in facts.items()) + "\n")
    sys.stderr.flush()


def burn_cpu(ms: float) -> None:
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


def spin_until(until: float) -> None:
    while time.monotonic() < until:
        pass


def spin_forever() -> None:
    while True:
        pass


# ---- probes ---------------------------------------------------------------------------------

def try_open_for_writing(path: str) -> str:
    """Open ``path`` for writing and close it at once: nothing is ever written."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        return f"blocked({exc.errno})"
    os.close(fd)
    return "OPENED"


def root_probe() -> None:
    facts: dict[str, object] = {"uid": os.getuid(), "euid": os.geteuid()}
    for name in ("kernel/core_pattern", "kernel/hostname", "vm/drop_caches"):
        facts[name.replace("/", ".")] = try_open_for_writing(f"/proc/sys/{name}")
    facts["sysrq"] = try_open_for_writing("/proc/sysrq-trigger")
    with open("/proc/self/status") as fh:
        caps = {k: v.strip() for k, v in (line.split(":", 1) for line in fh if line.startswith("Cap"))}
    facts["CapEff"] = caps.get("CapEff")
    # Each action is harmless if it succeeds (the test must not hurt the machine when it fails):
    # a tmpfs on a fresh empty directory of its own, unmounted at once; the hostname set to what
    # it is; a file of its own given to another owner.
    libc = ctypes.CDLL(None, use_errno=True)
    own = tempfile.mkdtemp(prefix="attacker-")
    if libc.mount(b"none", own.encode(), b"tmpfs", 0, None) == 0:
        libc.umount2(own.encode(), 2)
        facts["mount"] = "OK"
    else:
        facts["mount"] = "blocked"
    name = socket.gethostname().encode()
    facts["sethostname"] = "OK" if libc.sethostname(name, len(name)) == 0 else "blocked"
    try:
        path = os.path.join(own, "chown-me")
        with open(path, "w"):
            pass
        os.chown(path, 4242, 4242)
        facts["chown"] = "OK"
    except OSError:
        facts["chown"] = "blocked"
    import resource
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1, hard + 1))
        facts["raise_rlimit"] = "OK"
    except (OSError, ValueError):
        facts["raise_rlimit"] = "blocked"
    say("root", **facts)


def write_mb(directory: str, mb: int) -> int:
    """Write up to ``mb`` MB under ``directory``; the MB written (stops at the first error)."""
    written = 0
    path = os.path.join(directory, f"hog-{os.getpid()}-{random.randrange(10**9)}")
    chunk = b"\xa5" * (1 << 20)
    try:
        with open(path, "wb") as fh:
            for _ in range(mb):
                fh.write(chunk)
                fh.flush()
                written += 1
    except OSError:
        pass
    return written


def scratch_probe(mb: int) -> None:
    places = {"tmp": "/tmp", "shm": "/dev/shm", "root": "/", "cwd": os.getcwd(), "home": os.path.expanduser("~"),
              "var_tmp": "/var/tmp"}
    facts: dict[str, object] = {}
    done: set[str] = set()
    for key, place in places.items():
        real = os.path.realpath(place)
        if real in done:
            facts[key] = "same"
            continue
        done.add(real)
        facts[key] = write_mb(place, mb) if os.path.isdir(place) else "absent"
    say("scratch", **facts)


class Talk:
    """Every channel one process of a bot could use to reach another process of the same bot."""

    KEY = 0x7AB1E5

    def __init__(self) -> None:
        self.token = f"{os.getpid()}-{random.randrange(10**12)}"
        self.places = [p for p in ("/tmp", "/dev/shm", os.getcwd()) if os.path.isdir(p)]
        for place in self.places:
            try:
                with open(os.path.join(place, f"tablebots-talk-{self.token}"), "w") as fh:
                    fh.write(self.token)
            except OSError:
                pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.abstract_taken = False
        try:
            self.sock.bind("\0tablebots-talk")
        except OSError:
            self.abstract_taken = True  # another process holds the name: a channel
            try:
                self.sock.sendto(self.token.encode(), "\0tablebots-talk")
            except OSError:
                pass
        libc = ctypes.CDLL(None, use_errno=True)
        self.shm_exists = libc.shmget(self.KEY, 4096, 0o1000 | 0o2000 | 0o666) < 0 and ctypes.get_errno() == 17
        self.libc = libc

    def check(self) -> None:
        others = []
        for place in self.places:
            try:
                others += [n for n in os.listdir(place) if n.startswith("tablebots-talk-")
                           and n != f"tablebots-talk-{self.token}"]
            except OSError:
                pass
        abstract = self.abstract_taken
        try:
            abstract = abstract or bool(self.sock.recv(100))  # a later process said hello
        except OSError:
            pass
        shm = self.shm_exists
        signals = 0
        for pid in range(2, 400):
            if pid == os.getpid():
                continue
            try:
                os.kill(pid, 0)
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if b"attacker.py" in fh.read() and pid != os.getppid():
                        signals += 1
            except OSError:
                pass
        say("talk", files=len(others), abstract=int(abstract), sysv=int(shm), signals=signals)


def hog(children: int, mb: int) -> None:
    """K children that each touch ``mb`` MB and hold it; each reports on a pipe when it holds it."""
    read_end, write_end = os.pipe()
    for _ in range(children):
        if os.fork() == 0:
            os.close(read_end)
            try:
                block = bytearray(mb << 20)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                os.write(write_end, b"x")
            except MemoryError:
                os._exit(1)
            os.close(write_end)
            while True:
                time.sleep(3600)
    os.close(write_end)
    held = dead = 0
    deadline = time.monotonic() + 3
    os.set_blocking(read_end, False)
    while held + dead < children and time.monotonic() < deadline:
        try:
            held += len(os.read(read_end, 64))
        except BlockingIOError:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                dead += pid > 0
            except ChildProcessError:
                break
            time.sleep(0.02)
    say("hog", held=held)


def forkbomb() -> None:
    n = 0
    while n < 100000:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            for fd in (0, 1, 2):
                os.close(fd)
            while True:
                time.sleep(3600)
        n += 1
    say("forkbomb", forked=n)


def make_files(count: int) -> None:
    made = 0
    base = tempfile.mkdtemp(dir="/tmp")
    try:
        for i in range(count):
            os.close(os.open(os.path.join(base, str(i)), os.O_CREAT | os.O_WRONLY, 0o600))
            made += 1
    except OSError as exc:
        say("inodes", made=made, error=exc.errno)
        return
    say("inodes", made=made, error=0)


# ---- play -----------------------------------------------------------------------------------

def _same_hand(a: list, b: list) -> bool:
    return sorted(json.dumps(x, sort_keys=True) for x in a) == sorted(json.dumps(x, sort_keys=True) for x in b)


def public_ids(league: str, seed: int, labels: list[str], players: int, rounds: int) -> set[str]:
    """Every id a round robin or an adaptive league could give a game of these labels, from public facts."""
    import hashlib
    import itertools

    from harness.league.schedule_roundrobin import game_id
    out = set()
    for r in range(rounds):
        for seats in itertools.permutations(labels, players):
            out.add(game_id(league, seed, r, list(seats)))
            text = json.dumps(["adaptive", league, seed, r, list(seats)], separators=(",", ":"))
            out.add("a-" + hashlib.sha256(text.encode()).hexdigest()[:12])
    return out


def deal_hands(game: str, options: dict, players: int, seed: int) -> list[list]:
    from harness.games import get_game
    state = get_game(game).new_state(players, seed, options)
    return [list(state.observation(s).get("hand", [])) for s in range(players)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--league", default="")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--names", default="")
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--cpu-ms", type=float, default=0.0)
    parser.add_argument("--ms", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--children", type=int, default=0)
    parser.add_argument("--files", type=int, default=0)
    parser.add_argument("--labels", default="")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=0)
    parser.add_argument("--deals", default="")
    parser.add_argument("--cheat", action="store_true")
    args = parser.parse_args()
    mode = args.mode
    rng = random.Random()
    token = f"{random.randrange(10**12):012d}"
    talk: Talk | None = None
    if mode == "spin":
        for _ in range(args.children):
            if os.fork() == 0:
                spin_forever()
        for _ in range(args.threads if args.threads or args.children else 1):
            threading.Thread(target=spin_forever, daemon=True).start()
    if mode == "orphans":
        for _ in range(args.children):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    spin_forever()
                os._exit(0)
            os.wait()
    game = ""
    seat = 0
    first_request = True
    requests = 0
    checked = True
    hands: dict[str, list] = {}  # first public event of a game -> the hand this process held
    game_id = ""
    options: dict = {}
    players = 2
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg["type"]
        if kind == "hello":
            game = msg["game"]
            options = msg.get("options", {})
            if mode == "root":
                root_probe()
            elif mode == "scratch":
                scratch_probe(args.mb)
            elif mode == "talk":
                talk = Talk()
            elif mode == "hog":
                hog(args.children, args.mb)
            elif mode == "forkbomb":
                forkbomb()
            elif mode == "inodes":
                make_files(args.files)
            print(json.dumps({"type": "ready", "name": f"attacker-{mode}"}), flush=True)
        elif kind == "start":
            seat = msg["seat"]
            game_id = msg["game_id"]
            players = msg["players"]
            first_request = True
            if mode == "id-spy":
                known = game_id in public_ids(args.league, args.seed, args.labels.split(","), players, args.rounds)
                say("id-spy", game=game_id, known="yes" if known else "no")
            if mode == "deal-log":
                say("deal-log", process=token, game=msg["game_id"])
            if talk is not None:
                talk.check()
        elif kind == "request":
            obs = msg["observation"]
            if first_request and mode == "deal-spy":
                from harness.games import get_game
                from harness.league.schedule_roundrobin import deal_seed
                deal = deal_seed(args.league, args.seed, 0, args.names.split(","))
                state = get_game(game).new_state(2, deal, {})
                rebuilt = list(state.observation(seat)["hand"])
                mine = list(obs["hand"])
                knew = all(mine.count(c) <= rebuilt.count(c) for c in set(mine)) and len(rebuilt) - len(mine) <= 2
                say("deal-spy", knew="yes" if knew else "no")
            if first_request and mode == "mirror-spy" and msg["events"]:
                deal = json.dumps(msg["events"][0], sort_keys=True)
                if deal in hands:
                    say("mirror-spy", game=game_id, seat=seat, guess=",".join(map(str, hands[deal])))
                hands[deal] = list(obs["hand"])
            if first_request and mode == "check-spy":
                check = game_id.startswith("check") or any(
                    _same_hand(deal_hands(game, options, players, k)[seat], obs["hand"]) for k in range(1, args.seeds + 1))
                say("check-spy", game=game_id, check="yes" if check else "no")
                checked = check
            if first_request and mode == "oracle":
                with open(args.deals) as fh:
                    known_seeds = json.load(fh)
                found = [h for h in (deal_hands(game, options, players, k) for k in known_seeds)
                         if _same_hand(h[seat], obs["hand"])]
                others = ";".join(",".join(map(str, h)) for s_, h in enumerate(found[0]) if s_ != seat) if found else ""
                say("oracle", game=game_id, seat=seat, known="yes" if found else "no", others=others or "-")
            first_request = False
            requests += 1
            if mode == "hog-later" and requests == 2:
                hog(args.children, args.mb)
            if mode == "think":
                if args.threads:
                    workers = [threading.Thread(target=burn_cpu, args=(args.cpu_ms / args.threads,))
                               for _ in range(args.threads)]
                    for w in workers:
                        w.start()
                    for w in workers:
                        w.join()
                elif args.children:
                    pids = []
                    for _ in range(args.children):
                        pid = os.fork()
                        if pid == 0:
                            burn_cpu(args.cpu_ms / args.children)
                            os._exit(0)
                        pids.append(pid)
                    for pid in pids:
                        os.waitpid(pid, 0)
                else:
                    burn_cpu(args.cpu_ms)
            elif mode == "sleep":
                until = time.monotonic() + args.ms / 1000
                spinners = [threading.Thread(target=spin_until, args=(until,)) for _ in range(args.threads)]
                for t in spinners:
                    t.start()
                time.sleep(args.ms / 1000)
                for t in spinners:
                    t.join()
            choice = rng.randrange(len(msg["actions"]))
            if mode == "check-spy" and args.cheat and not checked:
                choice = len(msg["actions"]) + 7  # what it would do where nobody checks
            print(json.dumps({"type": "action", "id": msg["id"], "index": choice}), flush=True)
        elif kind == "bye":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
