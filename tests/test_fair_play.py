"""Fair play against bot authors who want to win (docs/security.md): each attack is a real bot
(tests/bots/attacker.py) in a real league or game, sandboxed as leagues are by default.

What each test attacks, and what it found before the defence existed:
- deal secrets: a bot rebuilt every deal from the config and roster (its hand matched 4 of 4);
- one process per deal: a bot remembered a deal's hand and named its opponent's hand in the
  mirrored game; processes of one bot looked for each other through every shared place;
- no root: /proc/sys/kernel/core_pattern opened for writing as root;
- a bounded scratch: 1.5 GB written to a "256 MB" bot's /tmp.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path

import pytest
from cgroup_probe import CPU_CLOCK_HERE, needs_cpu_clock
from kit import attack_lines, busy

from harness.games import get_game
from harness.league.config import load_config
from harness.league.runner import RunOptions, run_league
from harness.league.schedule_roundrobin import build_schedule
from harness.league.store import LeagueStore
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import GameRecord, RefereeConfig, play_game
from harness.play.sandbox import bwrap_problem

REPO = Path(__file__).resolve().parent.parent
ATTACKER = REPO / "tests" / "bots" / "attacker.py"
RANDOM = REPO / "bots" / "random_bot.py"
RANDOM_SPEC = BotSpec(name="random", command=("python3", str(RANDOM), "--seed", "1"), cwd=str(REPO))

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap unusable: {bwrap_problem()}")


def league(tmp_path: Path, body: str, name: str = "fp", workers: int = 1) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nstore: {tmp_path / (name + '.sqlite')}\nworkers: {workers}\n" + body)
    return path


def run(path: Path, sandbox: str = "bwrap", max_games: int | None = None) -> None:
    """Play the league's pending games (at most ``max_games``) with the sandbox given."""
    text = path.read_text()
    if "limits:" not in text:
        path.write_text(text.replace("bots:", f"limits: {{sandbox: {sandbox}}}\nbots:", 1))
    summary = run_league(load_config(path), progress=False, options=RunOptions(max_games=max_games))
    assert not summary.errors, summary.errors


def findings(path: Path, bot: str, mode: str) -> list[dict[str, str]]:
    """The ``ATTACK mode k=v ...`` lines the bot wrote to its stderr log(s) in the league."""
    cfg = load_config(path)
    return attack_lines(Path(str(Path(cfg.store).with_suffix("")) + ".logs"), bot, mode)


@needs_bwrap
def test_a_bot_cannot_rebuild_the_deal_from_the_config_and_the_roster(tmp_path):
    path = league(tmp_path, f"""game: crisps
rounds: 1
seed: 5
bots:
  - {{name: random, command: python3 {RANDOM}}}
  - {{name: spy, command: [python3, {ATTACKER}, deal-spy, --league, fp, --seed, "5", --names, "random,spy"]}}
""")
    run(path)
    verdicts = [f["knew"] for f in findings(path, "spy", "deal-spy")]
    assert len(verdicts) == 2 and verdicts.count("yes") == 0, verdicts


def test_a_store_has_its_own_secret_and_every_game_replays_from_its_stored_seed(tmp_path):
    body = f"""game: crisps
rounds: 2
options: {{max_turns: 30}}
bots:
  - {{name: a, command: python3 {RANDOM} --seed 1}}
  - {{name: b, command: python3 {RANDOM} --seed 2}}
"""
    one, two = league(tmp_path, body, "one"), league(tmp_path, body, "two")
    seeds = []
    for path in (one, two):
        run(path, "none")
        cfg = load_config(path)
        for held in (Path(cfg.store), Path(cfg.store + "-logs")):  # the secret and every hand: owner only
            assert held.stat().st_mode & 0o077 == 0, oct(held.stat().st_mode)
        with LeagueStore(cfg.store) as store:
            assert len(store.deal_secret() or "") == 64
            rows = store.db.execute("SELECT id, seed, round FROM games ORDER BY seq").fetchall()
            public = {g.round: g.seed for g in build_schedule(cfg)}
            assert all(seed != public[rnd] for _, seed, rnd in rows)  # not the public hash
            seeds.append([seed for _, seed, _ in rows])
            # the seat orders of one deal share its seed (a duplicate deal)
            assert rows[0][1] == rows[1][1] != rows[2][1] == rows[3][1]
            for game_id, seed, _ in rows:  # the stored seed and log replay the game exactly
                seq = store.game(game_id).seq
                state = get_game("crisps").new_state(2, seed, cfg.options)
                from harness.report.tables import replay_actions
                for _seat, action, _how in replay_actions(store.game_log(seq)):
                    state.apply(action)
                assert state.is_terminal()
    assert seeds[0] != seeds[1]  # same config, same roster, another league: other deals


