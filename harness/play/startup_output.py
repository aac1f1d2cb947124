"""What a bot printed on stdout after a first line that was not its ready: the rest of a runtime's
start-up failure (the JVM's first line is only "Error occurred during initialization of VM"; its
reason, "Could not allocate compressed class space", comes on the next)."""

from __future__ import annotations

import time

from harness.play.botproc import OK, BotProcess

__all__ = ["REST_SECONDS", "REST_BYTES", "rest_of_output"]


#: how long, and how much, a bot that broke the handshake is read on for the rest of what it printed
REST_SECONDS = 0.5
REST_BYTES = 8192


def rest_of_output(proc: BotProcess) -> bytes:
    """The lines a bot prints after a bad first line, until it exits or REST_SECONDS pass (at most REST_BYTES)."""
    lines: list[bytes] = []
    total = 0
    deadline = time.monotonic() + REST_SECONDS
    while total < REST_BYTES:
        code, line = proc.read_line(deadline)
        if code != OK:
            break
        lines.append(line)
        total += len(line) + 1
    return b"\n".join(lines)[:REST_BYTES]
