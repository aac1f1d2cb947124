"""A started bot's three pipes: lines in and out under hard deadlines, stderr into its log.

:class:`BotPipes` is the I/O half of :class:`harness.play.botproc.BotProcess` (which starts the
process, runs its turns and kills its tree). The three pipes are non-blocking and are served by
one ``select.poll`` object together with a pidfd of the process, so a single ``poll`` call with
the time left wakes the referee on an answer, on stderr output, or on the bot's exit, and never
blocks it past a deadline. Measured on the project machines this costs ~5 us per round trip
with both processes pinned to one core; asyncio streams cost 27-45 us (docs/performance.md).

- **stderr through a pipe drained by the referee**, written to a per-bot log that rotates at half
  the cap (``<name>.stderr.log`` and ``.1``), so the disk use per bot is bounded by
  ``stderr_bytes`` and the latest output is kept. The pipe is drained whenever the referee waits
  on that bot (start-up, every request, close), so a bot flooding stderr never deadlocks it.
- **Lines are capped while reading**: the read size never lets the buffer grow past
  ``max_line_bytes + 1``, so a 100 MB line costs the referee at most the cap in memory.
"""


from __future__ import annotations

import os
import select
import signal
import subprocess
import time

from harness.play.limits import WRAPPERS
from harness.play.remnants import pipe_holders
from harness.play.stderr_log import StderrLog

__all__ = ["BotPipes", "describe_status", "OK", "TIMEOUT", "CRASH", "OVERSIZE", "STDERR_TAIL_BYTES"]

STDERR_TAIL_BYTES = 2048

# Outcome codes of a read or write (small ints: compared on the hot path).
OK = 0
TIMEOUT = 1
CRASH = 2
OVERSIZE = 3


