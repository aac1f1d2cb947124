"""Building and checking an upload, in a background worker: never inside a web request.

An upload goes ``building`` -> ``checking`` -> ``active`` (the team's current version, in the
ladder's roster) or ``failed``, with its build log and check log kept for its team.

- The build runs the runtime's build command in the upload's directory inside the bubblewrap
  sandbox of :mod:`harness.play.sandbox` (no network, only the system's runtime, the public
  files of ``/etc`` and a copy of the upload's files in a tmpfs of :data:`BUILD_OUTPUT_MB`), as
  an unprivileged uid, Python in isolated mode (``-I``: an upload's ``py_compile.py`` is not
  imported), in one envelope (:func:`build_upload`); what it leaves comes back through a capped
  stream, regular files and directories only (:mod:`harness.contest.build_output`).
- The check plays the play stage's conformance games (:mod:`harness.play.conformance`) at every
  table size of the contest, the candidate in each seat once, against the reference bots, under
  the contest's time controls and limits: any violation fails the upload, and the log shows the
  request, the answer and the bot's own stderr (never an opponent's).

One worker thread takes uploads in order and runs each one's build and check in a child process
(``python -m harness.contest.build DIR ID``): the conformance games' referee runs there, not on
the site's interpreter, so pages do not wait for it (the GIL), and a crash there fails one upload,
never the site. One at a time: two cores are not shared by parallel builds.

Run by hand, ``python -m harness.contest.build DIR ID`` builds and checks upload ID again.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from harness.contest.build_output import OutputReader, clean_output, replace_with_output, upload_files
from harness.contest.config import ContestConfig, Runtime
from harness.contest.db import ContestDB
from harness.league.run_settings import ScheduleKind
from harness.play.cgroups import BotCgroup, CgroupBase, cgroup_base
from harness.play.limits import BotSpec, ResourceLimits, TimeControls, limit_setter, resolve_command
from harness.play.privileges import bot_uid
from harness.play.sandbox import bwrap_command, bwrap_userns, resolve_sandbox, sandbox_env

__all__ = ["BuildWorker", "build_upload", "check_upload", "isolated_python", "sandboxed_build_command"]

LOG_CAP = 64 * 1024
#: the build's private /tmp (a compiler's temporary files), in MB
BUILD_SCRATCH_MB = 512
#: the build's output: its directory is a tmpfs of this size in the sandbox, and no file it
#: writes may be larger (RLIMIT_FSIZE); what it leaves is copied back through a capped pipe
BUILD_OUTPUT_MB = 64
#: files (and directories) a build may leave
BUILD_FILES = 1000
#: processes and threads of the whole build (its cgroup's pids.max, else RLIMIT_NPROC)
BUILD_PROCESSES = 64
#: where the upload's sources are seen, read-only, inside the sandbox
_SOURCES = "/.upload"


def sandboxed_build_command(argv: list[str], workdir: Path, sandbox: str | None, *, userns: bool | None = None,
                            uid: int | None = None, out_fd: int = -1) -> list[str]:
    """``argv`` run in ``workdir`` inside the sandbox, its output written into a size-capped place.

    In the sandbox ``workdir`` is a fresh tmpfs of :data:`BUILD_OUTPUT_MB` holding a copy of the
    upload (seen read-only at ``/.upload``); the build runs there, and when it succeeds what it
    left is written as a tar to the descriptor ``out_fd`` (which the build itself does not get):
    nothing the build writes lands on the host's disk except through that capped stream.
    ``userns`` (default: whether bwrap runs unprivileged here): bwrap runs as ``uid`` (the
    caller drops to it) and the build in a user namespace of its own; else, run by root, bwrap
    drops the build to ``uid`` with ``setpriv``."""
    if sandbox != "bwrap":
        return argv
    wd = str(workdir)
    if userns is None:
        userns = bwrap_userns()
    script = (f'cp -R {_SOURCES}/. . || exit 125; "$@" {out_fd}>&-; status=$?; '
              f'if [ $status -eq 0 ]; then tar -cf - . >&{out_fd} || exit 124; fi; exit $status')
    cmd = bwrap_command(["/bin/bash", "-c", script, "build", *argv], wd, [wd], BUILD_SCRATCH_MB, userns, uid,
                        BUILD_PROCESSES)
    # (bash: dash takes no descriptor over 9) the upload's files are seen at /.upload, its directory is a
    # tmpfs of BUILD_OUTPUT_MB
    for i in range(len(cmd) - 3, -1, -1):
        if cmd[i:i + 3] == ["--ro-bind", wd, wd]:
            cmd[i:i + 3] = ["--ro-bind", wd, _SOURCES, "--perms", "1777", "--size", str(BUILD_OUTPUT_MB << 20),
                            "--tmpfs", wd]
            break
    return cmd


def _cap(text: str) -> str:
    if len(text) <= LOG_CAP:
        return text
    return text[:LOG_CAP // 2] + f"\n[... {len(text) - LOG_CAP} characters cut ...]\n" + text[-LOG_CAP // 2:]


def isolated_python(argv: list[str]) -> list[str]:
    """A Python build command in isolated mode (``-I``): neither the upload's directory nor the
    environment is on ``sys.path``, so an upload's ``py_compile.py`` cannot stand in for the
    standard library's when ``python3 -m py_compile`` runs."""
    if argv and os.path.basename(argv[0]).startswith("python") and "-I" not in argv[1:2]:
        return [argv[0], "-I", *argv[1:]]
    return argv