def test_a_store_made_before_secrets_keeps_its_played_deals_and_reseeds_the_rest(tmp_path):
    body = f"""game: crisps
rounds: 3
options: {{max_turns: 30}}
bots:
  - {{name: a, command: python3 {RANDOM} --seed 1}}
  - {{name: b, command: python3 {RANDOM} --seed 2}}
"""
    path = league(tmp_path, body)
    cfg = load_config(path)
    run(path, "none", max_games=3)
    with LeagueStore(cfg.store) as store:  # make it an old store: no secret, the public seeds
        public = [g.seed for g in build_schedule(cfg)]
        store.db.execute("DELETE FROM meta WHERE key = 'deal_secret'")
        for seq, seed in enumerate(public, 1):
            store.db.execute("UPDATE games SET seed = ? WHERE seq = ?", (seed, seq))
    run(path, "none")
    with LeagueStore(cfg.store) as store:
        assert store.deal_secret()
        stored = [r[0] for r in store.db.execute("SELECT seed FROM games ORDER BY seq")]
    # games 1-3 were played (deal 0 whole, deal 1 half): deals 0 and 1 keep their public seeds;
    # deal 2 had not been played: it was re-seeded from the new secret
    assert stored[:4] == public[:4] and stored[4] == stored[5] != public[4]


@needs_bwrap
def test_a_process_never_sees_the_mirrored_game_of_a_deal(tmp_path):
    path = league(tmp_path, f"""game: crisps
rounds: 4
options: {{max_turns: 60}}
bots:
  - {{name: random, command: python3 {RANDOM}}}
  - {{name: spy, command: python3 {ATTACKER} mirror-spy}}
""")
    run(path)
    cfg = load_config(path)
    correct = 0
    with LeagueStore(cfg.store) as store:
        for claim in findings(path, "spy", "mirror-spy"):
            seed = store.game(claim["game"]).seed
            truth = get_game("crisps").new_state(2, seed, cfg.options).observation(1 - int(claim["seat"]))["hand"]
            correct += claim["guess"].split(",") == [str(c) for c in truth]
    assert correct == 0


@needs_bwrap
@pytest.mark.parametrize("players", [2, 3, 4])
def test_no_process_plays_two_seat_orders_of_one_deal(tmp_path, players):
    names = "abcd"[:players]
    bots = "".join(f"  - {{name: {n}, command: python3 {ATTACKER} deal-log}}\n" for n in names)
    path = league(tmp_path, f"""game: dominoes
players: {players}
rounds: 2
options: {{max_turns: 12}}
bots:
{bots}""", workers=2)
    run(path)
    cfg = load_config(path)
    with LeagueStore(cfg.store) as store:
        seed_of = dict(store.db.execute("SELECT id, seed FROM games").fetchall())
        assert len(seed_of) == 2 * len(list(itertools.permutations(names)))
    for name in names:
        seen: dict[str, list[int]] = {}
        for f in findings(path, name, "deal-log"):
            seen.setdefault(f["process"], []).append(seed_of[f["game"]])
        # the bot plays every game; a process asked nothing in its last game (every move of its
        # seat forced) may be stopped before it ever reads that game's start, frozen as it is
        assert len(seed_of) - 3 <= sum(len(s) for s in seen.values()) <= len(seed_of)
        assert all(len(s) == len(set(s)) for s in seen.values()), seen