class BotPipes:
    """The pipes and pidfd of one started bot process. Not thread-safe; every wait is bounded by an
    absolute ``time.monotonic`` deadline.

    Reads return ``(code, line)`` with ``code`` one of OK, TIMEOUT, CRASH, OVERSIZE;
    ``self.detail`` explains the last non-OK outcome in one line.
    """

    def __init__(self, stderr: StderrLog, max_line_bytes: int) -> None:
        self.stderr = stderr
        self.detail = ""
        self.pipes: tuple[str, ...] = ()
        self._tail = b""
        self._stderr_total = 0  # bytes read from stderr so far (a mark for stderr_since)
        self._wrapped = False  # under a wrapper (unshare, bwrap) that keeps a copy of its pipes
        self._cap = max_line_bytes
        self._buf = bytearray()
        self._popen: subprocess.Popen[bytes] | None = None
        self._exited = False
        self._closed = False
        self._poll = select.poll()
        self._out = self._err = self._in = self._pidfd = -1
        #: the eventfd of the bot's memory cgroup's OOM events, watched in the same poll (-1: none);
        #: ``oom_seen``: it fired (the OOM killer stopped, or was about to stop, a process of the bot)
        self._oom = -1
        self.oom_seen = False

    def _attach_pipes(self) -> None:
        """Make the started process's pipes non-blocking and watch them, and its pidfd, in one poll."""
        assert self._popen is not None
        self._in = self._popen.stdin.fileno()  # type: ignore[union-attr]
        self._out = self._popen.stdout.fileno()  # type: ignore[union-attr]
        self._err = self._popen.stderr.fileno()  # type: ignore[union-attr]
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self.pipes = tuple(f"pipe:[{os.fstat(fd).st_ino}]" for fd in (self._in, self._out, self._err))
        self._pidfd = os.pidfd_open(self._popen.pid)
        self._poll.register(self._out, select.POLLIN)
        self._poll.register(self._err, select.POLLIN)
        self._poll.register(self._pidfd, select.POLLIN)

    def _watch_oom(self, fd: int) -> None:
        """Watch the OOM eventfd ``fd`` with the pipes (again, after an event that killed nothing)."""
        self._oom = fd
        self.oom_seen = False
        self._poll.register(fd, select.POLLIN)

    def _oom_event(self) -> None:
        """The OOM eventfd fired: noted for the end of the turn (:meth:`BotProcess.ask` reads the
        counter), and no longer watched (it stays readable: every poll would wake at once)."""
        if self._oom >= 0:
            self._poll.unregister(self._oom)
            self._oom = -1
        self.oom_seen = True

    def exit_status(self) -> int | None:
        """The exit code (negative: signal) if the process has exited, without reaping it."""
        if self._popen is None:
            return None
        if self._popen.returncode is not None:
            return self._popen.returncode
        try:
            info = os.waitid(os.P_PID, self._popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return None
        if info is None:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status

    # ---- I/O --------------------------------------------------------------------------
    def pending_output(self) -> bytes:
        """Output the bot sent that nobody asked for (its first bytes), drained now; ``b""`` if none.

        Checked before each request: what is already buffered, or readable at once, cannot be an
        answer to a request not yet sent. An empty line counts (returned as ``b"\\n"``).
        """
        buf = self._buf
        if not buf:
            for fd, _ev in self._poll.poll(0):
                if fd == self._out:
                    got = self._read_some()
                    if got is not None and got[0] == OK:
                        return got[1][:200] or b"\n"
                    if got is not None and got[0] == OVERSIZE:
                        buf.clear()
                        return got[1]
                elif fd == self._err:
                    self._drain_stderr()
                elif fd == self._oom:
                    self._oom_event()
        if not buf:
            return b""
        data = bytes(buf[:200])
        buf.clear()
        return data

    def write(self, data: bytes, deadline: float) -> int:
        """Write ``data`` (one or more lines) before ``deadline``; OK, TIMEOUT or CRASH."""
        if self._closed or self._popen is None:
            self.detail = "the process is not running"
            return CRASH
        try:
            n = os.write(self._in, data)
        except BlockingIOError:
            n = 0
        except OSError as exc:
            self.detail = f"cannot write to its stdin ({exc.strerror or exc}): it closed stdin or exited"
            return CRASH
        if n == len(data):
            return OK
        view = memoryview(data)[n:]
        self._poll.register(self._in, select.POLLOUT)
        try:
            while view:
                left = deadline - time.monotonic()
                if left <= 0:
                    # a last non-blocking attempt: room the bot made in time counts
                    try:
                        view = view[os.write(self._in, view):]
                    except (BlockingIOError, OSError):
                        pass
                    if not view:
                        return OK
                    self.detail = "did not read its stdin before the deadline"
                    return TIMEOUT
                for fd, _ev in self._poll.poll(left * 1000.0 + 1):
                    if fd == self._in:
                        try:
                            n = os.write(self._in, view)
                        except BlockingIOError:
                            continue
                        except OSError as exc:
                            self.detail = f"cannot write to its stdin ({exc.strerror or exc})"
                            return CRASH
                        view = view[n:]
                    elif fd == self._err:
                        self._drain_stderr()
                    elif fd == self._oom:
                        self._oom_event()
                    elif fd == self._pidfd:
                        self._note_exit()
                        self.detail = f"exited while being sent a message ({describe_status(self.exit_status())})"
                        return CRASH
            return OK
        finally:
            self._poll.unregister(self._in)

    def exchange(self, line: bytes, deadline: float, final: bool = True, sent: int = 0) -> tuple[int, bytes]:
        """Write one request line and read the answer line before ``deadline``: the referee's hot path.

        Same outcomes as :meth:`write` followed by :meth:`read_line`; the common case (the whole
        line written at once, the answer arriving in one read) takes one write, one poll and one
        read, with no intermediate buffer copy. ``sent``: the bytes of ``line`` already written.
        """
        if sent:
            line = line[sent:]
        if self._buf or self._closed or self._out < 0:
            code = self.write(line, deadline) if line else OK
            return self.read_line(deadline, final) if code == OK else (code, b"")
        try:
            n = os.write(self._in, line) if line else 0
        except OSError:
            n = -1
        if n != len(line):  # partial, blocked or failed write: the general path sorts it out
            code = self.write(line[n:] if n > 0 else line, deadline) if n != -1 else self.write(line, deadline)
            return self.read_line(deadline, final) if code == OK else (code, b"")
        left = deadline - time.monotonic()
        if left > 0:
            out = self._out
            events = self._poll.poll(left * 1000.0 + 0.5)
            if len(events) > 1 and self._oom >= 0:  # (an OOM event with the answer: noted before it is read)
                for fd, _ev in events:
                    if fd == self._oom:
                        self._oom_event()
            for fd, _ev in events:
                if fd == out:
                    try:
                        chunk = os.read(out, min(65536, self._cap + 1))
                    except BlockingIOError:
                        break
                    if not chunk:
                        return self._eof()
                    if chunk[-1] == 10 and chunk.find(b"\n") == len(chunk) - 1:
                        return OK, chunk[:-1]
                    # partial line, several lines, or over the cap: the general path takes it from here
                    self._buf += chunk
                    if len(chunk) > self._cap and chunk.find(b"\n") < 0:
                        self.detail = f"line longer than {self._cap} bytes"
                        return OVERSIZE, chunk[:200]
                    break
        return self.read_line(deadline, final)

    def _write_now(self, line: bytes) -> int:
        """Write what the pipe takes of ``line`` without waiting; the bytes written (0 on any
        failure: :meth:`exchange` then writes it all and reports what goes wrong)."""
        if self._closed or self._buf or self._out < 0:
            return 0
        try:
            return os.write(self._in, line)
        except OSError:
            return 0

    def read_line(self, deadline: float, final: bool = True) -> tuple[int, bytes]:
        """The next line (without its newline) before ``deadline``.

        Never buffers more than ``max_line_bytes + 1`` bytes. CRASH when stdout is closed or the
        process exited without a complete line; OVERSIZE past the cap, newline or not.
        ``final=False``: the deadline is only a moment to look at the clock again (a slice of a
        CPU-time deadline); the checks made when time is really up are skipped.
        """
        ready = self._buffered()
        if ready is not None:
            return ready
        poll = self._poll.poll
        out = self._out
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                # Never a timeout without a last look: a line already in the pipe was sent in time
                # (the referee may have been busy elsewhere, e.g. killing another seat's tree).
                got = self.poll_line()
                if got is not None:
                    return got
                if not final:
                    return TIMEOUT, b""
                if self._wrapped and not self._stdout_holders():
                    # the wrapper (unshare, bwrap) keeps a copy of the pipe, so no end-of-file came
                    self.detail = "closed its stdout (seen at the deadline)"
                    return CRASH, b""
                self.detail = "no complete line before the deadline"
                return TIMEOUT, b""
            for fd, _ev in poll(left * 1000.0 + 0.5):
                if fd == out:
                    code = self._read_some()
                    if code is not None:
                        return code
                elif fd == self._err:
                    self._drain_stderr()
                elif fd == self._oom:
                    self._oom_event()
                elif fd == self._pidfd:
                    return self._after_exit()

    def _buffered(self) -> tuple[int, bytes] | None:
        """A complete line already in the buffer, or CRASH if stdout is gone; None otherwise."""
        buf = self._buf
        i = buf.find(b"\n")
        if i >= 0:
            line = bytes(buf[:i])
            del buf[:i + 1]
            return OK, line
        if self._out < 0 or self._closed:
            self.detail = "its stdout is closed" if not self._closed else "the process is not running"
            return CRASH, b""
        return None

    def poll_line(self) -> tuple[int, bytes] | None:
        """The next line if one is complete now, without waiting; None if none is (yet).

        Reads whatever the pipe holds (within the line cap) and drains stderr. Also returns the
        outcome of a stream that failed meanwhile (CRASH at end-of-file or exit, OVERSIZE).
        """
        ready = self._buffered()
        if ready is not None:
            return ready
        for _ in range(64):  # bounded: a pipe holds 64 KiB, and the cap bounds the buffer
            events = self._poll.poll(0)
            if not events:
                return None
            read = False
            for fd, _ev in events:
                if fd == self._out:
                    code = self._read_some()
                    if code is not None:
                        return code
                    read = True
                elif fd == self._err:
                    self._drain_stderr()
                elif fd == self._oom:
                    self._oom_event()
                elif fd == self._pidfd:
                    return self._after_exit()
            if not read:
                return None
        return None

    def wait_fds(self) -> list[int]:
        """The descriptors that wake a wait for this bot's next line: stdout, stderr, its pidfd."""
        return [fd for fd in (self._out, self._err, -1 if self._exited else self._pidfd) if fd >= 0]

    def _read_some(self) -> tuple[int, bytes] | None:
        """One read from stdout into the buffer; a result if a line completed or the stream failed."""
        buf = self._buf
        start = len(buf)
        try:
            chunk = os.read(self._out, min(65536, self._cap + 1 - start))
        except BlockingIOError:
            return None
        except OSError as exc:
            self.detail = f"cannot read its stdout ({exc.strerror or exc})"
            return CRASH, b""
        if not chunk:
            return self._eof()
        buf += chunk
        i = buf.find(b"\n", start)
        if i >= 0:
            line = bytes(buf[:i])
            del buf[:i + 1]
            return OK, line
        if len(buf) > self._cap:
            self.detail = f"line longer than {self._cap} bytes"
            return OVERSIZE, bytes(buf[:200])
        return None

    def _eof(self) -> tuple[int, bytes]:
        """stdout reached end-of-file: the bot closed it or exited."""
        self._poll.unregister(self._out)
        self._out = -2
        status = self._exit_status_soon()
        self.detail = "closed its stdout" if status is None else f"exited ({describe_status(status)})"
        return CRASH, bytes(self._buf[:200])

    def _exit_status_soon(self, wait: float = 0.1) -> int | None:
        """The exit status, waiting up to ``wait`` s: stdout closes a moment before an exit is visible."""
        if self._exited or self._pidfd < 0:
            return self.exit_status()
        waiter = select.poll()
        waiter.register(self._pidfd, select.POLLIN)
        if waiter.poll(wait * 1000):
            return self.exit_status()
        return None

    def _stdout_holders(self) -> list[int]:
        """Processes other than the referee and the wrapper that hold the bot's stdout pipe."""
        if len(self.pipes) < 2:
            return []
        return pipe_holders(self.pipes[1], skip=WRAPPERS)

    def _note_exit(self) -> None:
        if not self._exited:
            self._exited = True
            self._poll.unregister(self._pidfd)

    def _after_exit(self) -> tuple[int, bytes]:
        """The process exited: take any complete line still in the pipe, else it is a crash."""
        self._note_exit()
        while self._out >= 0:
            code = self._read_some()
            if code is not None:
                return code
            # nothing more to read now (the write end may be held by a surviving descendant)
            break
        self.detail = f"exited ({describe_status(self.exit_status())})"
        return CRASH, bytes(self._buf[:200])

    def _drain_stderr(self, final: bool = False) -> None:
        fd = self._err
        if fd < 0:
            return
        for _ in range(64 if not final else 16):
            try:
                chunk = os.read(fd, 65536)
            except (BlockingIOError, ValueError):
                return
            except OSError:
                chunk = b""
            if not chunk:
                if not final:
                    self._poll.unregister(fd)
                self._err = -2
                return
            self.stderr.write(chunk)
            self._tail = (self._tail + chunk)[-STDERR_TAIL_BYTES:]
            self._stderr_total += len(chunk)

    def stderr_tail(self) -> str:
        """The last bytes this process wrote to stderr (up to 2 KiB), as text."""
        return self._tail.decode("utf-8", "replace")

    def stderr_mark(self) -> int:
        """A mark for :meth:`stderr_since`: the bytes read from stderr so far."""
        return self._stderr_total

    def stderr_since(self, mark: int) -> str:
        """What the bot wrote to stderr after ``mark`` (drained so far; at most the 2 KiB tail)."""
        new = self._stderr_total - mark
        return self._tail[-new:].decode("utf-8", "replace") if new > 0 else ""

    def drain_stderr(self) -> None:
        """Move whatever the bot wrote to stderr so far into its log (non-blocking)."""
        if not self._closed:
            self._drain_stderr()


def describe_status(code: int | None) -> str:
    """``exit code 3`` / ``killed by SIGKILL`` / ``still running``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = {"SIGXCPU": " (CPU time limit)", "SIGSEGV": " (crashed; memory limit?)"}.get(name, "")
        return f"killed by {name}{hint}"
    return f"exit code {code}"
