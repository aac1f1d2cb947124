"""The contest site's speed: its pages at 1,000,000 games and 1,000 teams, and 20 uploads at once
while the ladder plays, measured in one run.

Part 1 (synthetic): a contest with ``--teams`` teams, each with a checked version, and a ladder
store with ``--games`` finished 2-player Crisps games between them (written straight into the
store's tables, rated with random ratings; no game logs). The standings summary is rebuilt from
the store once (what `harness contest run` does when it starts), then each page is requested
``--requests`` times through the ASGI app in this process (Starlette's TestClient: routing,
templates, SQLite; no network) and its median and 95th percentile printed. Side by side: the
same table computed from the games per request (the seats' GROUP BY that `harness table` and
`harness serve` run), which is what the summary avoids.

Part 2 (real processes on 127.0.0.1): `harness contest serve` and `harness contest run` on a
small contest whose ladder is playing; 20 teams upload a bot at once (each its own thread, over
HTTP) while 5 more threads load the leaderboard and poll their uploads; every request's time is
kept and the slowest printed. Builds and checks run in the site's background worker meanwhile.

Run: python bench/contest.py [--games 1000000 --teams 1000] [--parts 1,2]
The machine is shared: say so, with its load, when quoting the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

warnings.filterwarnings("ignore", message=".*httpx.*")

from harness.contest.auth import add_team, new_token  # noqa: E402
from harness.contest.config import init_contest  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402
from harness.contest.ladder import LADDER_STORE, Standings  # noqa: E402
from harness.league.store import LeagueStore  # noqa: E402


def synthesize(root: Path, n_teams: int, n_games: int) -> dict[str, str]:
    """Teams with one active version each, and ``n_games`` finished games between them; returns two
    teams' tokens (the others' tokens are not kept)."""
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    tokens = {}
    now = time.time()
    with db.write() as conn:
        for i in range(n_teams):
            # a real token (a slow hash) only for the two teams that sign in; the others never do
            token, salt, digest = new_token(i + 1) if i < 2 else ("", b"-", b"-")
            conn.execute("INSERT INTO teams (id, name, salt, token_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                         (i + 1, f"team{i:04d}", salt, digest, now))
            conn.execute("INSERT INTO submissions (id, team_id, runtime, filename, size, status, created_at, "
                         "finished_at, activated_at) VALUES (?, ?, 'python', 'bot.py', 1000, 'active', ?, ?, ?)",
                         (i + 1, i + 1, now - 3600, now - 3000, now - 3000 + i))
            conn.execute("UPDATE teams SET current_submission = ? WHERE id = ?", (i + 1, i + 1))
            if i < 2:
                tokens[f"team{i:04d}"] = token
    db.close()
    with LeagueStore(root / LADDER_STORE) as store:
        with store.transaction():
            store.db.executemany("INSERT INTO bots (id, name) VALUES (?, ?)",
                                 [(i + 1, f"team{i:04d}") for i in range(n_teams)])
            store.db.executemany("INSERT INTO versions (id, bot_id, version, command, cwd, files, created_at) "
                                 "VALUES (?, ?, ?, '[]', '/', '[]', '')", [(i + 1, i + 1, f"s{i + 1}")
                                                                          for i in range(n_teams)])
        rng = random.Random(1)
        batch = 100_000
        for start in range(0, n_games, batch):
            games, seats = [], []
            for seq in range(start + 1, min(n_games, start + batch) + 1):
                a, b = rng.sample(range(1, n_teams + 1), 2)
                win = rng.random() < 0.5 + (b - a) / (4 * n_teams)
                games.append((seq, f"g-{seq:012x}", seq // 1000 + 1, 2, seq, "done", "rules", 60, 0.1,
                              "2026-01-01T00:00:00", json.dumps([a, b])))
                seats += [(seq, 0, a, 0 if win else 1, 3 if win else 1, 0), (seq, 1, b, 1 if win else 0, 1 if win else 3, 0)]
            with store.transaction():
                store.db.executemany("INSERT INTO games (seq, id, round, players, seed, status, ended_by, decisions, "
                                     "seconds, finished_at, versions) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", games)
                store.db.executemany("INSERT INTO seats (game_seq, seat, version_id, rank, score, forfeited) "
                                     "VALUES (?, ?, ?, ?, ?, ?)", seats)
        with store.transaction():
            store.save_ratings({i + 1: (25 + rng.gauss(0, 3), 0.8 + rng.random()) for i in range(n_teams)})
    return tokens


def timed(fn, n: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - start))
    times.sort()
    return statistics.median(times), p95(times)


def part1(tmp: Path, n_teams: int, n_games: int, n_requests: int) -> None:
    from starlette.testclient import TestClient

    from harness.contest.server import create_app

    root = tmp / "big"
    start = time.perf_counter()
    tokens = synthesize(root, n_teams, n_games)
    print(f"part 1: synthesized {n_teams:,} teams and {n_games:,} games in {time.perf_counter() - start:.0f} s")
    db = ContestDB(root / "contest.sqlite")
    standings = Standings(db, root / LADDER_STORE)
    start = time.perf_counter()
    standings.rebuild()
    print(f"  standings rebuilt from the store once (the ladder's start): {time.perf_counter() - start:.1f} s")
    db.close()
    first, second = list(tokens)
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        page = client.get("/signin").text
        csrf = page.split('name="csrf" value="')[1].split('"')[0]
        client.post("/signin", data={"csrf": csrf, "token": tokens[first]})
        pages = {"/ (leaderboard + latest games)": "/", "/api/leaderboard": "/api/leaderboard",
                 "/games": "/games", f"/h2h ({first} vs {second})": f"/h2h?a={first}&b={second}",
                 "/me (own versions, games, violations)": "/me",
                 "/me?result=lost&opponent=... (filtered)": f"/me?result=lost&opponent={second}",
                 f"/teams/{first} (per opponent, per size)": f"/teams/{first}",
                 "/api/games (bearer token)": "/api/games", "/api/violations (grouped)": "/api/violations"}
        print(f"  {'page':<42} {'median ms':>10} {'p95 ms':>8}  (n={n_requests}, in-process ASGI)")
        bearer = {"Authorization": f"Bearer {tokens[first]}"}
        for label, url in pages.items():
            headers = bearer if url.startswith("/api/g") or url.startswith("/api/v") else {}
            assert client.get(url, headers=headers).status_code == 200, url
            median, p95 = timed(lambda url=url, headers=headers: client.get(url, headers=headers), n_requests)
            print(f"  {label:<42} {median:>10.1f} {p95:>8.1f}")
    from harness.contest.config import load_contest
    from harness.contest.ladder_reads import LadderReader
    from harness.contest.team_reads import results_by_opponent

    cfg = load_contest(root)
    reader = LadderReader(root / LADDER_STORE, cfg.game, cfg.options)
    median, p95 = timed(lambda: results_by_opponent(reader, first), n_requests)
    print(f"  {'/teams/NAME: its results, uncached':<42} {median:>10.1f} {p95:>8.1f}  (the page reuses them until a "
          f"game is added)")
    conn = sqlite3.connect(root / LADDER_STORE)
    median, p95 = timed(lambda: conn.execute("SELECT version_id, count(rank), sum(rank = 0), sum(rank), "
                                             "sum(forfeited) FROM seats GROUP BY version_id").fetchall(),
                        max(3, n_requests // 10))
    conn.close()
    print(f"  {'side by side: the table from the games':<42} {median:>10.1f} {p95:>8.1f}  (the seats' GROUP BY alone, "
          f"per request, as harness serve does)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def part2(tmp: Path, n_uploaders: int = 20, warm_s: float = 5.0, load_s: float = 15.0) -> None:
    import httpx

    root = tmp / "live"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    tokens = {f"t{i:02d}": add_team(db, f"t{i:02d}") for i in range(n_uploaders + 2)}
    db.close()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    bot = (REPO / "bots" / "random_bot.py").read_bytes()
    serve = subprocess.Popen([sys.executable, "-m", "harness", "contest", "serve", str(root), "--port", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ladder = None
    try:
        for _ in range(100):
            try:
                if httpx.get(base + "/", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        house = list(tokens)[-2:]
        with httpx.Client(base_url=base, timeout=30) as api:
            for name in house:  # two teams in the ladder first, so it plays during the uploads
                r = api.post("/api/submissions", headers={"Authorization": f"Bearer {tokens[name]}"},
                             data={"runtime": "python"}, files={"file": ("bot.py", bot)})
                sid = r.json()["id"]
                while api.get(f"/api/submissions/{sid}", headers={"Authorization": f"Bearer {tokens[name]}"}
                              ).json()["status"] not in ("active", "failed"):
                    time.sleep(0.3)
        ladder = subprocess.Popen([sys.executable, "-m", "harness", "contest", "run", str(root), "--no-progress"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(warm_s)  # the ladder is playing
        times: list[tuple[str, float, int]] = []
        lock = threading.Lock()
        go = threading.Event()
        stop = threading.Event()

        def record(kind: str, fn) -> None:  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            r = fn()
            with lock:
                times.append((kind, time.perf_counter() - start, r.status_code))

        def uploader(name: str) -> None:
            with httpx.Client(base_url=base, timeout=30) as c:
                auth = {"Authorization": f"Bearer {tokens[name]}"}
                go.wait()
                start = time.perf_counter()
                r = c.post("/api/submissions", headers=auth, data={"runtime": "python"}, files={"file": ("bot.py", bot)})
                with lock:
                    times.append(("upload", time.perf_counter() - start, r.status_code))
                url = f"/api/submissions/{r.json().get('id')}"
                while not stop.is_set():
                    record("status poll", lambda: c.get(url, headers=auth))
                    time.sleep(0.5)

        def reader() -> None:
            with httpx.Client(base_url=base, timeout=30) as c:
                go.wait()
                while not stop.is_set():
                    record("leaderboard", lambda: c.get("/"))
                    record("games", lambda: c.get("/games"))

        threads = [threading.Thread(target=uploader, args=(n,)) for n in list(tokens)[:n_uploaders]]
        threads += [threading.Thread(target=reader) for _ in range(5)]
        for t in threads:
            t.start()
        go.set()
        time.sleep(load_s)
        stop.set()
        for t in threads:
            t.join()
        with httpx.Client(base_url=base) as c:
            games = c.get("/api/leaderboard").json()["games_done"]
        print(f"part 2: {n_uploaders} uploads at once + 5 readers for {load_s:g} s while the ladder plays "
              f"({games} games recorded so far)")
        for kind in ("upload", "status poll", "leaderboard", "games"):
            sample = sorted(t for k, t, _ in times if k == kind)
            codes = sorted({c for k, _, c in times if k == kind})
            if sample:
                print(f"  {kind:<12} n={len(sample):<5} median {1e3 * statistics.median(sample):7.1f} ms  "
                      f"p95 {1e3 * p95(sample):7.1f} ms  "
                      f"max {1e3 * sample[-1]:7.1f} ms  status {codes}")
        slowest = max(t for _, t, _ in times)
        print(f"  slowest request: {1e3 * slowest:.0f} ms ({'under' if slowest < 1 else 'OVER'} 1 s)")
    finally:
        for proc in (ladder, serve):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        for proc in (ladder, serve):
            if proc is not None:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)


def p95(sorted_times: list[float]) -> float:
    """The 95th percentile of sorted values (the nearest rank: never below the median)."""
    return sorted_times[max(0, math.ceil(0.95 * len(sorted_times)) - 1)]


def holders(root: Path) -> list[int]:
    """Processes (other than this one) whose working directory or an open file is under ``root``."""
    prefix = str(root.resolve()) + os.sep
    found = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        if pid == os.getpid():
            continue
        try:
            paths = [os.readlink(f"/proc/{pid}/cwd")]
            paths += [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue  # gone, or not ours to look at
        if any(p.startswith(prefix) for p in paths):
            found.append(pid)
    return found


def remove_tree(root: Path, timeout: float = 10.0) -> None:
    """Remove ``root`` once nothing writes into it: the servers' stragglers (a build, a bot, a
    worker that outlived its parent's SIGINT) are killed first, and the removal retried while
    files still appear (a process may be between its last write and its death)."""
    deadline = time.monotonic() + timeout
    while True:
        for pid in holders(root):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            shutil.rmtree(root)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--teams", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=100, help="requests per page in part 1")
    parser.add_argument("--parts", default="1,2")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.teams, args.requests = 2000, 20, 3
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    tmp = Path(tempfile.mkdtemp(prefix="bench-contest-"))
    try:
        if "1" in args.parts:
            part1(tmp, args.teams, args.games, args.requests)
        if "2" in args.parts:
            part2(tmp, *((2, 1.0, 2.0) if args.tiny else ()))
    finally:
        remove_tree(tmp)


if __name__ == "__main__":
    main()