@needs_bwrap
def test_games_blocked_by_deal_let_a_worker_keep_one_process_per_seat_order_not_per_game(tmp_path):
    # 4 deals of Dominoes at 4 seats (96 games), one worker, the default idle bound: dispatched
    # in schedule order a bot needed a fresh process for nearly every game (24 consecutive games
    # of one deal); blocked by seat order, a process plays one game of each of the 4 deals
    names = "abcd"
    bots = "".join(f"  - {{name: {n}, command: python3 {ATTACKER} deal-log}}\n" for n in names)
    path = league(tmp_path, f"""game: dominoes
players: 4
rounds: 4
options: {{max_turns: 12}}
bots:
{bots}""")
    run(path)
    cfg = load_config(path)
    with LeagueStore(cfg.store) as store:
        seed_of = dict(store.db.execute("SELECT id, seed FROM games").fetchall())
    assert len(seed_of) == 96 and len(set(seed_of.values())) == 4
    for name in names:
        seen: dict[str, list[int]] = {}
        for f in findings(path, name, "deal-log"):
            seen.setdefault(f["process"], []).append(seed_of[f["game"]])
        assert all(len(s) == len(set(s)) for s in seen.values()), seen
        # 24 seat orders: 24 processes, each playing the 4 deals (a process whose seat had only
        # forced moves in its last game may never have read that game: hence >= 3)
        assert len(seen) <= 24 + 1, len(seen)
        assert sum(len(s) >= 3 for s in seen.values()) >= 22, seen


@needs_bwrap
def test_two_processes_of_one_bot_find_no_way_to_talk(tmp_path):
    path = league(tmp_path, f"""game: crisps
rounds: 2
options: {{max_turns: 20}}
bots:
  - {{name: random, command: python3 {RANDOM}}}
  - {{name: talker, command: python3 {ATTACKER} talk}}
""", workers=2)
    run(path)
    reports = findings(path, "talker", "talk")
    assert len(reports) == 4
    assert all(r == {"files": "0", "abstract": "0", "sysv": "0", "signals": "0"} for r in reports), reports


def test_without_the_sandbox_processes_of_one_bot_can_talk(tmp_path):
    """The control: the same bot finds the other process at once when nothing separates them."""
    path = league(tmp_path, f"""game: crisps
rounds: 2
options: {{max_turns: 20}}
bots:
  - {{name: random, command: python3 {RANDOM}}}
  - {{name: talker, command: python3 {ATTACKER} talk}}
""", workers=2)
    run(path, "none")
    reports = findings(path, "talker", "talk")
    assert any(r["files"] != "0" or r["abstract"] != "0" for r in reports), reports
    os.system(f"ipcrm -M {0x7AB1E5} 2>/dev/null")  # the SysV segment the bot made on the host


