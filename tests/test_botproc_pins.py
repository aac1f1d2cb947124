"""Pins on what a bot leaves behind: the stderr log keeps the newest output within its cap, a
start-up answer that is not a ready gets the right violation kind, and exit statuses are worded
as documented. Unit tests of harness/play/botproc.py (and its pipes, botpipes.py) and the referee's handshake."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from harness.play import protocol
from harness.play.botproc import StderrLog, describe_status
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import RefereeConfig, play_game

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toygame import ToyGame  # noqa: E402

TOY = ToyGame()


def all_text(d: Path, name: str) -> str:
    """The log as one text: the rotated file, then the current one."""
    old = d / f"{name}.stderr.log.1"
    return (old.read_text() if old.exists() else "") + (d / f"{name}.stderr.log").read_text()


def test_an_oversized_write_keeps_its_end_not_its_start(tmp_path):
    log = StderrLog(str(tmp_path), "b", cap=1000)
    log.write(b"".join(b"%05d\n" % i for i in range(2000)))  # 12000 bytes in one write
    log.close()
    text = all_text(tmp_path, "b")
    assert len(text.encode()) <= 1000
    assert text.endswith("01999\n") and "00000" not in text


def test_rotation_keeps_a_contiguous_newest_suffix_within_the_cap(tmp_path):
    log = StderrLog(str(tmp_path), "b", cap=2000)
    lines = [f"{i:05d}\n" for i in range(1000)]
    for line in lines:
        log.write(line.encode())
    log.close()
    text = all_text(tmp_path, "b")
    assert len(text.encode()) <= 2000
    assert "".join(lines).endswith(text)  # no gap, nothing reordered, the newest kept
    assert len(text.encode()) >= 1000 - 6  # at least the newest half of the cap is kept


def test_reopening_a_log_appends_and_counts_what_is_there(tmp_path):
    first = StderrLog(str(tmp_path), "b", cap=100)
    first.write(b"a" * 40)
    first.close()
    second = StderrLog(str(tmp_path), "b", cap=100)
    second.write(b"b" * 20)  # 40 + 20 > 50: rotates
    second.close()
    assert (tmp_path / "b.stderr.log.1").read_bytes() == b"a" * 40
    assert (tmp_path / "b.stderr.log").read_bytes() == b"b" * 20
    third = StderrLog(str(tmp_path), "b", cap=100)
    third.write(b"c" * 10)  # 20 + 10 <= 50: appends
    third.close()
    assert (tmp_path / "b.stderr.log").read_bytes() == b"b" * 20 + b"c" * 10


def test_harness_notes_are_marked(tmp_path):
    log = StderrLog(str(tmp_path), "b", cap=1000)
    log.note("killed (timeout)")
    log.close()
    assert (tmp_path / "b.stderr.log").read_text() == "# tablebots: killed (timeout)\n"


@pytest.mark.parametrize("code,text", [
    (None, "still running"), (0, "exit code 0"), (3, "exit code 3"),
    (-signal.SIGKILL, "killed by SIGKILL"), (-signal.SIGXCPU, "killed by SIGXCPU (CPU time limit)"),
    (-signal.SIGSEGV, "killed by SIGSEGV (crashed; memory limit?)"), (-signal.SIGTERM, "killed by SIGTERM"),
    (-200, "killed by signal 200"),
])
def test_exit_status_wording(code, text):
    assert describe_status(code) == text


@pytest.mark.parametrize("line,kind", [
    (b'{"type":"ready","name":"x"}', None),
    (b'{"type":"ready"}', None),
    (b'{"type":"action","id":1,"index":0}', "protocol"),
    (b'["ready"]', "protocol"),
    (b'{"type":"ready"', "malformed"),
    (b'not json at all', "malformed"),
])
def test_the_kind_recorded_for_an_answer_to_hello(line, kind):
    try:
        protocol.parse_ready(line, 64)
    except protocol.BadMessage as exc:
        assert exc.kind == kind
    else:
        assert kind is None


READY_BOT = """
import sys
line = sys.stdin.readline()
sys.stdout.write({answer!r} + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    pass
"""


@pytest.mark.parametrize("answer,kind", [('{"type":"ready"', "malformed"), ('{"type":"hello"}', "protocol"),
                                         ("", "malformed")])
def test_a_wrong_or_malformed_ready_is_recorded_at_start_up_with_its_kind(tmp_path, answer, kind):
    script = tmp_path / "bot.py"
    script.write_text(READY_BOT.format(answer=answer))
    bad = BotSpec(name="bad-ready", command=(sys.executable, str(script)), cwd=str(tmp_path))
    good = BotSpec(name="good", command=(sys.executable, str(Path(__file__).resolve().parent.parent / "bots" /
                                                             "random_bot.py"), "--seed", "1"), cwd=str(tmp_path))
    cfg = RefereeConfig(time=TimeControls(init_ms=5000, move_ms=2000, bank_ms=0), limits=ResourceLimits(),
                        strikes=0, log_dir=str(tmp_path / "logs"))
    with BotPool(cfg) as pool:
        record = play_game(TOY, {"pile": 6}, 1, "g-ready", [good, bad], pool, cfg)
    assert [(v["seat"], v["kind"], v["decision"]) for v in record.violations] == [(1, kind, 0)]
    assert "start-up" in record.violations[0]["detail"]
    assert record.forfeits == [1]


def test_a_request_longer_than_the_pipe_reaches_a_frozen_bot_whole(tmp_path):
    """With the CPU clock a turn's request is written while the bot is still frozen; a request the
    pipe cannot hold (64 KiB) is finished after the thaw, so the bot reads all of it and answers
    in time (were the rest written before the thaw, the referee would wait on a frozen reader)."""
    from harness.play.botproc import OK, BotProcess

    bot = tmp_path / "length.py"
    bot.write_text("import sys\nfor line in sys.stdin:\n    print(len(line), flush=True)\n")
    proc = BotProcess(BotSpec("length", (sys.executable, str(bot)), cwd=str(tmp_path)), ResourceLimits(),
                      StderrLog(str(tmp_path), "length", 1 << 20))
    proc.start()
    try:
        assert proc.cpu_clock, "the CPU clock needs cgroups: the tests run as root (CI does)"
        assert proc.exchange(b"hello\n", proc.started_at + 5) == (OK, b"6")
        proc.freeze()
        for size in (100, 300_000):  # within the pipe, and well past it
            line = b"x" * size + b"\n"
            code, answer, clock = proc.ask(line, 5000)
            assert (code, answer) == (OK, str(size + 1).encode()), (code, answer, proc.detail)
            assert clock.ran_out == ""
    finally:
        proc.kill("test over")


def test_a_memory_events_file_that_cannot_be_read_charges_the_bot_no_oom_kill(tmp_path):
    """The OOM count is read from the bot's cgroup after every turn; a reading that fails (the
    file gone or unreadable, or a count that is not a number) must not stop the bot as over its
    memory: it counts as no kill, and a well-formed count is taken as it is."""
    import os

    from harness.play.cgroups import BotCgroup

    group = BotCgroup({"pids": str(tmp_path)})
    assert group.oom_kills() == 0 and group.over_memory() == ""  # no memory controller
    events = tmp_path / "memory.events"
    for text, kills in [("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n", 2), ("oom_kill x\n", 0), ("oom 1\n", 0)]:
        events.write_text(text)
        group._oom_fd = os.open(events, os.O_RDONLY)
        try:
            assert group.oom_kills() == kills, text
            assert (group.over_memory() != "") == (kills > 0), text
        finally:
            os.close(group._oom_fd)
    group._oom_fd = os.open(tmp_path, os.O_RDONLY)  # a read that fails (EISDIR)
    try:
        assert group.oom_kills() == 0 and group.over_memory() == ""
    finally:
        os.close(group._oom_fd)
        group._oom_fd = -1


def test_an_answer_without_an_action_is_told_the_first_eight_offered_actions():
    """A bot that answered something else than an action is shown what it was offered: the first
    eight, then ``...`` when there are more."""
    from harness.play.explain import explain_illegal

    def told(n: int) -> str:
        legal = [{"n": i} for i in range(1, n + 1)]
        return explain_illegal(TOY, None, b'{"type": "action"}', legal, 32, "no action")  # type: ignore[arg-type]

    assert told(0) == "no action"
    assert told(8) == "no action (offered: " + ", ".join(f"take{i}" for i in range(1, 9)) + ")"
    assert told(9) == "no action (offered: " + ", ".join(f"take{i}" for i in range(1, 9)) + ", ...)"
    assert told(30) == told(9)


def _toy_game_against(tmp_path: Path, name: str, source: str):  # type: ignore[no-untyped-def]
    """One toy game of the random bot (seat 0) against the bot ``source`` (seat 1): its record."""
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    bad = BotSpec(name=name, command=(sys.executable, str(script)), cwd=str(tmp_path))
    good = BotSpec(name="good", command=(sys.executable, str(Path(__file__).resolve().parent.parent / "bots" /
                                                             "random_bot.py"), "--seed", "1"), cwd=str(tmp_path))
    cfg = RefereeConfig(time=TimeControls(init_ms=5000, move_ms=2000, bank_ms=0), limits=ResourceLimits(),
                        strikes=0, log_dir=str(tmp_path / "logs"))
    with BotPool(cfg) as pool:
        return play_game(TOY, {"pile": 6}, 1, f"g-{name}", [good, bad], pool, cfg)


def test_what_a_bot_printed_after_breaking_the_handshake_is_kept_up_to_8192_bytes(tmp_path):
    """A runtime that fails to start explains itself over several lines: after a first line that is
    not a ready, the referee reads on for what followed, at most REST_BYTES (8192) of it. Lines of
    two bytes ("x" and its newline): 4096 of them fill it exactly."""
    [v] = _toy_game_against(tmp_path, "chatty", "import sys\nsys.stdin.readline()\n"
                            "sys.stdout.write('{\"type\": \"hello\"}\\n' + 'x\\n' * 6000)\n"
                            "sys.stdout.flush()\nfor line in sys.stdin:\n    pass\n").violations
    assert v["kind"] == "protocol" and v["seat"] == 1
    assert "(and 4096 more line(s): see what it sent)" in v["detail"], v["detail"]


def test_what_a_bot_prints_within_half_a_second_after_breaking_the_handshake_is_kept(tmp_path):
    """The referee reads on for REST_SECONDS (0.5 s) after the bad first line, not only what was
    already in the pipe: a runtime's reason that comes 0.1 s later is in the violation."""
    [v] = _toy_game_against(tmp_path, "jvmish", "import sys, time\nsys.stdin.readline()\n"
                            "print('Error occurred during initialization of VM', flush=True)\ntime.sleep(0.1)\n"
                            "print('Could not allocate compressed class space', flush=True)\ntime.sleep(5)\n").violations
    assert v["seat"] == 1 and "Could not allocate compressed class space" in json.dumps(v), v


