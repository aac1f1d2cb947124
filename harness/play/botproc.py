"""Bot processes: start an untrusted executable, run its turns under CPU-time deadlines, kill its tree.

One :class:`BotProcess` is one running bot. Its line I/O (the pipes, served by one ``poll`` with
a pidfd of the process; lines capped while reading; stderr drained into its log) is the base
class :class:`harness.play.botpipes.BotPipes`; this module starts the process, freezes it between
turns, and kills it.

Design choices, and why:

- **Killing the whole tree**, in layers. (1) Own session and process group
  (``start_new_session``): one ``killpg(SIGKILL)`` reaches every child that stayed in the group.
  (2) A scan of ``/proc`` (:mod:`harness.play.remnants`) kills every process that carries the bot's random
  ``TABLEBOTS_BOT_TOKEN`` in its environment or holds one of the bot's three pipes open: this
  catches descendants that left the group with ``setsid``, even with a scrubbed environment, as
  long as they keep a pipe (the ones that could hang the referee always do). (3) Airtight, where
  the machine allows it (root): ``pid_namespace=True`` runs the bot as PID 1 of its own PID
  namespace (``unshare --pid --fork --kill-child``), whose every process the kernel kills when
  the bot dies; the bwrap sandbox always does this (``--unshare-pid``). Without (3), a
  descendant that leaves the group, scrubs its environment and closes the pipes escapes: the
  documented limit, unless (4) applies. (4) Where the harness may create cgroups (root on
  cgroup v1 ``pids``, or a writable v2 tree: :mod:`harness.play.cgroups`), each bot runs in its own
  cgroup, which no descendant can leave; killing the bot empties it. On v1 its ``pids.max`` also
  enforces ``processes`` for root, whom ``RLIMIT_NPROC`` does not bind. When (4) emptied and
  removed the cgroup, the scan of (2) is skipped: nothing of the bot can be outside it.
- **Resource limits** are set with ``setrlimit`` in the child before ``exec``.
"""


from __future__ import annotations

import errno
import os
import secrets
import shutil
import signal
import subprocess
import time

from harness.play.botpipes import CRASH, OK, OVERSIZE, TIMEOUT, BotPipes, describe_status
from harness.play.cgroups import BotCgroup, CgroupBase, cgroup_base
from harness.play.cpuclock import HARD_FACTOR, QUICK_S, Clock, RunDelay, host_load, own_wait_ns
from harness.play.jvm import with_jvm_flags
from harness.play.limits import (
    TOKEN_VAR,
    BotSpec,
    ResourceLimits,
    check_sandbox,
    limit_setter,
    resolve_command,
    tree_memory_mb,
    unshare_pid_prefix,
)
from harness.play.privileges import bot_uid, reachable_paths_mounter, scratch_mounter, setpriv_prefix
from harness.play.remnants import kill_remnants
from harness.play.sandbox import (
    bwrap_command,
    bwrap_userns,
    own_dirs,
    program_dir,
    resolve_sandbox,
    runtime_prefixes,
    sandbox_env,
    scratch_inodes,
    scratch_mount_point,
)
from harness.play.stderr_log import StderrLog

__all__ = ["BotProcess", "StderrLog", "kill_remnants", "describe_status", "OK", "TIMEOUT", "CRASH", "OVERSIZE"]

#: the machine's cores, read once (``os.cpu_count`` costs ~25 us a call on the gVisor machines)
_CORES = os.cpu_count() or 1