def play_attacker(tmp_path: Path, mode: str, *args: str, sandbox: str | None = "bwrap", move_ms: int = 3000,
                  **limits: object) -> tuple[GameRecord, list[dict[str, str]]]:
    """One game of the attacker against the random bot; its record and the attacker's findings."""
    config = RefereeConfig(time=TimeControls(move_ms=move_ms), log_dir=str(tmp_path / "logs"),
                           limits=dataclasses.replace(ResourceLimits(), sandbox=sandbox, **limits))  # type: ignore[arg-type]
    attacker = BotSpec(name=f"attacker-{mode}", command=("python3", str(ATTACKER), mode, *args), cwd=str(tmp_path))
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 40}, 1, f"g-{mode}", [attacker, RANDOM_SPEC], pool,
                           config)
    out = []
    for log in (tmp_path / "logs").glob(f"attacker-{mode}.stderr.log*"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(f"ATTACK {mode} "):
                out.append(dict(kv.split("=", 1) for kv in line.split()[2:]))
    return record, out


NO_ROOT_POWER = {"kernel.core_pattern": "blocked(13)", "kernel.hostname": "blocked(13)",
                 "vm.drop_caches": "blocked(13)", "CapEff": "0000000000000000", "mount": "blocked",
                 "sethostname": "blocked", "chown": "blocked", "raise_rlimit": "blocked"}


@needs_bwrap
def test_a_sandboxed_bot_holds_none_of_roots_powers(tmp_path):
    """As root (CI), the sandboxed bot opened /proc/sys/kernel/core_pattern for writing: one step
    from root on the host. Now it runs as an unprivileged uid: every root-only action fails.
    (Nothing is ever written: the bot only opens the files and closes them.)"""
    record, [facts] = play_attacker(tmp_path, "root")
    assert {k: facts[k] for k in NO_ROOT_POWER} == NO_ROOT_POWER
    assert facts["uid"] != "0" and facts["euid"] != "0"
    assert record.violations == []


def test_an_unsandboxed_bot_started_by_root_is_not_root(tmp_path):
    record, [facts] = play_attacker(tmp_path, "root", sandbox=None)
    assert {k: facts[k] for k in NO_ROOT_POWER if k != "sethostname"} == {
        k: v for k, v in NO_ROOT_POWER.items() if k != "sethostname"}
    assert facts["uid"] != "0" and facts["euid"] != "0"
    assert record.violations == []


@needs_bwrap
def test_scratch_space_is_bounded_by_scratch_mb_and_is_the_only_writable_place(tmp_path):
    """A "256 MB" bot wrote 1.5 GB to its /tmp and 0.8 GB to /: now /tmp (also /dev/shm and its
    HOME) holds scratch_mb, and nothing else is writable."""
    record, [facts] = play_attacker(tmp_path, "scratch", "--mb", "40", scratch_mb=16)
    assert facts == {"tmp": "16", "shm": "same", "root": "0", "cwd": "0", "home": "same", "var_tmp": "absent"}, facts
    assert record.violations == []  # a full scratch is the bot's own affair: it plays on


READER = """import json, sys
try:
    open(sys.argv[1], 'rb').read(16)
    found = 'READ'
except OSError:
    found = 'blocked'
sys.stderr.write('ATTACK read ' + found + chr(10)); sys.stderr.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m['type'] == 'hello':
        print(json.dumps({'type': 'ready'}), flush=True)
    elif m['type'] == 'request':
        print(json.dumps({'type': 'action', 'id': m['id'], 'index': 0}), flush=True)
    elif m['type'] == 'bye':
        break
"""


@needs_bwrap
def test_a_word_of_the_command_does_not_decide_what_the_sandbox_shows(tmp_path):
    """``python3 -c CODE ../runs/x.sqlite`` made the store's directory the bot's own, so the
    bot read the store (every seat's hands). Only the declared directory is shown now."""
    store = tmp_path / "runs" / "x.sqlite"
    store.parent.mkdir()
    store.write_bytes(b"SQLite format 3\0 every seat's hands")
    store.chmod(0o644)
    store.parent.chmod(0o755)
    config = RefereeConfig(time=TimeControls(move_ms=3000), log_dir=str(tmp_path / "logs"),
                           limits=ResourceLimits(sandbox="bwrap"))
    spy = BotSpec(name="reader", command=("python3", "-c", READER, str(store)), cwd=str(tmp_path))
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 20}, 1, "g-read", [spy, RANDOM_SPEC], pool, config)
    text = (tmp_path / "logs" / "reader.stderr.log").read_text()
    assert "ATTACK read blocked" in text and "ATTACK read READ" not in text, text[-2000:]
    assert record.violations == []


