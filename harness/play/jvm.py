"""Sizing a Java bot's JVM to its memory limit.

A bot's memory limit is ``RLIMIT_AS`` (address space). A JVM reserves address space for
everything up front: 1 GB of compressed class space, 240 MB of code cache and a heap of a quarter
of the machine's memory, so with the contest's default 1024 MB (or even 2048 MB) it cannot start
("Could not allocate compressed class space"). A ``java`` command therefore gets flags that fit
the JVM into the limit: a heap of 3/8 of it, 48 MB of class space and of code cache, 96 MB of
metaspace, 1 MB thread stacks, the serial collector (no parallel GC threads, whose stacks count),
and no ``hsperfdata`` file. Measured (``ulimit -v``, OpenJDK 17): with them a bot starts at 1024 MB;
with a heap of 640 MB instead it does not. The bot's own flags come after, so ``-Xmx200m`` in its
command wins.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = ["jvm_flags", "with_jvm_flags"]


def jvm_flags(memory_mb: int) -> list[str]:
    """The flags that fit a JVM into ``memory_mb`` of address space."""
    heap = max(32, memory_mb * 3 // 8)
    return [f"-Xmx{heap}m", "-Xss1m", "-XX:CompressedClassSpaceSize=48m", "-XX:ReservedCodeCacheSize=48m",
            "-XX:MaxMetaspaceSize=96m", "-XX:+UseSerialGC", "-XX:-UsePerfData"]


def with_jvm_flags(argv: Sequence[str], memory_mb: int | None) -> list[str]:
    """``argv`` with :func:`jvm_flags` after ``java`` when it runs a JVM under a memory limit."""
    out = list(argv)
    if memory_mb is None or not out or os.path.basename(out[0]) != "java":
        return out
    return [out[0], *jvm_flags(memory_mb), *out[1:]]
