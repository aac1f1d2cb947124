"""Unit tests of the referee's parts: protocol checks, bot processes, the pool and play_game's policy.

Games use the toy game of tests/toygame.py (no dependence on the real engines); bots are small
scripts written by the tests themselves. The end-to-end misbehaving-bot tests live in
tests/test_referee_e2e.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from harness.play import protocol
from harness.play.botproc import CRASH, OK, OVERSIZE, TIMEOUT, BotProcess, StderrLog, kill_remnants
from harness.play.limits import (
    TOKEN_VAR,
    BotSpec,
    ResourceLimits,
    SandboxUnavailable,
    TimeControls,
    check_sandbox,
    resolve_command,
)
from harness.play.pool import BotPool
from harness.play.referee import RefereeConfig, forfeit_ranking, play_game

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toygame import ToyGame  # noqa: E402

TOY = ToyGame()

# A configurable test bot: plays the first offered action, or misbehaves at chosen requests.
BOT_SRC = textwrap.dedent('''
    import json, os, sys, time
    mode = sys.argv[1]
    at = set(int(x) for x in sys.argv[2].split(",")) if len(sys.argv) > 2 and sys.argv[2] else set()
    out = sys.stdout
    def send(obj):
        out.write(json.dumps(obj) + "\\n"); out.flush()
    n = 0
    for line in sys.stdin:
        msg = json.loads(line)
        t = msg["type"]
        if t == "hello":
            if mode == "chatty":  # one write: the extra line is surely there before the first request
                out.write(json.dumps({"type": "ready"}) + "\\n" + json.dumps({"type": "hello-again"}) + "\\n")
                out.flush()
            else:
                send({"type": "ready", "name": "unit-" + mode})
        elif t == "request":
            n += 1
            with open("requests.jsonl", "a") as f:
                f.write(line)
            bad = n in at
            if bad and mode == "illegal":
                send({"type": "action", "id": msg["id"], "action": {"type": "take", "n": 99}})
            elif bad and mode == "exit":
                os._exit(4)
            elif bad and mode == "hang":
                time.sleep(60)
            elif bad and mode == "byvalue":
                send({"type": "action", "id": msg["id"], "action": dict(reversed(list(msg["actions"][-1].items())))})
            elif mode == "noisy":  # 3,000 characters of stderr a move, its request's id last
                sys.stderr.write("x" * 2990 + "id=%08d" % msg["id"] + "\\n"); sys.stderr.flush()
                send({"type": "action", "id": msg["id"], "index": 0})
            elif mode == "slow":  # computes: deadlines count CPU time where the harness freezes bots
                end = time.process_time() + 0.25
                while time.process_time() < end:
                    pass
                send({"type": "action", "id": msg["id"], "index": 0})
            else:
                send({"type": "action", "id": msg["id"], "index": 0})
        elif t == "bye":
            break
''')


@pytest.fixture
def bot(tmp_path):
    """bot(mode, at="") -> BotSpec running BOT_SRC in its own directory under tmp_path."""
    script = tmp_path / "unitbot.py"
    script.write_text(BOT_SRC)
    made = []

    def make(mode: str, at: str = "", name: str | None = None) -> BotSpec:
        d = tmp_path / f"home-{mode}-{len(made)}"
        d.mkdir()
        d.chmod(0o777)  # it logs its requests there; as root a bot runs as an unprivileged uid
        spec = BotSpec(name=name or f"unit-{mode}", command=("python3", str(script), mode, at), cwd=str(d))
        made.append(spec)
        return spec

    return make


def config(tmp_path, **kw) -> RefereeConfig:
    time_kw = {k: kw.pop(k) for k in ("init_ms", "move_ms", "bank_ms") if k in kw}
    return RefereeConfig(time=TimeControls(**time_kw), log_dir=str(tmp_path / "logs"), **kw)


def requests_seen(spec: BotSpec) -> list[dict]:
    path = Path(spec.cwd) / "requests.jsonl"
    return [orjson.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# --------------------------------------------------------------------------- protocol

def test_depth_check_counts_only_real_nesting():
    protocol.check_depth(b'{"a":[[[1]]]}', 4)
    with pytest.raises(protocol.BadMessage) as info:
        protocol.check_depth(b'{"a":[[[[1]]]]}', 4)
    assert info.value.kind == "malformed" and "nested" in info.value.detail
    # brackets inside strings (even after an escaped quote) do not count
    protocol.check_depth(b'{"a":"[[[[[[\\"[[[[[[","b":[1]}', 2)


def test_decode_reports_utf8_and_json_errors_as_malformed():
    with pytest.raises(protocol.BadMessage, match="UTF-8") as info:
        protocol.decode(b'{"a":"\xff\xfe"}', 64)
    assert info.value.kind == "malformed"
    with pytest.raises(protocol.BadMessage, match="not JSON"):
        protocol.decode(b'{"a":', 64)
    with pytest.raises(protocol.BadMessage, match="nested"):
        protocol.decode(b"[" * 100_000 + b"]" * 100_000, 64)
    assert protocol.decode(b'{"a":1}\r', 64) == {"a": 1}


LEGAL = [{"type": "take", "n": 1}, {"type": "take", "n": 2}, {"type": "flag", "on": True}]


@pytest.mark.parametrize("line,index", [
    (b'{"type":"action","id":5,"index":1}', 1),
    (b'{"type":"action","id":5,"action":{"n":2,"type":"take"}}', 1),
    (b'{"type":"action","id":5,"action":{"type":"flag","on":true},"comment":"extra fields are fine"}', 2),
])
def test_parse_action_accepts_index_or_value(line, index):
    assert protocol.parse_action(line, 5, LEGAL, 64) == index


@pytest.mark.parametrize("line,kind", [
    (b'{"type":"action","id":6,"index":1}', "protocol"),
    (b'{"type":"action","id":true,"index":1}', "protocol"),
    (b'{"type":"action","index":1}', "protocol"),
    (b'{"type":"action","id":5,"index":3}', "illegal"),
    (b'{"type":"action","id":5,"index":-1}', "illegal"),
    (b'{"type":"action","id":5,"action":{"type":"take","n":3}}', "illegal"),
    (b'{"type":"action","id":5,"action":{"type":"flag","on":1}}', "illegal"),
    (b'{"type":"action","id":5,"action":{"type":"take","n":1.0}}', "illegal"),
    (b'{"type":"action","id":5,"index":true}', "malformed"),
    (b'{"type":"action","id":5,"index":1,"action":{"type":"take","n":2}}', "malformed"),
    (b'{"type":"action","id":5}', "malformed"),
    (b'{"type":"act","id":5,"index":1}', "malformed"),
    (b'[1,2]', "malformed"),
    (b'{"type":"action","id":5,"action":[1]}', "malformed"),
])
def test_parse_action_rejections_have_the_right_kind(line, kind):
    with pytest.raises(protocol.BadMessage) as info:
        protocol.parse_action(line, 5, LEGAL, 64)
    assert info.value.kind == kind
    assert "\n" not in info.value.detail


def test_an_action_holding_a_list_matches_only_with_the_same_json_types_inside_it():
    """Python's == takes [3, 4.0] for [3, 4] and [1, true] for [1, 1]; JSON does not: a bot that
    names an offered play with a float or a boolean in its list has not named it."""
    legal = [{"type": "play", "cards": [3, 4]}, {"type": "play", "cards": [1, 1]}]
    assert protocol.parse_action(b'{"type":"action","id":5,"action":{"type":"play","cards":[1,1]}}', 5, legal, 64) == 1
    for cards in (b"[3,4.0]", b"[1,true]"):
        line = b'{"type":"action","id":5,"action":{"type":"play","cards":' + cards + b"}}"
        with pytest.raises(protocol.BadMessage) as info:
            protocol.parse_action(line, 5, legal, 64)
        assert info.value.kind == "illegal", cards


def test_an_illegal_actions_message_quotes_its_first_120_bytes():
    action = {"type": "take", "note": "x" * 500}
    line = orjson.dumps({"type": "action", "id": 5, "action": action})
    with pytest.raises(protocol.BadMessage) as info:
        protocol.parse_action(line, 5, LEGAL, 64)
    assert info.value.kind == "illegal"
    quoted = orjson.dumps(action)[:120].decode()
    assert info.value.detail == f"action {quoted + '...'!r} is not among the offered actions"


def test_parse_ready():
    assert protocol.parse_ready(b'{"type":"ready","name":"x"}', 64) == "x"
    with pytest.raises(protocol.BadMessage) as info:
        protocol.parse_ready(b'{"type":"action"}', 64)
    assert info.value.kind == "protocol"


def test_forfeit_ranking_puts_offenders_last_and_tied():
    assert forfeit_ranking([0, 1, 2], []) == [0, 1, 2]
    assert forfeit_ranking([0, 1, 2], [0]) == [2, 0, 1]
    assert forfeit_ranking([0, 1, 1, 3], [0, 3]) == [2, 0, 0, 2]
    assert forfeit_ranking([1, 0], [0, 1]) == [0, 0]


def test_resolve_command_maps_python_to_this_interpreter():
    assert resolve_command(["python3", "x.py"]) == [sys.executable, "x.py"]
    assert resolve_command(["python", "x.py"]) == [sys.executable, "x.py"]
    assert resolve_command(["node", "x.js"]) == ["node", "x.js"]
    assert resolve_command(["/usr/bin/python3", "x.py"]) == ["/usr/bin/python3", "x.py"]


# --------------------------------------------------------------------------- stderr log

def test_stderr_log_is_capped_rotates_and_keeps_the_newest(tmp_path):
    log = StderrLog(str(tmp_path), "a bot/with:odd name", cap=10_000)
    for i in range(2000):
        log.write(f"line {i:05d}\n".encode())
    log.close()
    files = list(tmp_path.iterdir())
    assert {f.name for f in files} == {"a_bot_with_odd_name.stderr.log", "a_bot_with_odd_name.stderr.log.1"}
    assert sum(f.stat().st_size for f in files) <= 10_000
    assert "line 01999" in (tmp_path / "a_bot_with_odd_name.stderr.log").read_text()
    big = StderrLog(str(tmp_path / "b"), "big", cap=1000)
    big.write(b"x" * 100_000)
    big.close()
    assert sum(f.stat().st_size for f in (tmp_path / "b").iterdir()) <= 1000


# --------------------------------------------------------------------------- bot processes

def start_script(tmp_path, source: str, **limits) -> BotProcess:
    script = tmp_path / f"s{len(list(tmp_path.iterdir()))}.py"
    script.write_text(textwrap.dedent(source))
    proc = BotProcess(BotSpec("s", ("python3", str(script)), cwd=str(tmp_path)),
                      ResourceLimits(**limits), StderrLog(None, "s", 1 << 20))
    proc.start()
    return proc


def test_line_cap_is_exact_with_and_without_newline(tmp_path):
    proc = start_script(tmp_path, """
        import sys
        sys.stdout.write("a" * 1000 + "\\n" + "b" * 1001 + "\\n"); sys.stdout.flush()
        sys.stdin.read()
    """, max_line_bytes=1000)
    try:
        deadline = time.monotonic() + 10
        assert proc.read_line(deadline) == (OK, b"a" * 1000)
        code, data = proc.read_line(deadline)
        assert code == OVERSIZE and len(data) <= 200
        assert len(proc._buf) <= 1001
    finally:
        proc.kill()
    proc = start_script(tmp_path, """
        import sys, time
        sys.stdout.write("c" * 5000); sys.stdout.flush(); time.sleep(60)
    """, max_line_bytes=1000)
    try:
        assert proc.read_line(time.monotonic() + 10)[0] == OVERSIZE
    finally:
        proc.kill()


def test_timeout_crash_and_closed_stdout_are_told_apart(tmp_path):
    hang = start_script(tmp_path, "import time; time.sleep(60)")
    exits = start_script(tmp_path, "import sys; sys.exit(7)")
    closes = start_script(tmp_path, "import os, time; os.close(1); time.sleep(60)")
    try:
        assert hang.read_line(time.monotonic() + 0.2)[0] == TIMEOUT
        assert exits.read_line(time.monotonic() + 10)[0] == CRASH
        assert "exit code 7" in exits.detail
        assert closes.read_line(time.monotonic() + 10)[0] == CRASH
        assert "stdout" in closes.detail
    finally:
        for p in (hang, exits, closes):
            p.kill()
    assert hang.exit_status() == -signal.SIGKILL


def test_exit_is_seen_even_if_a_grandchild_holds_stdout(tmp_path):
    proc = start_script(tmp_path, """
        import os, time
        if os.fork() == 0:
            os.setsid(); time.sleep(60)
        os._exit(0)
    """)
    try:
        start = time.monotonic()
        code, _ = proc.read_line(start + 30)
        assert code == CRASH  # from the pidfd, long before the 30 s deadline
    finally:
        proc.kill()


def test_kill_remnants_reaches_processes_outside_the_group_by_token():
    token = "unit-token-" + os.urandom(6).hex()
    env = dict(os.environ, **{TOKEN_VAR: token})
    child = subprocess.Popen(["sleep", "60"], env=env, start_new_session=True)
    try:
        # until it has exec'd, the child's /proc environ is still its parent's (no token): wait for
        # the exec, which a loaded machine may delay (a scan before it rightly finds nothing)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if token.encode() in Path(f"/proc/{child.pid}/environ").read_bytes():
                    break
            except OSError:
                pass
            time.sleep(0.01)
        assert kill_remnants([token]) >= 1
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()


def test_kill_remnants_scans_again_until_a_pass_finds_nobody(monkeypatch):
    """A remnant that forks while the scan runs: its child appears in the next pass, which kills
    it; the pass after finds nobody and ends the scan (scripted /proc, no real process killed)."""
    from harness.play import remnants

    passes = [["1", "4242", "self"], ["1", "4243"], ["1"]]  # 4243 forked by 4242 during the first pass
    listed: list[int] = []

    def listdir(path):  # type: ignore[no-untyped-def]
        assert path == "/proc"
        listed.append(1)
        return passes[min(len(listed), len(passes)) - 1]

    killed: list[int] = []
    monkeypatch.setattr(remnants.os, "listdir", listdir)
    monkeypatch.setattr(remnants, "_is_remnant", lambda pid, needles, pipes: pid in (4242, 4243))
    monkeypatch.setattr(remnants.os, "kill", lambda pid, sig: killed.append(pid))
    assert remnants.kill_remnants(["token"]) == 2
    assert killed == [4242, 4243] and len(listed) == 3


def test_sandbox_check(monkeypatch, tmp_path):
    check_sandbox(ResourceLimits())
    with pytest.raises(SandboxUnavailable, match="unknown sandbox"):
        check_sandbox(ResourceLimits(sandbox="docker"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        check_sandbox(ResourceLimits(sandbox="bwrap"))


def test_the_default_limits_reach_the_bot_as_documented(tmp_path):
    """docs/leagues.md: 256 open files; files up to ``scratch_mb`` MiB; 2048 MB of address space;
    3600 s of CPU; 4096 processes, as its cgroup's ``pids.max`` and, for a bot of its own uid
    (the harness is root), as RLIMIT_NPROC."""
    proc = start_script(tmp_path, """
        import resource, sys
        pids = "-"
        for line in open("/proc/self/cgroup"):
            _, controllers, path = line.rstrip("\\n").split(":", 2)
            if "pids" in controllers.split(","):
                try:
                    pids = open(f"/sys/fs/cgroup/pids{path}/pids.max").read().strip()
                except OSError:
                    pass
        print(*(resource.getrlimit(r)[0] for r in (resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE, resource.RLIMIT_AS,
                                                   resource.RLIMIT_CPU, resource.RLIMIT_NPROC)), pids, flush=True)
        sys.stdin.read()
    """)
    try:
        code, line = proc.read_line(time.monotonic() + 10)
        assert code == OK
        words = line.decode().split()
        assert words[:4] == ["256", str(ResourceLimits().scratch_mb << 20), str(2048 << 20), "3600"], words
        assert proc._cgroup is None or not proc._cgroup.max_processes or words[5] == "4096", words
        assert os.geteuid() != 0 or words[4] == "4096", words
        assert "4096" in words[4:], words  # at least one of the two layers here
    finally:
        proc.kill()


def test_resource_limits_reach_the_bot(tmp_path):
    proc = start_script(tmp_path, """
        import resource, sys
        print(resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_NOFILE)[0],
              resource.getrlimit(resource.RLIMIT_CPU)[0], resource.getrlimit(resource.RLIMIT_FSIZE)[0], flush=True)
        sys.stdin.read()
    """, memory_mb=512, open_files=64, cpu_seconds=100, scratch_mb=1)
    try:
        code, line = proc.read_line(time.monotonic() + 10)
        assert code == OK
        # the smallest scratch (1 MiB) is the largest file too
        assert line.split() == [str(512 << 20).encode(), b"64", b"100", str(1 << 20).encode()]
    finally:
        proc.kill()


# --------------------------------------------------------------------------- play_game

def test_the_log_keeps_the_last_1024_characters_of_a_moves_stderr(tmp_path, bot):
    cfg = config(tmp_path, record_messages=True)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {"pile": 30}, 3, "g-n", [bot("noisy"), bot("ok")], pool, cfg)
    kept = [e for e in record.log if e["type"] == "stderr"]
    assert kept and all(e["seat"] == 0 for e in kept)
    for e in kept:
        assert e["text"] == ("x" * 2990 + f"id={e['id']:08d}\n")[-1024:], e


def test_good_bots_play_with_forced_moves_applied_and_events_in_order(tmp_path, bot):
    a, b = bot("ok"), bot("ok")
    cfg = config(tmp_path, record_messages=True)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {"pile": 30}, 3, "g-1", [a, b], pool, cfg)
    assert record.violations == [] and record.forfeits == [] and record.ended_by == "rules"
    # each bot takes 1 at every request; with one counter left "take 1" is the only action
    assert any(e["type"] == "auto" and e["why"] == "only legal action" for e in record.log)
    all_events = [e["event"] for e in record.log if e["type"] == "event"]
    assert all_events[0]["type"] == "deal" and len(all_events) == record.decisions + 1
    for spec, seat in ((a, 0), (b, 1)):
        seen = requests_seen(spec)
        assert seen and all(len(r["actions"]) >= 2 for r in seen)  # C2: never asked about a forced move
        assert all(r["seat"] == seat for r in seen)
        assert [r["id"] for r in seen] == sorted({r["id"] for r in seen})
        # the events of successive requests join up: every public event once, in order
        events = [e for r in seen for e in r["events"]]
        assert events == all_events[:len(events)] and len(events) > 1
    sends = [e for e in record.log if e["type"] == "send"]
    assert [e["msg"]["type"] for e in sends[:4]] == ["hello", "hello", "start", "start"]
    assert sends[-1]["msg"]["type"] == "result" and sends[-1]["msg"]["ranking"] == record.ranking
    assert all("ms" in e for e in record.log if e["type"] == "recv")


def test_actions_by_value_are_accepted_whatever_the_key_order(tmp_path, bot):
    spec = bot("byvalue", at="1,2,3")
    cfg = config(tmp_path)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {}, 1, "g-v", [spec, bot("ok")], pool, cfg)
    assert record.violations == []


def test_forfeit_policy_ranks_offender_last_and_the_game_completes(tmp_path, bot):
    bad, good = bot("illegal", at="2"), bot("ok")
    cfg = config(tmp_path)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {"pile": 60}, 5, "g-f", [bad, good], pool, cfg)
        assert pool.started == 2
        again = play_game(TOY, {"pile": 60}, 5, "g-f2", [bad, good], pool, cfg)
        # the offender's process was replaced for its next game, and so was the other: no process
        # plays a deal (seed) twice
        assert pool.started == 4
        third = play_game(TOY, {"pile": 60}, 6, "g-f3", [good, bad], pool, cfg)
        assert pool.started == 5 and third.forfeits == [1]  # another deal: the good bot's process reused
    assert [v["kind"] for v in record.violations] == ["illegal"]
    v = record.violations[0]
    assert v["seat"] == 0 and v["bot"] == "unit-illegal" and v["game_id"] == "g-f" and v["seed"] == 5
    assert orjson.loads(v["request"])["type"] == "request" and '"n": 99' in v["received"]
    before = TOY.state_from_json(v["snapshot"])
    assert before.current_player == 0 and v["decision"] == before.turn
    assert record.forfeits == [0] and record.ranking == [1, 0] and record.ended_by == "rules"
    # the fallback is seeded: the same game plays out identically
    assert (again.scores, again.ranking, again.decisions) == (record.scores, record.ranking, record.decisions)
    assert len(requests_seen(bad)) == 6  # two requests in each game, then the seat was played by the fallback


def test_strikes_let_the_game_go_on_until_they_run_out(tmp_path, bot):
    bad = bot("illegal", at="1,3,4")
    cfg = config(tmp_path, strikes=2)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {"pile": 80}, 2, "g-s", [bad, bot("ok")], pool, cfg)
    assert [v["kind"] for v in record.violations] == ["illegal"] * 3
    assert record.forfeits == [0]
    assert len(requests_seen(bad)) == 4  # asked after the first two violations, not after the third
    bad2 = bot("illegal", at="1,3")
    with BotPool(cfg) as pool:
        record = play_game(TOY, {"pile": 80}, 2, "g-s2", [bad2, bot("ok")], pool, cfg)
    assert len(record.violations) == 2 and record.forfeits == []


def test_strikes_restart_a_crashed_process_within_the_game(tmp_path, bot):
    bad = bot("exit", at="2")
    cfg = config(tmp_path, strikes=1)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {"pile": 60}, 4, "g-r", [bad, bot("ok")], pool, cfg)
        assert pool.started == 3
    # the new process got a hello and a start, then requests; its own count restarted at 1, so it
    # crashed again at its second request: strike two forfeits the seat
    assert [v["kind"] for v in record.violations] == ["crash", "crash"]
    assert "exit code 4" in record.violations[0]["detail"]
    assert record.violations[0]["decision"] < record.violations[1]["decision"]
    assert record.forfeits == [0] and record.ranking[0] == 1
    assert len(requests_seen(bad)) == 4


def test_time_bank_pays_for_slow_moves(tmp_path, bot):
    slow = bot("slow")
    cfg = config(tmp_path, move_ms=100, bank_ms=20_000, record_messages=True)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {"pile": 12}, 1, "g-b", [slow, bot("ok")], pool, cfg)
    assert record.violations == []
    lefts = [r["time_left_ms"] for r in requests_seen(slow)]
    assert len(lefts) >= 2 and lefts[0] == 20_100 and all(x > y for x, y in zip(lefts, lefts[1:]))


def test_timeout_kills_and_forfeits(tmp_path, bot):
    hang = bot("hang", at="1")
    cfg = config(tmp_path, move_ms=500)  # long enough for the good bot on a busy machine
    with BotPool(cfg) as pool:
        record = play_game(TOY, {}, 1, "g-t", [bot("ok"), hang], pool, cfg)
    assert [v["kind"] for v in record.violations] == ["timeout"]
    assert record.forfeits == [1] and record.ranking == [0, 1]


def test_output_before_being_asked_is_a_protocol_violation(tmp_path, bot):
    chatty = bot("chatty")
    cfg = config(tmp_path)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {}, 1, "g-c", [chatty, bot("ok")], pool, cfg)
    assert [v["kind"] for v in record.violations] == ["protocol"]
    assert "hello-again" in record.violations[0]["received"]
    assert record.forfeits == [0]


def test_a_bot_that_cannot_start_is_a_crash_and_forfeits(tmp_path, bot):
    missing = BotSpec("ghost", ("/nonexistent/bot",))
    cfg = config(tmp_path)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {}, 1, "g-x", [bot("ok"), missing], pool, cfg)
    assert [v["kind"] for v in record.violations] == ["crash"] and "cannot start" in record.violations[0]["detail"]
    assert record.forfeits == [1] and record.ranking == [0, 1]


def test_same_bot_in_two_seats_gets_two_processes_reused_across_games(tmp_path, bot):
    spec = bot("ok")
    cfg = config(tmp_path)
    with BotPool(cfg) as pool:
        for i in range(3):
            record = play_game(TOY, {}, i, f"g-{i}", [spec, spec, spec], pool, cfg)
            assert record.violations == []
        assert pool.started == 3
        pids = [p.pid for p in pool.processes()]
        # other options mean another hello: new processes
        play_game(TOY, {"pile": 7}, 1, "g-o", [spec, spec], pool, cfg)
        assert pool.started == 5
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_stderr_goes_to_the_capped_log_and_into_violations(tmp_path):
    script = tmp_path / "noisy.py"
    script.write_text(textwrap.dedent('''
        import json, sys
        for line in sys.stdin:
            msg = json.loads(line)
            sys.stderr.write("thinking " * 2000 + "\\n"); sys.stderr.flush()
            if msg["type"] == "hello":
                print(json.dumps({"type": "ready"}), flush=True)
            elif msg["type"] == "request":
                sys.stderr.write("LAST WORDS\\n"); sys.stderr.flush()
                print("nope", flush=True)
    '''))
    spec = BotSpec("noisy", ("python3", str(script)))
    cfg = RefereeConfig(limits=ResourceLimits(stderr_bytes=50_000), log_dir=str(tmp_path / "logs"))
    with BotPool(cfg) as pool:
        record = play_game(TOY, {}, 1, "g-n", [spec, spec], pool, cfg)
    v = record.violations[0]
    assert v["kind"] == "malformed" and v["stderr_tail"].endswith("LAST WORDS\n") and len(v["stderr_tail"]) <= 2048
    logs = list((tmp_path / "logs").iterdir())
    assert sum(f.stat().st_size for f in logs) <= 50_000
    assert "# tablebots: started pid" in (tmp_path / "logs" / "noisy.stderr.log").read_text() or \
        any("# tablebots" in f.read_text() for f in logs)


def test_sandbox_unavailable_raises_before_any_process(tmp_path, bot, monkeypatch):
    spec = bot("ok")
    monkeypatch.setenv("PATH", str(tmp_path))
    cfg = RefereeConfig(limits=ResourceLimits(sandbox="bwrap"))
    with BotPool(cfg) as pool:
        with pytest.raises(SandboxUnavailable):
            play_game(TOY, {}, 1, "g-nb", [spec, spec], pool, cfg)
        assert pool.started == 0


def test_bwrap_sandbox_plays_and_writes_nothing_on_the_host(tmp_path):
    assert shutil.which("bwrap"), "bubblewrap is not installed (.ci/run installs it)"
    home = tmp_path / "home"
    home.mkdir()
    outside = tmp_path / "outside.txt"
    script = home / "probe.py"
    script.write_text(textwrap.dedent(f'''
        import json, sys
        def attempt(path):
            try:
                open(path, "w").write("x")
                return "ok"
            except OSError:
                return "blocked"
        result = attempt({str(outside)!r}) + "," + attempt("inside.txt")
        for line in sys.stdin:
            msg = json.loads(line)
            if msg["type"] == "hello":
                print(json.dumps({{"type": "ready", "name": result}}), flush=True)
            elif msg["type"] == "request":
                print(json.dumps({{"type": "action", "id": msg["id"], "index": 0}}), flush=True)
    '''))
    spec = BotSpec("probe", ("python3", str(script)), cwd=str(home))
    cfg = RefereeConfig(limits=ResourceLimits(sandbox="bwrap"), record_messages=True)
    with BotPool(cfg) as pool:
        record = play_game(TOY, {}, 1, "g-bw", [spec, spec], pool, cfg)
    assert record.violations == []
    readys = [e["msg"]["name"] for e in record.log if e["type"] == "recv" and e["msg"]["type"] == "ready"]
    # its own directory is read-only; the outside path, under /tmp, lands in the bot's private /tmp
    # (bwrap made its parent directories there to mount the bot's directory), never on the host
    assert [r.split(",")[1] for r in readys] == ["blocked", "blocked"]
    assert not outside.exists() and not (home / "inside.txt").exists()


DETACH_SRC = """
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if sys.argv[1] == "closepipes":
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
        os.execve("/bin/sleep", ["sleep", sys.argv[2]], {})
    time.sleep(0.3)
    os._exit(0)