@pytest.mark.parametrize("command", [
    '[python3, -c, "import sys", runs/x.sqlite]',  # the store: every seat's hands
    "python3 mine/bot.py other/bot.py",  # another bot's program
    "python3 mine/bot.py /etc/shadow",
    "python3 mine/bot.py --config=other/bot.py",
])
def test_a_command_naming_files_outside_the_bots_directory_is_refused_at_load_and_submit(tmp_path, command):
    for d in ("mine", "other", "runs"):
        (tmp_path / d).mkdir()
    (tmp_path / "mine" / "bot.py").write_text("print('hi')\n")
    (tmp_path / "other" / "bot.py").write_text("print('hi')\n")
    (tmp_path / "runs" / "x.sqlite").write_text("secret")
    path = tmp_path / "l.yaml"
    path.write_text(f"name: l\ngame: crisps\nstore: runs/l.sqlite\nbots:\n  - {{name: a, command: python3 {RANDOM}}}\n"
                    f"  - {{name: b, command: python3 {RANDOM}}}\n")
    from click.testing import CliRunner

    from harness.cli import cli
    from harness.league.config import ConfigError

    bad = path.read_text() + f"  - {{name: c, command: {command}}}\n"
    (tmp_path / "bad.yaml").write_text(bad)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "bad.yaml")
    message = str(info.value)
    assert "bots[2].command" in message and "\n" not in message and "its own directory" in message
    words = command.strip("[]").split(", ") if command.startswith("[") else command.split()
    shell = " ".join(f"'{w}'" if " " in w else w for w in words)
    result = CliRunner().invoke(cli, ["submit", str(path), "c", shell, "--games", "1"])
    assert result.exit_code != 0 and "its own directory" in result.output and "Traceback" not in result.output
    assert path.read_text().count("name:") == 3  # the config is untouched