class BotProcess(BotPipes):
    """One running bot. Not thread-safe; every wait is bounded by an absolute ``time.monotonic`` deadline.

    Reads (:class:`BotPipes`) return ``(code, line)`` with ``code`` one of OK, TIMEOUT, CRASH,
    OVERSIZE; ``self.detail`` explains the last non-OK outcome in one line.
    """

    def __init__(self, spec: BotSpec, limits: ResourceLimits, stderr: StderrLog, cpu_clock: bool = True) -> None:
        super().__init__(stderr, limits.max_line_bytes)
        self.spec = spec
        self.limits = limits
        self.token = secrets.token_hex(12)
        self.key: object = None  # what the pool started it for (game, options, time controls)
        #: what its last turn cost (:meth:`ask`)
        self.last_clock = Clock()
        self._cpu_mark: int | None = None  # its tree's CPU time when it was last frozen, if read
        self._run_delay: RunDelay | None = None  # its threads' run delays (made at its first turn)
        #: the deals (seeds) of the games it was given: it never gets a second game of one deal
        self.deals: set[int] = set()
        self.started_at = 0.0
        #: the host uid the bot runs as when the harness is root (None: the harness's own user)
        self.uid: int | None = None
        self._cgroup: BotCgroup | None = None
        self._cgroup_base: CgroupBase | None = None
        self._want_cpu_clock = cpu_clock  # off only in a benchmark of its cost (referee.FairPlay)
        self._bwrap = False  # started under bwrap: its two bwrap processes are the sandbox's, not the bot's
        #: the sandbox's own processes, left out of the freezer and of the run delays (found at the first freeze)
        self._sandbox_pids: frozenset[int] | None = None
        #: seconds it was thawed since its run delays were last read (:meth:`_kept_ms`)
        self._unread_s = 0.0

    # ---- life cycle -------------------------------------------------------------------
    def start(self) -> None:
        """Start the process; raises OSError if the executable cannot be run."""
        argv = with_jvm_flags(resolve_command(self.spec.command), self.limits.memory_mb)
        cwd = self.spec.cwd or os.getcwd()
        if not argv:
            raise FileNotFoundError(errno.ENOENT, "empty command")
        exe = argv[0]
        found = (os.path.isfile(os.path.join(cwd, exe)) and os.access(os.path.join(cwd, exe), os.X_OK)
                 if os.sep in exe else shutil.which(exe) is not None)
        if not found:  # checked here: under a wrapper (unshare, bwrap) the exec would fail out of sight
            raise FileNotFoundError(errno.ENOENT, "no such executable", exe)
        sandbox = self.limits.sandbox
        if sandbox == "auto":
            sandbox = resolve_sandbox(sandbox)[0]
        uid = bot_uid(self.spec.name)  # as root: a bot never holds root's powers, sandboxed or not
        drop_uid = uid
        inner_nproc = False
        mounter = None
        if sandbox == "bwrap":
            check_sandbox(self.limits)
            own = own_dirs(argv, cwd, self.spec.sandbox_dir)
            userns = bwrap_userns()
            # bwrap run as root: the scratch mounted, bounded in files, by the child (no shell and
            # mount inside the sandbox: two programs fewer a start)
            scratch_at = scratch_mount_point() if not userns and os.geteuid() == 0 else None
            if scratch_at is not None:
                mounter = scratch_mounter(scratch_at, self.limits.scratch_mb, scratch_inodes(self.limits.scratch_mb))
                scratch_at = scratch_at if mounter is not None else None
            argv = bwrap_command(argv, cwd, own, self.limits.scratch_mb, userns, uid, self.limits.processes,
                                 scratch_at)
            inner_nproc = userns  # RLIMIT_NPROC inside its own user namespace: counted for this bot alone
            drop_uid = uid if userns else None  # else setpriv drops it inside the sandbox
            self._wrapped = self._bwrap = True
        elif self.limits.pid_namespace:
            check_sandbox(self.limits)
            argv = [*unshare_pid_prefix(), *setpriv_prefix(uid), *argv]
            drop_uid = None  # unshare needs root; setpriv drops it for the bot
            self._wrapped = True
        self.uid = uid
        if drop_uid is not None and sandbox != "bwrap":
            # no sandbox, harness root: the bot's runtime and files must stay reachable for its uid
            exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0]) or argv[0]
            package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            mounter = reachable_paths_mounter([os.path.join(cwd, exe), *runtime_prefixes(), package, cwd,
                                               *(d for d in (self.spec.sandbox_dir, program_dir(argv, cwd)) if d)])
        env = dict(os.environ)
        env[TOKEN_VAR] = self.token
        if sandbox == "bwrap":
            env = sandbox_env(env)
        self._cgroup_base = cgroup_base()
        self._cgroup = BotCgroup.create(self._cgroup_base, self.token, self.limits.processes,
                                        tree_memory_mb(self.limits, sandbox == "bwrap"))
        self.started_at = time.monotonic()
        try:
            self._popen = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                cwd=cwd, env=env, close_fds=True, start_new_session=True,
                preexec_fn=limit_setter(self.limits, self._cgroup, drop_uid, mounter, nproc=not inner_nproc))
        except BaseException:
            if self._cgroup is not None:
                self._cgroup.kill()
                BotCgroup.remove_base(self._cgroup_base)
            raise
        self._attach_pipes()
        if self._cgroup is not None and self._cgroup.oom_event_fd >= 0:
            self._watch_oom(self._cgroup.oom_event_fd)
        # the bot's log gets one short line; the command line (sandbox arguments, server paths) is the organizer's
        self.stderr.note(f"started pid {self._popen.pid}")
        self.stderr.harness_note(f"started pid {self._popen.pid} in {cwd}: {' '.join(argv)}")

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    @property
    def alive(self) -> bool:
        """Started, not killed, and (as far as we have seen) not exited."""
        return self._popen is not None and not self._closed and not self._exited

    def kill(self, reason: str = "") -> None:
        """SIGKILL the whole process tree (group, token holders), reap, close the pipes. Idempotent."""
        if self._popen is None or self._closed:
            return
        self._closed = True
        pid = self._popen.pid
        # The leader is not reaped yet (we only peek at its status), so its pid, and the group id,
        # cannot have been reused.
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        if self._run_delay is not None:  # (its open files would outlive the cgroup's directory)
            self._run_delay.close()
        if self._oom >= 0:  # (the cgroup closes it)
            self._poll.unregister(self._oom)
            self._oom = -1
        contained = False
        if self._cgroup is not None:
            self._cgroup.kill()
            # Removed: it was empty, and no process of the bot ever left it (each joined it before
            # exec, and a bot may not write to the cgroup files), so nothing is left anywhere. The
            # /proc scan is then skipped: it reads every process on the machine (~2 ms of CPU per
            # 100 processes), on every stop of a bot, which one process per deal makes frequent.
            contained = not os.path.isdir(self._cgroup.path)
        if not contained:
            kill_remnants([self.token], self.pipes)
        self._finish(reason)
        BotCgroup.remove_base(self._cgroup_base)

    def _finish(self, reason: str) -> None:
        assert self._popen is not None
        try:
            self._popen.wait(timeout=5)
        except subprocess.TimeoutExpired:  # stuck in the kernel; leave it to the OS
            pass
        self._drain_stderr(final=True)
        for fh in (self._popen.stdin, self._popen.stdout, self._popen.stderr):
            try:
                fh.close()  # type: ignore[union-attr]
            except OSError:
                pass
        try:
            os.close(self._pidfd)
        except OSError:
            pass
        code = self._popen.returncode
        self.stderr.note(f"pid {self._popen.pid} ended ({describe_status(code)})"
                         + (f": {reason}" if reason else ""))

    def close_politely(self, bye: bytes | None) -> None:
        """Send ``bye`` (if given) and close stdin, without waiting; follow with :meth:`kill`."""
        if self._popen is None or self._closed:
            return
        self.thaw()  # a frozen bot could neither read its bye nor exit
        if bye and not self._exited:
            try:
                os.write(self._in, bye)
            except OSError:
                pass
        try:
            self._popen.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass

    # ---- turns: frozen between them, deadlines in CPU time (harness.play.cpuclock) -------------
    @property
    def cpu_clock(self) -> bool:
        """Whether this bot is frozen between turns and its deadlines count its own time (a cgroup
        with a freezer and a CPU counter could be made for it, and it was not started without
        the CPU clock); else deadlines are wall-clock."""
        group = self._cgroup
        return self._want_cpu_clock and group is not None and group.can_freeze and group.can_count_cpu

    def freeze(self) -> None:
        """Stop the bot's every process until its next turn (no-op without the CPU clock)."""
        if self._cgroup is not None and not self._closed and self.cpu_clock:
            if self._sandbox_pids is None:
                self._sandbox_pids = self._unfreeze_sandbox(self._cgroup)
            self._cgroup.freeze()
            self._cpu_mark = None  # read at its next turn (once frozen, it no longer changes)

    def _unfreeze_sandbox(self, group: BotCgroup) -> frozenset[int]:
        """The sandbox's own processes, moved out of the freezer (cgroup v1): bwrap as started, and
        the init it forks in the bot's PID namespace, which forked the bot and then only waits.

        Frozen, each was woken at every freeze and thaw for nothing (three processes to wake a
        turn instead of one: ~13 us of the referee's CPU a decision, docs/performance.md). Called
        at the first freeze, after the bot's ready: the init has forked the bot by then, and
        every process of the bot descends from it, so all stay in the freezer. No process of
        the bot can take their place: they are the process the harness started and its one
        child (an orphan of the bot is adopted by the init, inside the namespace, never by the
        outer bwrap), and each is checked to run bwrap's own executable. The bot cannot ptrace
        or signal them (another uid, no capabilities). They stay in its other cgroups: killed,
        counted and bounded with it."""
        if not self._bwrap or self._popen is None:
            return frozenset()
        outer = self._popen.pid
        try:
            exe = os.stat(f"/proc/{outer}/exe")
            with open(f"/proc/{outer}/task/{outer}/children") as fh:
                children = [int(p) for p in fh.read().split()]
        except (OSError, ValueError):
            return frozenset()
        ours = [outer]
        for pid in children:
            try:
                got = os.stat(f"/proc/{pid}/exe")
            except OSError:
                continue
            if (got.st_dev, got.st_ino) == (exe.st_dev, exe.st_ino):
                ours.append(pid)
        group.never_freeze(ours)  # (on cgroup v2 they stay: still never read for run delays)
        return frozenset(ours)

    def thaw(self) -> None:
        if self._cgroup is not None and not self._closed:
            self._cgroup.thaw()

    def ask(self, line: bytes, budget_ms: int) -> tuple[int, bytes, Clock]:
        """Its turn: thaw it, send ``line`` and read the answer within ``budget_ms`` of charged time
        (the larger of its tree's CPU time and its wall time minus the time it was kept from
        running: :mod:`harness.play.cpuclock`; hard-capped), freeze it again.

        Without :attr:`cpu_clock`, the deadline is ``budget_ms`` of wall-clock time. Returns the
        outcome, the line, and what the turn cost (``Clock``); on TIMEOUT ``self.detail`` says
        what ran out.
        """
        asked = time.monotonic()
        group = self._cgroup
        if group is None or not self.cpu_clock:
            return self._ask_by_wall_clock(line, budget_ms, asked, group)
        # Frozen since its previous turn, its CPU time and run delays have not moved since the
        # reading that ended that turn: one reading a turn instead of two (each costs ~55 us on
        # the gVisor machines)
        delay = self._run_delay
        if delay is None:
            delay = self._run_delay = RunDelay(os.path.join(group.path, "cgroup.threads" if group.v2 else "tasks"),
                                               skip=self._sandbox_pids or frozenset())
        cpu0 = self._cpu_mark
        if cpu0 is None:
            delay.mark()
            self._unread_s = 0.0
            cpu0 = group.cpu_ns() or 0
        # The request goes into the pipe while the bot is still frozen: the thaw then wakes it with
        # its request waiting, one wake-up a turn instead of two (thawed, it would wake to find
        # nothing, sleep, and be woken again by the write). What the pipe cannot take now is
        # written after the thaw (a frozen bot reads nothing).
        sent = self._write_now(line)
        group.thaw()
        start = time.monotonic()
        clock = Clock()
        # the referee's own wait for a CPU in its last look for the answer: once the answer has
        # woken it, the time it waits to run is not the bot's (the answer was there)
        waited = own_wait_ns()
        code, data = self.exchange(line, start + budget_ms / 1000 / _CORES, final=False, sent=sent)
        late = -1  # read below, only where the wall time exceeds the CPU time enough to matter
        if code == TIMEOUT:
            code, data, late = self._look_again(group, delay, clock, start, cpu0, budget_ms)
        clock.wall_ms = (time.monotonic() - start) * 1000
        cpu1 = group.cpu_ns() or 0
        clock.cpu_ms = (cpu1 - cpu0) / 1e6
        if late < 0:  # (a quick answer: at most 1 ms charged of the referee's own wait)
            late = own_wait_ns() - waited if clock.wall_ms - clock.cpu_ms > 1 else 0
        if code != TIMEOUT and (over := self._over_memory(group, code)):
            code, data, self.detail = CRASH, b"", over  # stopped, even if its main process lives
        if code == OK:
            group.freeze()
            # (a frozen process may still finish the instant it was running: a few microseconds
            # of CPU time charged to its next turn at most)
            self._cpu_mark = cpu1
            self._unread_s += time.monotonic() - asked
        clock.kept_ms = self._kept_ms(delay, clock, cpu1 - cpu0, code == OK, late)
        if code == OK or not clock.ran_out:
            clock.ran_out = "" if code == OK else clock.ran_out
        else:
            clock.load, clock.cores = host_load()
            if code == TIMEOUT:
                self.detail = self._ran_out_detail(clock, budget_ms)
        self.last_clock = clock
        return code, data, clock

    def _look_again(self, group: BotCgroup, delay: RunDelay, clock: Clock, start: float, cpu0: int,
                    budget_ms: int) -> tuple[int, bytes, int]:
        """The rest of a turn not answered in the first slice: look at its clocks, wait for what
        is left, until it answers or its time runs out (``clock.ran_out`` says how). Returns the
        outcome, the line and the referee's own wait in its last look (ns)."""
        budget_ns = budget_ms * 1_000_000
        cores = _CORES
        hard_cap = start + HARD_FACTOR * budget_ms / 1000
        late = -1
        while True:
            now = time.monotonic()
            used = (group.cpu_ns() or 0) - cpu0
            wall_ns = (now - start) * 1e9
            # charged: the larger of its CPU time and its wall time minus the time it was kept
            # from running (cpuclock; read at every look, which also notes who is waiting now)
            charged = max(used, wall_ns - delay.kept_ns(used, at=now))
            if used >= budget_ns or charged >= budget_ns or now >= hard_cap:
                clock.ran_out = "cpu" if used >= budget_ns else "wall" if charged >= budget_ns else "hard"
                code, data = self.read_line(time.monotonic())  # the last look (and the checks of a real timeout)
                return code, data, late
            # the soonest its charge could reach the budget: CPU time grows at most `cores` times as fast
            left = (budget_ns - charged) / 1e9 / cores
            waited = own_wait_ns()
            code, data = self.read_line(min(now + max(left, 0.0005), hard_cap), final=False)
            late = own_wait_ns() - waited
            if code != TIMEOUT:
                return code, data, late

    def _kept_ms(self, delay: RunDelay, clock: Clock, cpu_ns: int, answered: bool, late: int) -> float:
        """How long the bot was kept from running in this turn (ms), for its charge.

        The run delays are read (and become the next turn's mark) unless the bot answered and
        was thawed for less than :data:`QUICK_S` in all since they were last read: such a turn is
        charged its CPU time alone (kept: its wall time less its CPU time, the most it could have
        been kept), a reading saved on most turns of a quick bot. The mark left unread makes the
        next reading's bound count the skipped turns' run and wait too, so it credits the bot at
        most those turns' thawed time more (under :data:`QUICK_S`): never less than reading at
        every turn would, so a bot is never charged more for it. A quick turn costs its bank
        nothing either way (charged at most its wall time, under ``move_ms``)."""
        if answered and self._unread_s < QUICK_S:
            return max(0.0, clock.wall_ms - clock.cpu_ms)
        if answered:
            self._unread_s = 0.0
        return (delay.kept_ns(cpu_ns, remark=answered) + (late if answered else 0)) / 1e6

    def _over_memory(self, group: BotCgroup, code: int) -> str:
        """Why the bot must stop if the kernel stopped a process of it for going over its tree's
        memory bound (:meth:`BotCgroup.over_memory`); else ``""``.

        Where its cgroup's OOM events are watched (an eventfd in the poll of its pipes, cgroup
        v1), the counter is read only after a turn that did not end with an answer, or when the
        event fired; else after every turn (one ``pread``). An OOM kill after the answer was
        read (the instant before the bot is frozen) is seen by the poll before its next request,
        and that request's turn ends with the crash."""
        if group.oom_event_fd < 0:
            return group.over_memory()
        if code == OK and not self.oom_seen:
            return ""
        over = group.over_memory()
        if not over and self.oom_seen and not self._closed:  # an OOM that killed nothing: watched again
            group.rearm_oom_event()
            self._watch_oom(group.oom_event_fd)
        return over

    def _ask_by_wall_clock(self, line: bytes, budget_ms: int, start: float,
                           group: BotCgroup | None) -> tuple[int, bytes, Clock]:
        """:meth:`ask` without the CPU clock: the deadline is ``budget_ms`` of wall-clock time from
        ``start``, and the turn's CPU time is taken to be its wall time."""
        code, data = self.exchange(line, start + budget_ms / 1000)
        if code != TIMEOUT and group is not None and (over := self._over_memory(group, code)):
            code, data, self.detail = CRASH, b"", over  # stopped, even if its main process lives
        took = (time.monotonic() - start) * 1000
        self.last_clock = Clock(cpu_ms=took, wall_ms=took, ran_out="wall" if code == TIMEOUT else "")
        if code == TIMEOUT:
            self.last_clock.load, self.last_clock.cores = host_load()
        return code, data, self.last_clock

    def _ran_out_detail(self, clock: Clock, budget_ms: int) -> str:
        used = (f"{clock.cpu_ms:.0f} ms of CPU time in {clock.wall_ms:.0f} ms, {clock.kept_ms:.0f} ms of them kept "
                f"from running by other processes")
        if clock.ran_out == "cpu":
            text = f"used its {budget_ms} ms of CPU time without answering ({used})"
        elif clock.ran_out == "wall":
            text = (f"no answer after {budget_ms} ms of wall-clock time not counting the time it was kept from "
                    f"running (sleeping, blocked or computing: {used})")
        else:
            text = f"no answer after {HARD_FACTOR} x {budget_ms} ms of wall-clock time ({used})"
        if clock.overloaded:
            text += f"; the host was overloaded (load {clock.load:.1f} on {clock.cores} cores)"
        return text