"""


def sleepers(duration: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if duration.encode() in cmd and state != "Z":
                found.append(int(entry))
    return found


def wait_gone(duration: str) -> list[int]:
    deadline = time.monotonic() + 5
    while sleepers(duration) and time.monotonic() < deadline:
        time.sleep(0.02)
    return sleepers(duration)


def run_detacher(tmp_path, mode: str, duration: str, **limits) -> None:
    script = tmp_path / "detach.py"
    script.write_text(textwrap.dedent(DETACH_SRC))
    proc = BotProcess(BotSpec("d", ("python3", str(script), mode, duration), cwd=str(tmp_path)),
                      ResourceLimits(**limits), StderrLog(None, "d", 1 << 20))
    proc.start()
    assert proc.read_line(time.monotonic() + 10)[0] == CRASH
    proc.kill()


def test_a_grandchild_that_left_the_group_and_scrubbed_its_environment_is_killed_by_its_pipes(tmp_path):
    duration = f"3600.{os.getpid()}1"
    run_detacher(tmp_path, "keeppipes", duration)
    assert wait_gone(duration) == []


def test_a_grandchild_that_dropped_every_trace_escapes_only_without_cgroup_and_pid_namespace(tmp_path, monkeypatch):
    """The control: with the cgroup layer off and no PID namespace, this grandchild escapes."""
    import harness.play.botproc
    monkeypatch.setattr(harness.play.botproc, "cgroup_base", lambda: None)
    control = f"3600.{os.getpid()}2"
    try:
        run_detacher(tmp_path, "closepipes", control)
        assert sleepers(control), "the control: without a cgroup or a PID namespace this grandchild escapes"
    finally:
        for pid in sleepers(control):
            os.kill(pid, signal.SIGKILL)


def test_the_bot_cgroup_kills_a_grandchild_that_dropped_every_trace(tmp_path):
    from harness.play.cgroups import cgroup_base
    assert cgroup_base() is not None, "a writable cgroup tree must exist here (root in CI)"
    duration = f"3600.{os.getpid()}4"
    run_detacher(tmp_path, "closepipes", duration)
    assert wait_gone(duration) == []


def test_pid_namespace_kills_even_a_grandchild_that_dropped_every_trace(tmp_path, monkeypatch):
    import harness.play.botproc
    from harness.play.limits import unshare_pid_prefix
    assert unshare_pid_prefix(), "unshare --pid must work here (root in CI)"
    monkeypatch.setattr(harness.play.botproc, "cgroup_base", lambda: None)  # the namespace alone must do it
    duration = f"3600.{os.getpid()}3"
    run_detacher(tmp_path, "closepipes", duration, pid_namespace=True)
    assert wait_gone(duration) == []


def test_the_bot_cgroup_caps_processes_even_for_root(tmp_path):
    """RLIMIT_NPROC does not bind root; the cgroup's pids.max does."""
    script = tmp_path / "forker.py"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        n = 0
        for _ in range(50):
            try:
                if os.fork() == 0:
                    time.sleep(60); os._exit(0)
                n += 1
            except OSError:
                break
        print(n, flush=True)
        time.sleep(60)
    """))
    proc = BotProcess(BotSpec("f", ("python3", str(script)), cwd=str(tmp_path)),
                      ResourceLimits(processes=5), StderrLog(None, "f", 1 << 20))
    proc.start()
    try:
        code, line = proc.read_line(time.monotonic() + 20)
        assert code == OK
        assert int(line) < 5, f"forked {int(line)} children past a limit of 5 processes"
    finally:
        proc.kill()


def test_bots_die_with_the_referee_even_if_it_is_killed(tmp_path):
    """PR_SET_PDEATHSIG: a referee that dies abruptly leaves no bot running."""
    code = ("import os; from harness.play.botproc import *; from harness.play.limits import *\n"
            "p = BotProcess(BotSpec('h', ('sleep', '300')), ResourceLimits(), StderrLog(None, 'h', 100))\n"
            "p.start(); print(p.pid, flush=True); os._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        time.sleep(0.02)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the bot outlived its referee")


def test_a_line_sent_after_the_answer_was_read_is_found_before_the_next_request(tmp_path):
    """Output nobody asked for that reached the pipe after the answer was read (nothing of it is
    buffered yet) is read and returned before the next request, not taken as that request's
    answer: a bot that is not frozen between turns (no freezer here) can write at any time."""
    proc = start_script(tmp_path, """
        import sys, time
        out = sys.stdout
        sys.stdin.readline(); out.write("one\\n"); out.flush(); time.sleep(0.3); out.write("late\\n"); out.flush()
        sys.stdin.readline(); out.write("two\\n"); out.flush(); time.sleep(60)
    """)
    try:
        deadline = time.monotonic() + 10
        assert proc.exchange(b"q1\n", deadline) == (OK, b"one")
        import select

        waiter = select.poll()
        waiter.register(proc._out, select.POLLIN)
        assert waiter.poll(10_000) and not proc._buf  # the late line is in the pipe, none of it read
        assert proc.pending_output() == b"late"
        assert proc.exchange(b"q2\n", deadline) == (OK, b"two")
    finally:
        proc.kill()


def test_an_oversized_line_nobody_asked_for_is_found_before_the_next_request_by_its_first_bytes(tmp_path):
    """Output nobody asked for that is longer than a line may be (and reached the pipe after the
    answer was read) is returned as its first 200 bytes before the next request, and what was
    read of it is dropped: the next answer is read from a clean buffer."""
    proc = start_script(tmp_path, """
        import sys, time
        out = sys.stdout
        sys.stdin.readline(); out.write("one\\n"); out.flush(); time.sleep(0.3); out.write("x" * 3000); out.flush()
        time.sleep(60)
    """, max_line_bytes=1000)
    try:
        deadline = time.monotonic() + 10
        assert proc.exchange(b"q1\n", deadline) == (OK, b"one")
        import select

        waiter = select.poll()
        waiter.register(proc._out, select.POLLIN)
        assert waiter.poll(10_000) and not proc._buf  # the long line is in the pipe, none of it read
        assert proc.pending_output() == b"x" * 200
        assert not proc._buf and "longer than 1000 bytes" in proc.detail
    finally:
        proc.kill()


def test_exchange_handles_split_joined_and_oversize_answers(tmp_path):
    proc = start_script(tmp_path, """
        import sys, time
        out = sys.stdout
        sys.stdin.readline(); out.write("one\\ntwo\\n"); out.flush()       # two lines in one write
        sys.stdin.readline(); out.write("thr"); out.flush(); time.sleep(0.05); out.write("ee\\n"); out.flush()
        sys.stdin.readline(); out.write("x" * 3000); out.flush(); time.sleep(60)
    """, max_line_bytes=1000)
    try:
        deadline = time.monotonic() + 10
        assert proc.exchange(b"q1\n", deadline) == (OK, b"one")
        assert proc.pending_output() == b"two\n"  # the extra line is output nobody asked for
        assert proc.exchange(b"q2\n", deadline) == (OK, b"three")
        code, data = proc.exchange(b"q3\n", deadline)
        assert code == OVERSIZE and data == b"x" * 200
    finally:
        proc.kill()


def test_a_bot_that_stops_reading_cannot_block_the_referee(tmp_path):
    """A request bigger than the pipe buffer, to a bot that never reads: the write gives up at the deadline."""
    proc = start_script(tmp_path, """
        import sys, time
        sys.stderr.write("e" * 200_000); sys.stderr.flush()   # and floods stderr meanwhile
        time.sleep(60)
    """)
    try:
        start = time.monotonic()
        code, _ = proc.exchange(b"x" * 1_000_000 + b"\n", start + 2.0)
        assert code == TIMEOUT and "stdin" in proc.detail
        assert proc.stderr_tail() == "e" * 2048  # stderr was drained while waiting
    finally:
        proc.kill()


def test_stderr_since_a_mark_is_only_what_came_after_it(tmp_path):
    """What a violation quotes of the bot's stderr: the lines of that request, not earlier ones."""
    proc = start_script(tmp_path, """
        import sys
        for line in sys.stdin:
            sys.stderr.write(f"seen {line.strip()}\\n"); sys.stderr.flush()
            print("ok", flush=True)
    """)
    try:
        deadline = time.monotonic() + 10
        assert proc.exchange(b"talk\n", deadline) == (OK, b"ok")
        time.sleep(0.2)
        proc.drain_stderr()
        mark = proc.stderr_mark()
        assert proc.stderr_since(mark) == ""  # nothing new yet: not the whole tail again
        assert proc.exchange(b"again\n", deadline) == (OK, b"ok")
        time.sleep(0.2)
        proc.drain_stderr()
        assert proc.stderr_since(mark) == "seen again\n"
        assert proc.stderr_tail() == "seen talk\nseen again\n"
    finally:
        proc.kill()


def test_a_request_bigger_than_the_pipe_arrives_whole_and_once(tmp_path):
    """The first write takes what the pipe holds; the rest follows, never the start again."""
    proc = start_script(tmp_path, """
        import hashlib, sys
        for line in sys.stdin.buffer:
            print(len(line), hashlib.sha256(line).hexdigest(), flush=True)
    """)
    try:
        line = b"".join(b"%07d," % i for i in range(125_000)) + b"\n"  # 1 MB, no two chunks alike
        code, data = proc.exchange(line, time.monotonic() + 20)
        assert code == OK and data.decode() == f"{len(line)} {hashlib.sha256(line).hexdigest()}"
    finally:
        proc.kill()
