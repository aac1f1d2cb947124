"""Which of the guarantees of docs/security.md hold on this machine, for this user, and what would
make each one hold: probed for real (a bwrap run, a bot cgroup made and removed), never guessed.

An ordinary user once got less, silently: deadlines in wall-clock time and bots never frozen (a
spinning bot made an innocent one time out in 4 of 4 games), bots sharing one ``RLIMIT_NPROC``
(one forking until refused made the other's starts fail). :func:`guarantees` says what holds;
``harness doctor`` prints it; :func:`ranked_play_problems` is what ``harness contest run``
refuses to rank games without, unless told ``--unsafe``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from harness.play.cgroups import BotCgroup, cgroup_base, cgroup_mounts, v1_controllers
from harness.play.sandbox import bwrap_problem, bwrap_userns

__all__ = ["Guarantee", "guarantees", "off_here", "ranked_play_problems", "DELEGATE_COMMAND"]

#: How an ordinary user on cgroup v2 gets a subtree of their own (systemd delegates it).
DELEGATE_COMMAND = "systemd-run --user --scope -p Delegate=yes harness ..."


@dataclass(frozen=True)
class Guarantee:
    """One promise of docs/security.md: whether it holds here, how, and what would make it hold."""

    name: str
    holds: bool
    how: str
    fix: str = ""


@dataclass(frozen=True)
class _Probe:
    root: bool
    sandbox: str | None  # why bwrap cannot be used, or None if it can
    userns: bool
    v2: bool
    cgroups: bool
    freeze: bool
    cpu: bool
    memory: bool
    pids: bool
    v1_bound: set[str]


def _probe() -> _Probe:
    base = cgroup_base()
    group = BotCgroup.create(base, f"doctor-{os.getpid()}", 64, 64)
    try:
        return _Probe(root=os.geteuid() == 0, sandbox=bwrap_problem(), userns=bwrap_userns(),
                      v2=any(kind == "cgroup2" for kind, _ in cgroup_mounts()), cgroups=group is not None,
                      freeze=bool(group and group.can_freeze), cpu=bool(group and group.can_count_cpu),
                      memory=bool(group and group.max_memory), pids=bool(group and group.max_processes),
                      v1_bound={c for c in v1_controllers() if c in ("memory", "pids")} if os.geteuid() else set())
    finally:
        if group is not None:
            group.kill()
        BotCgroup.remove_base(base)


def _cgroup_fix(p: _Probe, controller: str) -> str:
    """What would give bots ``controller`` (``freezer`` stands for freezing and the CPU clock)."""
    if p.root:
        return f"mount the cgroup {controller} controller (cgroup v1), or use cgroup v2"
    unified = "boot with cgroup v2 alone (systemd.unified_cgroup_hierarchy=1), or run the harness as root"
    if controller in p.v1_bound:
        return f"this host binds the {controller} controller to cgroup v1, so no cgroup v2 subtree offers it: {unified}"
    if p.v2 and not p.cgroups:
        return f"start the harness in a delegated cgroup v2 subtree: {DELEGATE_COMMAND}"
    if p.v2:
        return f"delegate the {controller} controller to the subtree (systemd: Delegate=yes), or {unified}"
    return f"run the harness as root (an ordinary user gets no cgroup v1 subtree), or {unified}"


def guarantees() -> list[Guarantee]:
    """Each guarantee of docs/security.md, probed on this machine for this user."""
    p = _probe()
    fix = _cgroup_fix(p, "freezer")
    sandboxed = p.sandbox is None
    out = [
        Guarantee("sandbox: a bot sees only the runtime, its own files and a private /tmp; no network",
                  sandboxed, "bubblewrap runs here" if sandboxed else str(p.sandbox),
                  "" if sandboxed else "apt-get install bubblewrap (and allow unprivileged user namespaces: "
                                       "sysctl kernel.unprivileged_userns_clone=1)"),
        Guarantee("bots never hold root's powers",
                  True, "each bot runs as an unprivileged uid of its own" if p.root else
                  "bots run as your user, which holds no root power"),
        Guarantee("frozen between turns (a spinning bot takes no CPU from its opponent)", p.freeze,
                  "a cgroup freezer per bot" if p.freeze else "no cgroup with a freezer can be made here", fix),
        Guarantee("deadlines in CPU time of the bot's whole tree, not wall-clock time", p.cpu,
                  "a CPU counter per bot's cgroup" if p.cpu else "deadlines are wall-clock time", fix),
        Guarantee("memory_mb bounds the memory of the bot's whole tree", p.memory,
                  "its cgroup's memory bound" if p.memory else
                  "only each process's address space (RLIMIT_AS): children multiply it", _cgroup_fix(p, "memory")),
    ]
    per_bot_nproc = p.pids or (sandboxed and p.userns)
    out.append(Guarantee(
        "processes bounds each bot alone (one bot's fork bomb never stops another's starts)", per_bot_nproc,
        "its cgroup's pids.max" if p.pids else "RLIMIT_NPROC inside the bot's own user namespace" if per_bot_nproc
        else "RLIMIT_NPROC counts every process of your user: bots share it",
        "" if per_bot_nproc else _cgroup_fix(p, "pids")))
    out.append(Guarantee("scratch_mb bounds a bot's /tmp in bytes", sandboxed,
                         "a tmpfs of scratch_mb" if sandboxed else "no sandbox: a bot writes where your user may",
                         "" if sandboxed else "apt-get install bubblewrap"))
    inodes = sandboxed and (not p.userns or p.memory)
    out.append(Guarantee(
        "a bot's /tmp is bounded in files (inodes) too", inodes,
        ("nr_inodes on its tmpfs" if not p.userns else "its files' kernel memory counts in its cgroup's memory bound")
        if inodes else "bubblewrap cannot bound a tmpfs's inodes, and no memory cgroup counts them here",
        _cgroup_fix(p, "memory")))
    out.append(Guarantee("no process of a bot outlives it", p.cgroups or sandboxed,
                         "its cgroup" if p.cgroups else "its own PID namespace (the sandbox)" if sandboxed else
                         "only its process group and a /proc scan", fix))
    out.append(Guarantee("a bot's files are bounded in size (RLIMIT_FSIZE)", True, "scratch_mb per file"))
    return out


def ranked_play_problems(sandbox: str | None) -> list[str]:
    """What ranked games lack here (empty: the sandbox and the CPU clock both hold): ``sandbox``
    is the contest's resolved choice (``bwrap`` or None)."""
    problems = []
    if sandbox != "bwrap" or bwrap_problem() is not None:
        problems.append(f"no sandbox ({bwrap_problem() or 'sandbox: none'}): bots can read the store and each other")
    clock = [g for g in guarantees() if g.name.startswith(("frozen", "deadlines"))]
    problems += [f"{g.name.split(' (')[0]}: not here ({g.how}); {g.fix}" for g in clock if not g.holds]
    return problems


def off_here() -> str | None:
    """One warning line naming the guarantees that do not hold here (the sandbox aside: its own
    warning says so), or None: what ``harness run`` says before it plays."""
    off = [g.name.split(" (")[0] for g in guarantees() if not g.holds and not g.name.startswith("sandbox")]
    if not off:
        return None
    return ("warning: on this machine, for this user, these guarantees of docs/security.md do not hold: "
            + "; ".join(off) + " (`harness doctor` says what would make each hold)")