def test_a_game_not_recording_messages_logs_no_event_and_one_recording_logs_them_all(tmp_path):
    """``record_messages`` off (``harness play`` without ``--log``): the record's log keeps only
    violations, none of the game's messages or events; on: the messages and the events."""
    random_bot = str(Path(__file__).resolve().parent.parent / "bots" / "random_bot.py")
    seats = [BotSpec(name=f"r{i}", command=(sys.executable, random_bot, "--seed", str(i)), cwd=str(tmp_path))
             for i in range(2)]
    logs = {}
    for record_messages in (False, True):
        cfg = RefereeConfig(time=TimeControls(init_ms=5000, move_ms=2000, bank_ms=0), limits=ResourceLimits(),
                            record_messages=record_messages)
        with BotPool(cfg) as pool:
            record = play_game(TOY, {"pile": 9}, 3, "g-quiet", seats, pool, cfg)
        assert record.violations == []
        logs[record_messages] = record.log
    assert logs[False] == []
    events = [e["event"] for e in logs[True] if e["type"] == "event"]
    assert events and {e["type"] for e in logs[True]} >= {"send", "recv", "event"}


def test_harness_doctor_run_by_root_says_bots_hold_no_root_power_and_their_files_are_bounded():
    """Two guarantees hold for any user: as root, each bot runs as a uid of its own (the
    unprivileged-uid layer, tested in tests/test_layers_play.py), and RLIMIT_FSIZE bounds its files."""
    import os

    from click.testing import CliRunner

    from harness.cli import cli

    assert os.geteuid() == 0, "the suite runs as root"
    out = CliRunner().invoke(cli, ["doctor"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "ok   bots never hold root's powers: each bot runs as an unprivileged uid of its own" in lines, out.output
    assert "ok   a bot's files are bounded in size (RLIMIT_FSIZE): scratch_mb per file" in lines, out.output
    off = sum(line.startswith("OFF") for line in lines)
    assert lines[-1] == ("every guarantee holds here" if not off else
                         f"{off} guarantee(s) do not hold here (docs/security.md)"), out.output


def test_the_flush_hint_is_given_for_a_timeout_at_hello_or_by_a_bot_that_never_answered():
    """`harness check-bot`'s beginner's hint: a timeout waiting for ``ready``, or one at a request
    from a bot that has not answered any, most likely means it never flushed; a timeout after it
    answered others does not."""
    from harness.play.conformance import hint

    def timeout(sent: str) -> dict[str, str]:
        return {"kind": "timeout", "detail": "no answer within 200 ms", "request": sent}

    hello, request = '{"type": "hello", "game": "toy"}', '{"type": "request", "id": 3}'
    assert "flush" in (hint(timeout(hello), answered_any=True) or "")  # type: ignore[arg-type]
    assert "flush" in (hint(timeout(hello), answered_any=False) or "")  # type: ignore[arg-type]
    assert "flush" in (hint(timeout(request), answered_any=False) or "")  # type: ignore[arg-type]
    assert hint(timeout(request), answered_any=True) is None  # type: ignore[arg-type]


def test_a_log_rotates_only_when_a_write_would_take_its_file_past_half_the_cap(tmp_path):
    """Each file holds up to half the cap: 500 bytes of 1000 fill one exactly; the next byte starts
    a new file, which then takes 499 more bytes without rotating again."""
    log = StderrLog(str(tmp_path), "b", cap=1000)
    for data in (b"a" * 500, b"b", b"c" * 499):
        log.write(data)
    log.close()
    assert (tmp_path / "b.stderr.log.1").read_bytes() == b"a" * 500
    assert (tmp_path / "b.stderr.log").read_bytes() == b"b" + b"c" * 499


def test_a_log_of_a_cap_of_two_or_three_bytes_keeps_one_byte_a_file(tmp_path):
    """Half the cap, at least one byte: a cap of 2 or 3 holds the newest byte in each file, so the
    two files never hold more than the cap (a cap under 2 still keeps one byte: never the whole
    write, as a slice [-0:] would)."""
    for cap in (1, 2, 3):
        log = StderrLog(str(tmp_path), f"c{cap}", cap=cap)
        log.write(b"abcdef")
        log.write(b"xyz")
        log.close()
        assert (tmp_path / f"c{cap}.stderr.log").read_bytes() == b"z", cap
        assert (tmp_path / f"c{cap}.stderr.log.1").read_bytes() == b"f", cap


def test_check_bot_counts_each_violation_of_the_reference_bots_once(tmp_path):
    """`harness check-bot` notes the reference bots' own violations (not the candidate's fault):
    the count is each one once, as the games recorded them."""
    from harness.play.conformance import conformance_games

    junk = tmp_path / "junk_bot.py"
    junk.write_text("import sys\nsys.stdin.readline()\nprint('{\"type\": \"ready\"}', flush=True)\n"
                    "for line in sys.stdin:\n    print('not json', flush=True)\n")
    random_bot = str(Path(__file__).resolve().parent.parent / "bots" / "random_bot.py")
    candidate = BotSpec(name="cand", command=(sys.executable, random_bot, "--seed", "1"), cwd=str(tmp_path))
    bad = BotSpec(name="ref", command=(sys.executable, str(junk)), cwd=str(tmp_path))
    cfg = RefereeConfig(time=TimeControls(init_ms=5000, move_ms=2000, bank_ms=0), limits=ResourceLimits(), strikes=0)
    recorded: list[int] = []
    result = conformance_games(TOY, candidate, 2, 1, 3, {"pile": 9}, cfg, [bad],
                               on_game=lambda i, seats, mine, record: recorded.append(
                                   sum(1 for v in record.violations if v["seat"] != mine)))
    assert result.violations == [] and sum(recorded) >= 1
    assert result.opponent_violations == sum(recorded)


def test_check_bot_times_the_candidates_starts_and_answers_apart(tmp_path):
    """`harness check-bot`'s start-up times are the candidate's ready messages and its latencies
    its other answers (the actions), counted from the games' own logs."""
    from harness.play.conformance import conformance_games

    random_bot = str(Path(__file__).resolve().parent.parent / "bots" / "random_bot.py")
    candidate = BotSpec(name="cand", command=(sys.executable, random_bot, "--seed", "1"), cwd=str(tmp_path))
    other = BotSpec(name="ref", command=(sys.executable, random_bot, "--seed", "2"), cwd=str(tmp_path))
    cfg = RefereeConfig(time=TimeControls(init_ms=5000, move_ms=2000, bank_ms=0), limits=ResourceLimits(), strikes=0,
                        record_messages=True)
    kinds: list[str] = []

    def seen(i, seats, mine, record):  # type: ignore[no-untyped-def]
        kinds.extend(e["msg"].get("type", "") for e in record.log if e["type"] == "recv" and e["seat"] == mine)

    result = conformance_games(TOY, candidate, 2, 1, 3, {"pile": 9}, cfg, [other], on_game=seen)
    assert kinds.count("ready") == len(result.startups_ms) >= 1
    assert kinds.count("action") == len(result.latencies_ms) > kinds.count("ready")


@pytest.mark.parametrize("left", [0.0002, 0.3])
def test_the_start_up_wait_sleeps_once_until_its_deadline_and_never_blocks_past_it(monkeypatch, left):
    """The start-up wait polls the bots' pipes until the earliest deadline; within a millisecond of
    it the poll's timeout must still be a wait of at least what is left, never negative: poll(2)
    with a negative timeout blocks until some bot writes, which a silent bot never does, and the
    game would hang instead of charging it with a timeout. The clock and poll are stand-ins here,
    so the last fraction of a millisecond is reached exactly. Farther from it, one poll waits the
    whole time left (no busy loop of short polls)."""
    import select as real_select
    from types import SimpleNamespace

    from harness.play import referee

    clock = [100.0]
    waits: list[float] = []

    class Poll:
        def register(self, fd, mask):
            pass

        def poll(self, timeout_ms):
            waits.append(timeout_ms)
            assert timeout_ms >= 0, f"poll({timeout_ms}) blocks until a bot writes: forever for a silent one"
            clock[0] += timeout_ms / 1000  # nothing arrives: the whole timeout passes
            return []

    class Silent:  # a bot that neither answers nor dies; its deadline `left` s away
        detail = ""
        started_at = 100.0 - 1.0 + left

        def poll_line(self):
            return None

        def wait_fds(self):
            return [0]

    monkeypatch.setattr(referee, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(referee, "select", SimpleNamespace(poll=Poll, POLLIN=real_select.POLLIN))
    table = referee._Table.__new__(referee._Table)
    table.config = RefereeConfig(time=TimeControls(init_ms=1000))
    late: list[tuple[int, float, tuple]] = []
    table._accept_ready = lambda seat, proc, line, got: late.append((seat, clock[0], got))
    bot = Silent()
    table.await_readys([(0, bot, b"hello")])
    assert len(waits) == 1 and left * 1000 <= waits[0] <= left * 1000 + 1  # waited out what was left, in ms
    assert late == [(0, clock[0], (referee.TIMEOUT, b""))] and clock[0] >= bot.started_at + 1.0
    assert bot.detail == "no ready within init_ms=1000"


@pytest.mark.parametrize("request_text", ["", "[1, 2]"])
def test_a_violation_with_no_request_of_its_own_is_reproduced_from_the_start(tmp_path, request_text):
    """Output nobody asked for is logged with no request (``""``); a stored request may be any
    JSON. Either way `harness reproduce` replays the game from its start instead of crashing,
    and says what the bot did."""
    from harness.games import get_game
    from harness.play.reproduce import reproduce_violation

    bot = BotSpec("r", (sys.executable, str(Path(__file__).resolve().parent.parent / "bots" / "random_bot.py")))
    violation = {"id": 1, "game_id": "g-000000000001", "seat": 0, "kind": "protocol",
                 "detail": "sent output when not asked (before this request)", "request": request_text}
    rep = reproduce_violation(get_game("crisps"), {}, TimeControls(init_ms=5000, move_ms=1000), ResourceLimits(),
                              bot, violation, [], 2)
    assert rep.lines[0] == "replaying violation #1 (protocol: sent output when not asked (before this request))"
    assert any(line.startswith("ready in ") for line in rep.lines) and rep.lines[-1].startswith("verdict: "), rep.text


def test_ranked_play_without_the_sandbox_says_which_and_why_in_one_line():
    """What ranked games lack (harness.play.doctor.ranked_play_problems): asked for no sandbox,
    the first problem says so in the words the contest prints ("sandbox: none"), never a bare
    None; with bwrap working here, the sandbox is no problem."""
    from harness.play.doctor import ranked_play_problems
    problems = ranked_play_problems(None)
    assert problems[0] == "no sandbox (sandbox: none): bots can read the store and each other"
    # bwrap works here (the project machine and CI install it; the sandbox tests need it too)
    assert not any(p.startswith("no sandbox") for p in ranked_play_problems("bwrap"))


@pytest.mark.parametrize("euid", [0, 1000])
def test_sandbox_auto_without_bwrap_warns_in_the_words_of_who_runs_the_harness(monkeypatch, euid):
    """`sandbox: auto` where bwrap cannot run falls back to no sandbox with one warning line that
    says what a bot can then do: started by root, it runs as a uid of its own; started by a user,
    it can do what that user can."""
    from types import SimpleNamespace

    from harness.play import sandbox

    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bwrap is not installed")
    monkeypatch.setattr(sandbox, "os", SimpleNamespace(geteuid=lambda: euid))
    chosen, warning = sandbox.resolve_sandbox("auto")
    what = sandbox.UNSANDBOXED_ROOT if euid == 0 else sandbox.UNSANDBOXED
    assert chosen is None and warning == f"warning: bots run without a sandbox (bwrap is not installed): {what}"


def test_the_sweep_removes_the_empty_bot_cgroups_of_dead_harness_processes_only(tmp_path):
    """``tablebots-PID`` cgroups whose harness process is gone are removed with their empty bot
    groups; a live harness's, a group still holding something, and groups of other names stay.
    (Plain directories stand in for the cgroup tree: the sweep thaws what has a freezer file and
    removes what is empty.)"""
    from harness.play.cgroups import _sweep_stale

    dead = "tablebots-99999999"  # no such process: past the kernel's largest pid
    for d in (f"{dead}/bot-a", f"{dead}/bot-b", f"tablebots-{os.getpid()}/bot-c", "tablebots-abc/bot-d", "other/bot-e",
              "tablebots-99999998/bot-f"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "tablebots-99999998" / "bot-f" / "cgroup.procs").write_text("123\n")  # not empty yet
    _sweep_stale(str(tmp_path))
    left = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_dir()}
    assert left == {"other", "other/bot-e", "tablebots-99999998", "tablebots-99999998/bot-f", "tablebots-abc",
                    "tablebots-abc/bot-d", f"tablebots-{os.getpid()}", f"tablebots-{os.getpid()}/bot-c"}