def test_a_command_word_too_long_for_a_file_name_is_one_line_naming_the_key(tmp_path):
    from harness.league.config import ConfigError

    path = tmp_path / "l.yaml"
    path.write_text(f"name: l\ngame: crisps\nbots:\n  - {{name: a, command: python3 {RANDOM}}}\n"
                    f"  - {{name: b, command: [python3, {RANDOM}, ../{'y' * 300}]}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "bots[1].command" in str(info.value) and "300 bytes" in str(info.value)
    path.write_text(path.read_text().replace(f"../{'y' * 300}", "y" * 300))  # an argument, not a file: fine
    assert load_config(path).bots[1].command[-1] == "y" * 300


@pytest.fixture
def busy_host():
    """Eight busy processes beside the league, as on a shared machine."""
    with busy(8, 300.0):
        yield


def _timeouts(path: Path) -> dict[str, int]:
    cfg = load_config(path)
    with LeagueStore(cfg.store) as store:
        rows = store.db.execute("SELECT b.name, count(*) FROM violations x JOIN versions v ON v.id = x.version_id "
                                "JOIN bots b ON b.id = v.bot_id WHERE x.kind = 'timeout' GROUP BY b.name").fetchall()
    return {name: n for name, n in rows}


@pytest.mark.serial  # a deadline measured: alone on the machine (tests/conftest.py)
@needs_bwrap
@needs_cpu_clock
def test_bots_using_half_their_time_are_never_charged_for_the_hosts_load(tmp_path, busy_host):
    """Two bots computing 50 ms a move at move_ms 100, with twice as many workers as cores and
    eight busy processes beside them, and a bot spinning threads at the table: they were
    charged 309 timeouts in 6 games (wall-clock deadlines). Their own CPU time is what counts now."""
    cores = os.cpu_count() or 1
    think = f"[python3, {ATTACKER}, think, --cpu-ms, '50']"
    path = league(tmp_path, f"""game: crisps
rounds: 2
options: {{max_turns: 24}}
time: {{move_ms: 100}}
bots:
  - {{name: thinker-a, command: {think}}}
  - {{name: thinker-b, command: {think}}}
  - {{name: spinner, command: [python3, {ATTACKER}, spin, --threads, '4']}}
""", workers=2 * cores)
    run(path)
    assert _timeouts(path).get("thinker-a", 0) == 0 and _timeouts(path).get("thinker-b", 0) == 0, _timeouts(path)


@pytest.mark.serial  # a deadline measured: alone on the machine (tests/conftest.py)
@needs_bwrap
@needs_cpu_clock
def test_a_bot_whose_children_spin_takes_no_cpu_from_its_opponent(tmp_path):
    """A bot forks three children that spin forever; its opponent, pinned to the same core,
    computes 50 ms of its 100: it was charged timeouts. The spinner is frozen between its turns."""
    path = league(tmp_path, f"""game: crisps
rounds: 2
options: {{max_turns: 30}}
time: {{move_ms: 100}}
bots:
  - {{name: thinker, command: [python3, {ATTACKER}, think, --cpu-ms, '50']}}
  - {{name: spinner, command: [python3, {ATTACKER}, spin, --children, '3']}}
""")
    run(path)
    assert _timeouts(path).get("thinker", 0) == 0, _timeouts(path)


@pytest.mark.serial  # a deadline measured: alone on the machine (tests/conftest.py)
@needs_cpu_clock
def test_a_bots_deadline_counts_the_cpu_time_of_its_children(tmp_path):
    """Three children computing 300 ms each while the bot waits: 900 ms of CPU against a
    300 ms budget is a timeout that says so."""
    record, _ = play_attacker(tmp_path, "think", "--children", "3", "--cpu-ms", "900", sandbox=None,
                              move_ms=300)
    [v] = [v for v in record.violations if v["seat"] == 0]
    # (on a loaded host its wall time, the children waiting for a CPU while it waits, may run out
    # first: either way it is charged what its tree used, and says so)
    assert v["kind"] == "timeout" and v["clock"]["ran_out"] in ("cpu", "wall"), v
    assert v["clock"]["charged_ms"] >= 300 and v["clock"]["cpu_ms"] > 0 and "CPU time" in v["detail"]
    assert [v for v in record.violations if v["seat"] == 1] == []


def _serve(tmp_path: Path):
    import threading

    from harness.report.serve import make_server

    path = league(tmp_path, f"""game: crisps
options: {{max_turns: 20}}
bots:
  - {{name: a, command: python3 {RANDOM} --seed 1}}
  - {{name: b, command: python3 {RANDOM} --seed 2}}
""")
    run(path, "none")
    server = make_server(load_config(path), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _get(port: int, target: str, host: str | None) -> tuple[int, str]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest("GET", target, skip_host=True)
    if host is not None:
        conn.putheader("Host", host)
    conn.endheaders()
    response = conn.getresponse()
    body = response.read().decode("utf-8", "replace")
    conn.close()
    return response.status, body


def test_serve_answers_only_requests_addressed_to_it(tmp_path):
    """DNS rebinding: a page at evil.example points its name at 127.0.0.1 and reads the pages."""
    server = _serve(tmp_path)
    port = server.server_address[1]
    try:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
            assert _get(port, "/", host)[0] == 200, host
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
            status, body = _get(port, "/", host)
            assert status == 421 and "localhost" in body and "<td" not in body, (host, status)
        status, body = _get(port, "/", None)  # no Host at all: HTTP/1.1 requires one (uvicorn's 400)
        assert status == 400 and "<td" not in body, status
        status, body = _get(port, "/api/status", "rebind.attacker.test")
        assert status == 421 and "latest" not in body
    finally:
        server.shutdown()
        server.server_close()


def test_serve_gives_a_clean_404_for_an_id_too_big_for_the_store(tmp_path):
    server = _serve(tmp_path)
    port = server.server_address[1]
    try:
        for target in ("/violations/" + "9" * 20 + ".html", "/bots/" + "9" * 20 + ".html",
                       "/violations/99999999.html"):
            status, body = _get(port, target, f"127.0.0.1:{port}")
            assert status == 404 and "Traceback" not in body, (target, status)
        assert _get(port, "/", f"127.0.0.1:{port}")[0] == 200  # and the server still answers
    finally:
        server.shutdown()
        server.server_close()


def test_serve_sends_the_contest_sites_security_headers(tmp_path):
    """The league's pages (every seat's hands) are framed by no other site, and cached nowhere."""
    import http.client

    from harness.report.web import SECURITY_HEADERS

    server = _serve(tmp_path)
    port = server.server_address[1]
    try:
        for target in ("/", "/api/status", "/no-such-page", "/bots/x.html"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", target)
            response = conn.getresponse()
            response.read()
            conn.close()
            for name, value in SECURITY_HEADERS:
                assert response.getheader(name.decode()) == value.decode(), (target, name)
            assert response.status == (200 if target in ("/", "/api/status") else 404), target
    finally:
        server.shutdown()
        server.server_close()


def test_an_adaptive_league_deals_from_its_secret_too(tmp_path):
    from harness.league.schedule_adaptive import _deal_seed
    body = f"""game: crisps
schedule: {{kind: adaptive, games: 8}}
options: {{max_turns: 30}}
bots:
  - {{name: a, command: python3 {RANDOM} --seed 1}}
  - {{name: b, command: python3 {RANDOM} --seed 2}}
"""
    one, two = league(tmp_path, body, "one"), league(tmp_path, body, "two")
    seeds = []
    for path in (one, two):
        run(path, "none")
        cfg = load_config(path)
        with LeagueStore(cfg.store) as store:
            rows = store.db.execute("SELECT seed, round FROM games WHERE status = 'done' ORDER BY seq").fetchall()
        assert len(rows) == 8
        # what a bot could compute from the config and the roster is never the deal played
        assert all(seed != _deal_seed(None, cfg.name, cfg.seed, rnd, ["a", "b"]) for seed, rnd in rows)
        seeds.append([seed for seed, _ in rows])
    assert seeds[0] != seeds[1]  # same config and roster, another store: other deals


# The fair-play rules are on in every league; only a benchmark of their cost turns one off, by
# an explicit parameter (RefereeConfig.fair_play): no environment variable reaches the referee.
_FAIR_PLAY_SWITCHES = """
import json, sys
from harness.games import get_game
from harness.play.limits import BotSpec, ResourceLimits
from harness.play.pool import BotPool
from harness.play.referee import FairPlay, RefereeConfig, play_game

specs = [BotSpec(name=f"r{i}", command=(sys.executable, sys.argv[1], "--seed", str(i)), cwd="/") for i in range(2)]
out = {}
for name, rules in (("default", FairPlay()), ("reuse", FairPlay(process_per_deal=False)),
                    ("wall", FairPlay(cpu_clock=False))):
    config = RefereeConfig(limits=ResourceLimits(sandbox=None), fair_play=rules)
    with BotPool(config) as pool:
        for order in (specs, specs[::-1]):  # the two seat orders of one deal (one seed)
            play_game(get_game("crisps"), {"max_turns": 20}, 7, "g", order, pool, config)
        out[name] = [pool.started, sorted({p.cpu_clock for p in pool.processes()})]
print(json.dumps(out))
"""


def test_fair_play_is_off_only_by_an_explicit_parameter_never_by_the_environment(tmp_path):
    import json
    import subprocess
    import sys

    env = {**os.environ, "TABLEBOTS_BENCH_BASELINE": "wall-clock,reuse-deals"}
    done = subprocess.run([sys.executable, "-c", _FAIR_PLAY_SWITCHES, str(RANDOM)], env=env, cwd=str(REPO),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    clock = CPU_CLOCK_HERE
    assert out["default"] == [4, [clock]]  # one process per seat order of the deal, the CPU clock where it can be
    assert out["reuse"] == [2, [clock]]  # the benchmark's baseline: reused across the deal's seat orders
    assert out["wall"] == [4, [False]]  # the benchmark's baseline: wall-clock deadlines, never frozen