def build_upload(cfg: ContestConfig, runtime: Runtime, workdir: Path) -> tuple[bool, str]:
    """Run the runtime's build in ``workdir`` in the sandbox, in one envelope: (built, log).

    The envelope: an unprivileged uid (as bots), its own cgroup where the harness may make one
    (memory of the whole tree, ``pids.max``), RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, a wall-clock
    timeout, output into a tmpfs of :data:`BUILD_OUTPUT_MB` copied back through a capped stream
    (:mod:`harness.contest.build_output` unpacks it: regular files and directories only)."""
    if runtime.build is None:
        return True, "nothing to build for this runtime\n"
    sandbox, warning = resolve_sandbox(cfg.limits.get("sandbox", "auto"))
    argv = isolated_python(resolve_command(runtime.build))
    userns = bwrap_userns() if sandbox == "bwrap" else False
    uid = bot_uid(f"build:{workdir.name}")  # as root, a build never holds root's powers
    if uid is not None:
        for path in [workdir, *workdir.rglob("*")]:
            os.chown(path, uid, uid, follow_symlinks=False)
    header = f"$ {' '.join(runtime.build)}\n" + (f"{warning}\n" if warning else "")
    before = upload_files(workdir) if sandbox != "bwrap" else None  # (what a failed build leaves is removed)
    read_fd, write_fd = os.pipe() if sandbox == "bwrap" else (-1, -1)
    cmd = sandboxed_build_command(argv, workdir, sandbox, userns=userns, uid=uid, out_fd=write_fd)
    limits = ResourceLimits(memory_mb=cfg.build_memory_mb, cpu_seconds=cfg.build_seconds, processes=BUILD_PROCESSES,
                            open_files=1024, scratch_mb=BUILD_OUTPUT_MB)
    base = cgroup_base()
    group = BotCgroup.create(base, f"build-{workdir.name}-{os.getpid()}", BUILD_PROCESSES,
                             cfg.build_memory_mb + BUILD_OUTPUT_MB + BUILD_SCRATCH_MB)
    start = time.monotonic()
    try:
        # unsandboxed, or bwrap in a user namespace: the build (or bwrap) runs as the uid itself
        drop = uid if sandbox != "bwrap" or userns else None
        proc = subprocess.Popen(cmd, cwd=workdir, env=sandbox_env(dict(os.environ)), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                pass_fds=(write_fd,) if write_fd >= 0 else (),
                                preexec_fn=limit_setter(limits, group, drop, nproc=not (sandbox == "bwrap" and userns)))
    except OSError as exc:
        _close(write_fd, read_fd)
        _release(group, base)
        return False, header + f"cannot start the build: {exc}\n"
    _close(write_fd)
    output = OutputReader(read_fd, BUILD_OUTPUT_MB << 20, lambda: _kill_group(proc)) if read_fd >= 0 else None
    try:
        out, _ = proc.communicate(timeout=cfg.build_seconds)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        if output is not None:
            output.join()
        _release(group, base)
        return False, _cap(header + out.decode("utf-8", "replace")) + (
            f"\nbuild stopped: it took more than {cfg.build_seconds} s (the contest's build.seconds)\n")
    data = output.join() if output is not None else None
    oom = group.oom_kills() if group is not None else 0
    _release(group, base)
    # the server's paths are no business of the team's: the upload's directory shows as relative
    text = _cap(header + out.decode("utf-8", "replace").replace(f"{workdir}/", ""))
    took = time.monotonic() - start
    if proc.returncode != 0 or oom:
        why = f"signal {-proc.returncode}" if proc.returncode < 0 else _WRAPPER_EXITS.get(
            proc.returncode, f"exit status {proc.returncode}") if read_fd >= 0 else f"exit status {proc.returncode}"
        if oom:
            why += f"; its processes together went over {cfg.build_memory_mb} MB (build.memory_mb)"
        return False, text + f"\nbuild failed ({why}, {took:.1f} s)\n"
    problem = (output.problem if output is not None and output.problem else
               replace_with_output(workdir, data, BUILD_FILES, BUILD_OUTPUT_MB << 20) if data is not None else
               clean_output(workdir, BUILD_FILES, BUILD_OUTPUT_MB << 20, before))
    if problem:
        return False, text + f"\nbuild failed: {problem}\n"
    return True, text + f"\nbuild ok ({took:.1f} s)\n"


