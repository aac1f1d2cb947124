"""The bubblewrap sandbox: what a bot can see and write, and the ``auto`` default.

A sandboxed bot sees only:

- the system's runtime, read-only: ``/usr`` (with ``/bin``, ``/sbin``, ``/lib*`` as on the host),
  the few files under ``/etc`` that programs need to start (the dynamic loader's cache,
  ``alternatives``, certificates, ``passwd``/``group``, time zone), and the Python installation
  the harness itself runs on (its ``sys.prefix`` and ``sys.base_prefix``), so a ``python3`` bot
  starts with the harness's interpreter, and the ``harness`` package itself (code, no data:
  bots written on its SDK import it);
- its own files, read-only: the directory of the program its command names (``python3
  bots/x.py`` -> ``bots/``; ``./mybot`` -> its directory), and its ``cwd`` when the league
  config sets one; it runs in that ``cwd``, else in its program's directory;
- a private, empty, writable ``/tmp`` (also its ``HOME`` and ``TMPDIR``), gone when it ends;
- a minimal ``/dev`` and its own ``/proc`` (its own PID namespace: it sees only its processes).

No network (its own empty network namespace), no IPC with the host, no capabilities (``--cap-drop
ALL`` when the harness runs as root), and a clean environment (``PATH``, ``LANG``, ``HOME``,
``TMPDIR`` and the harness's kill token). Everything else — the other bots, the league store
(which holds every seat's hands in its logs), the logs, home directories — does not exist inside.

``auto`` (the default of leagues, ``play`` and ``check-bot``) uses bubblewrap when a probe run
(``bwrap ... true``, once per process) works on this machine, and otherwise runs bots without a
sandbox after one warning line. Starting a bot under bwrap costs ~2-4 ms more; bots are started
once per worker and reused, so a league does not notice.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["SANDBOX_CHOICES", "bwrap_command", "bwrap_problem", "program_dir", "resolve_sandbox", "sandbox_env"]

SANDBOX_CHOICES = ("auto", "bwrap", "none")

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
              "localtime", "timezone", "nsswitch.conf", "passwd", "group", "hosts", "host.conf", "gai.conf",
              "mime.types", "protocols", "services")
_ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONHASHSEED", "PYTHONUNBUFFERED")


def _runtime_prefixes() -> list[str]:
    """The Python installation the harness runs on (a venv and its base), when outside /usr."""
    out = []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.path.realpath(sys.base_prefix))):
        if prefix and not any(prefix == d or prefix.startswith(d + "/") for d in _SYSTEM_DIRS):
            out.append(prefix)
    return out


def _is_runtime(path: str) -> bool:
    real = os.path.realpath(path)
    roots = [*_SYSTEM_DIRS, *_runtime_prefixes(), *(os.path.realpath(p) for p in _runtime_prefixes())]
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)


def program_dir(argv: Sequence[str], cwd: str) -> str | None:
    """The directory of the program a command names: the executable itself when it is not part of
    the system's runtime (``./mybot``), else the first later word that names an existing file
    (``python3 bots/x.py`` -> ``bots/``). None if there is none (``python3 -m pkg``)."""
    for i, word in enumerate(argv):
        if i == 0:
            exe = os.path.join(cwd, word) if os.sep in word else shutil.which(word)
            if exe and os.path.isfile(exe) and not _is_runtime(exe):
                return os.path.dirname(os.path.abspath(exe))
            continue
        if word.startswith("-"):
            continue
        path = os.path.join(cwd, word)
        if os.path.isfile(path):
            return os.path.dirname(os.path.abspath(path))
    return None


def bwrap_command(argv: Sequence[str], cwd: str, own_dirs: Sequence[str]) -> list[str]:
    """``argv`` wrapped in bubblewrap as the module docstring describes: ``own_dirs`` are the bot's
    own directories (read-only), and it runs in the first. Words of ``argv`` that name existing
    paths relative to ``cwd`` (the harness's view) are made absolute."""
    cmd = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "bot"]
    if os.geteuid() == 0:
        cmd += ["--cap-drop", "ALL"]
    # the private /tmp first: binds made after it land on top of it, so an interpreter, package
    # or bot that lives under /tmp (a CI checkout there) stays visible instead of being hidden
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    for name in _ETC_FILES:
        path = os.path.join("/etc", name)
        if os.path.exists(path):
            cmd += ["--ro-bind", path, path]
    for prefix in _runtime_prefixes():
        if os.path.isdir(prefix):
            cmd += ["--ro-bind", prefix, prefix]
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../harness: the SDK's code
    cmd += ["--ro-bind", package, package]
    for own in dict.fromkeys(own_dirs):
        cmd += ["--ro-bind", own, own]
    words = [os.path.abspath(os.path.join(cwd, w)) if i and os.path.exists(os.path.join(cwd, w)) else w
             for i, w in enumerate(argv)]
    if os.sep in words[0] and not os.path.isabs(words[0]):
        words[0] = os.path.abspath(os.path.join(cwd, words[0]))
    return cmd + ["--chdir", own_dirs[0] if own_dirs else "/tmp", "--", *words]


def sandbox_env(env: dict[str, str]) -> dict[str, str]:
    """The environment a sandboxed bot gets: a few harmless variables of ``env``, HOME and TMPDIR
    in its private /tmp, and the harness's kill token (any variable starting ``TABLEBOTS_``)."""
    out = {k: v for k, v in env.items() if k in _ENV_KEPT or k.startswith("TABLEBOTS_")}
    out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    out["HOME"] = out["TMPDIR"] = "/tmp"
    return out


def bwrap_problem() -> str | None:
    """Why the bwrap sandbox cannot be used here (None if it can): probed by running ``true``
    inside it, once per process and ``bwrap`` executable."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    return _probe(exe)


@functools.cache
def _probe(exe: str) -> str | None:
    try:
        probe = subprocess.run([exe, *bwrap_command(["true"], "/", [])[1:]], capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap does not run here: {exc}"
    if probe.returncode != 0:
        why = probe.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap does not work here: {why[-1] if why else f'exit status {probe.returncode}'}"
    return None


def resolve_sandbox(requested: str | None) -> tuple[str | None, str | None]:
    """The sandbox to use for ``requested`` (``auto``, ``bwrap``, ``none`` or None = none), and a
    warning line when ``auto`` falls back to none. ``bwrap`` is returned as asked: whether it
    works is checked (with a clear error) when a bot starts."""
    if requested in (None, "none"):
        return None, None
    if requested == "auto":
        problem = bwrap_problem()
        if problem is None:
            return "bwrap", None
        return None, f"warning: bots run without a sandbox: {problem}"
    return requested, None
