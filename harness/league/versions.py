"""A bot's version: a short hash of its command and of every file of its own directory.

Hashing only the files a command names missed rebuilds: ``java -cp . Bot`` names no file, so a
recompiled ``Bot.class`` kept its version (and ``harness run`` said every game was already
played). The version therefore covers every file of the bot's directory: its ``cwd`` when the
config sets one, else its program's directory (the executable given with a path, or an interpreter's script), the
same directory the sandbox shows it. Derived caches that a run itself may write there
(``__pycache__``, ``*.pyc``) and version-control metadata (``.git``) are left out, so running a bot
does not change its version. The config's own directory (where the league's store and logs live)
is never hashed whole: a bot run from there is versioned by the files its command names alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MAX_VERSION_FILES", "TooManyFiles", "content_version", "directory_files", "version_dir"]

#: the most files a bot's directory may hold (a contest upload holds at most a few hundred)
MAX_VERSION_FILES = 5000
_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo")
#: options after which an interpreter runs code, not a file: no later word is the program
_CODE_OPTIONS = {"-c", "-m", "-e", "--eval", "-p", "--print", "-r"}


class TooManyFiles(ValueError):
    """A bot's directory holds more files than a version may cover."""


def version_dir(command: Sequence[str], cwd: Path, declared: str | None, config_dir: Path) -> Path | None:
    """The directory whose files make the bot's version: ``declared`` (its ``cwd``) or its
    program's directory; None when that is the config's directory or one of its parents."""
    found = declared or _program_dir(list(command), cwd)
    if not found:
        return None
    folder = Path(found).resolve()
    config_dir = config_dir.resolve()
    if folder == config_dir or folder in config_dir.parents:
        return None
    return folder


def _program_dir(argv: list[str], cwd: Path) -> str | None:
    """The directory of the program: the executable when given with a path (``./bot``), else the
    first word after the interpreter that names a file (``python3 -u bots/x.py``); an interpreter
    found on PATH is the system's runtime, never the bot's directory."""
    if not argv:
        return None
    if os.sep in argv[0]:  # the sandbox's own rule (an interpreter of the system or the harness is skipped)
        from harness.play.sandbox import program_dir

        return program_dir(argv, str(cwd))
    for word in argv[1:]:
        if word in _CODE_OPTIONS:
            return None
        if not word.startswith("-"):
            path = cwd / word
            return str(path.resolve().parent) if path.is_file() else None
    return None


def directory_files(folder: Path) -> tuple[str, ...]:
    """Every regular file under ``folder`` (absolute paths, sorted; symbolic links not followed),
    without the derived caches the module docstring names; :class:`TooManyFiles` past the cap."""
    out: list[str] = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in files:
            path = os.path.join(top, name)
            if name.endswith(_SKIP_SUFFIXES) or os.path.islink(path) or not os.path.isfile(path):
                continue
            out.append(path)
            if len(out) > MAX_VERSION_FILES:
                raise TooManyFiles(f"{folder} holds more than {MAX_VERSION_FILES} files: a bot's directory is "
                                   f"hashed whole for its version; give the bot a directory of its own (`cwd`)")
    return tuple(sorted(out))


def content_version(command: Sequence[str], files: Sequence[str], root: str | None = None) -> str:
    """A short hash of the command line and the content of ``files`` (the bot's version); with
    ``root``, each file's path relative to it counts too (a renamed file is a new version)."""
    digest = hashlib.sha256(json.dumps(list(command)).encode())
    for f in files:
        if root is not None:
            digest.update(b"\0" + os.path.relpath(f, root).encode())
        digest.update(b"\0" + Path(f).read_bytes())
    return digest.hexdigest()[:8]