#: what the sandbox's wrapper script's own exit statuses mean
_WRAPPER_EXITS = {124: "what it left could not be copied back (tar failed: see above)",
                  125: "the upload could not be copied into the build's directory"}


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            os.close(fd)


def _release(group: BotCgroup | None, base: CgroupBase | None) -> None:
    if group is not None:
        group.kill()
    BotCgroup.remove_base(base)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def check_upload(cfg: ContestConfig, runtime: Runtime, workdir: Path, team: str, seed: int | None = None
                 ) -> tuple[bool, str]:
    """The conformance games at every table size: (passed, log). Their deals and ids are drawn as
    the ladder's are (``seed`` None: secret), so an upload cannot tell it is being checked."""
    from harness.games import get_game
    from harness.play.conformance import conformance_games, group_violations, percentile, reference_opponents
    from harness.play.referee import RefereeConfig

    game = get_game(cfg.game)
    sandbox, warning = resolve_sandbox(cfg.limits.get("sandbox", "auto"))
    limit_keys = {k: v for k, v in cfg.limits.items() if k in ("memory_mb", "cpu_seconds", "open_files")}
    referee = RefereeConfig(time=TimeControls(**cfg.time), limits=ResourceLimits(sandbox=sandbox, **limit_keys),
                            strikes=0, record_messages=True)
    candidate = BotSpec(name=team, command=tuple(runtime.run), cwd=str(workdir), sandbox_dir=str(workdir))
    opponents = reference_opponents(game)
    if not opponents:
        raise RuntimeError("no reference bots found for the conformance games (set TABLEBOTS_BOTS to a bots/ "
                           "directory)")
    lines = [warning] if warning else []
    passed = True
    for size in cfg.players:
        n_games = cfg.conformance_games or size

        def on_game(i: int, seats: Any, mine: int, record: Any, n_games: int = n_games) -> None:
            lines.append(f"  game {i + 1}/{n_games}: seat {mine} of {len(seats)}, rank {record.ranking[mine] + 1}, "
                         f"score {record.scores[mine]}, ended by {record.ended_by}"
                         + (", FORFEIT" if mine in record.forfeits else ""))

        lines.append(f"tables of {size}:")
        result = conformance_games(game, candidate, size, seed, n_games, cfg.options, referee,
                                   opponents, on_game, id_prefix="a-" if cfg.ladder == ScheduleKind.ADAPTIVE else "g-")
        if result.startups_ms:
            lines.append(f"  start-up: {max(result.startups_ms):.0f} ms (init_ms {cfg.time['init_ms']})")
        if result.latencies_ms:
            lines.append(f"  decisions: {len(result.latencies_ms)}, median {percentile(result.latencies_ms, 0.5):.1f} "
                         f"ms, p99 {percentile(result.latencies_ms, 0.99):.1f} ms (move_ms {cfg.time['move_ms']})")
        for (kind, detail), same in group_violations(result.violations).items():
            passed = False
            v = same[0]
            lines.append(f"  VIOLATION x{len(same)}: {kind}: {detail}")
            if v.get("request"):
                lines.append(f"    request: {str(v['request'])[:2000]}")
            lines.append(f"    your answer: {str(v.get('received') or '(nothing)')[:2000]}")
            tail = str(v.get("stderr_tail") or "").strip()
            if tail:
                lines.append("    your stderr (tail):\n" + "\n".join("      " + t for t in tail.splitlines()[-20:]))
    lines.append("conformance passed: no violations" if passed else "conformance failed: see the violations above")
    return passed, _cap("\n".join(lines) + "\n")


