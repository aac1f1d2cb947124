"""Whether this machine gives bots the CPU clock (a cgroup freezer and a CPU counter per bot),
probed once per test process, and the skip mark for tests that need it."""

from __future__ import annotations

import os

import pytest


def cpu_clock_here() -> bool:
    """Make a bot cgroup and see whether it can freeze and count CPU (root, or a delegated v2 subtree)."""
    from harness.play.cgroups import BotCgroup, cgroup_base

    group = BotCgroup.create(cgroup_base(), f"probe-clock-{os.getpid()}", None)
    if group is None:
        return False
    ok = group.can_freeze and group.can_count_cpu
    group.kill()
    return ok


CPU_CLOCK_HERE = cpu_clock_here()
needs_cpu_clock = pytest.mark.skipif(not CPU_CLOCK_HERE, reason="no cgroup freezer and cpuacct here (not root)")