class BuildWorker:
    """The background thread that builds and checks uploads in order (see the module docstring)."""

    def __init__(self, cfg: ContestConfig, db: ContestDB) -> None:
        self.cfg = cfg
        self.db = db
        self.queue: queue.Queue[int | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="contest-build", daemon=True)

    def start(self) -> None:
        for submission_id in self.db.unfinished():  # left half-done by a stopped site: done again
            self.queue.put(submission_id)
        self.thread.start()

    def submit(self, submission_id: int) -> None:
        self.queue.put(submission_id)

    def stop(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            submission_id = self.queue.get()
            if submission_id is None:
                return
            try:
                code = subprocess.run([sys.executable, "-m", "harness.contest.build", str(self.cfg.root),
                                       str(submission_id)], stdin=subprocess.DEVNULL).returncode
            except OSError:
                code = -1
            if code != 0:  # the harness's fault: logged for the organizer, the site goes on
                print(f"contest: checking submission {submission_id} failed inside the harness (exit {code})",
                      file=sys.stderr)
                sub = self.db.submission(submission_id)
                if sub is not None and sub.status in ("building", "checking"):
                    self.db.set_status(submission_id, "failed", check_log="the harness failed while checking "
                                       "this version (not your bot's fault); the organizer has the details\n")

    def process(self, submission_id: int) -> None:
        sub = self.db.submission(submission_id)
        if sub is None or sub.status not in ("building", "checking"):
            return
        runtime = self.cfg.runtimes.get(sub.runtime)
        workdir = self.cfg.submissions_dir / str(submission_id)
        if runtime is None or not workdir.is_dir():
            self.db.set_status(submission_id, "failed", build_log="this version's files or runtime are gone\n")
            return
        self.db.set_status(submission_id, "building")
        built, build_log = build_upload(self.cfg, runtime, workdir)
        if not built:
            self.db.set_status(submission_id, "failed", build_log=build_log)
            return
        self.db.set_status(submission_id, "checking", build_log=build_log)
        passed, check_log = check_upload(self.cfg, runtime, workdir, sub.team)
        self.db.set_status(submission_id, "checking", check_log=check_log)
        if passed:
            self.db.activate(submission_id)
        else:
            self.db.set_status(submission_id, "failed")


def main(argv: list[str]) -> int:
    """``python -m harness.contest.build DIR ID``: build and check upload ID of the contest in DIR."""
    from harness.contest.config import load_contest

    cfg = load_contest(argv[0])
    db = ContestDB(cfg.db_path)
    try:
        BuildWorker(cfg, db).process(int(argv[1]))
    except Exception:  # noqa: BLE001 - printed for the organizer; the site marks the upload failed
        traceback.print_exc()
        return 1
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
