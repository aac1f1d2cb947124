"""A league config's ``bots``: each bot's entry, resolved and checked before anything runs.

A bot runs in its ``cwd`` (relative to the config file's directory, which is the default), so the
paths in its command are relative to it too; the words that name files must exist (when the
config is strict), and they make the bot's version with every file of its directory
(:mod:`harness.league.versions`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.league.config_checks import Checker, rel_path, show
from harness.league.versions import TooManyFiles, content_version, directory_files, version_dir

__all__ = ["BotEntry", "BOT_KEYS", "SCRIPT_SUFFIXES", "NAME_MAX", "check_bots", "check_own_dirs", "looks_like_path"]

BOT_KEYS = ("name", "command", "cwd", "version")
#: Words of a command that are taken as file paths (and must exist) even without a slash.
SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".sh", ".lua", ".jar", ".php", ".R")
PYTHON_RE = re.compile(r"^python(3(\.\d+)?)?$")
#: The longest file name (one path component) Linux file systems accept, in bytes.
NAME_MAX = 255


@dataclass(frozen=True)
class BotEntry:
    """One bot of a league, resolved: its command, absolute working directory and version."""

    name: str
    command: tuple[str, ...]
    cwd: str
    version: str
    #: Absolute paths of the files whose content makes the version: every file of the bot's
    #: directory and those its command names (:mod:`harness.league.versions`).
    files: tuple[str, ...] = ()
    #: The directory a sandboxed bot sees as its own (its ``cwd`` when the config sets one;
    #: None: only the directory of its program, :func:`harness.play.sandbox.program_dir`).
    sandbox_dir: str | None = None

    @property
    def label(self) -> str:
        """``name@version``: how one version of a bot is named in tables and listings."""
        return f"{self.name}@{self.version}"


def check_bots(c: Checker, value: Any, base_dir: Path) -> tuple[BotEntry, ...]:
    """``bots``: a list of at least 2 of {name, command, cwd, version}, each resolved to a BotEntry."""
    if not isinstance(value, list) or len(value) < 2:
        got = f"{len(value)} bot" + ("" if len(value) == 1 else "s") if isinstance(value, list) else show(value)
        raise c.fail("bots", f"a list of at least 2 bots is needed (each with name and command), got {got}")
    entries = []
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        key = f"bots[{i}]"
        if not isinstance(item, dict):
            raise c.fail(key, f"expected a mapping with name and command, got {show(item)}")
        c.mapping(item, key, BOT_KEYS)
        if "name" not in item:
            raise c.fail(f"{key}.name", "missing (each bot needs a name and a command)")
        name = c.name(item["name"], f"{key}.name")
        if name in seen:
            raise c.fail(f"{key}.name", f"{name!r} is already the name of bots[{seen[name]}]")
        seen[name] = i
        cwd = base_dir
        if item.get("cwd") is not None:
            if not isinstance(item["cwd"], str):
                raise c.fail(f"{key}.cwd", f"{show(item['cwd'])} is not a directory path")
            cwd = (base_dir / item["cwd"]).resolve()
            if c.strict and not cwd.is_dir():
                raise c.fail(f"{key}.cwd", f"{item['cwd']} is not a directory (relative to {rel_path(base_dir)})")
        command = _check_command(c, item.get("command"), f"{key}.command", cwd)
        files, root = _command_files(command, cwd), None
        runnable = all(_exists(cwd / w) for w in command if looks_like_path(w))
        declared = str(cwd) if item.get("cwd") is not None else None
        auto = str(item.get("version", "auto")) == "auto"  # a fixed label needs no hash (a contest's s<id>)
        folder = version_dir(command, cwd, declared, base_dir) if runnable and auto else None
        if folder is not None:  # every file of its directory: a rebuild is a new version
            try:
                files, root = tuple(dict.fromkeys(directory_files(folder) + files)), str(folder)
            except TooManyFiles as exc:
                raise c.fail(f"{key}.cwd", str(exc)) from None
        version = item.get("version", "auto")
        if not isinstance(version, (str, int)) or isinstance(version, bool) or not str(version).strip():
            raise c.fail(f"{key}.version", f"{show(version)} is not allowed (allowed: auto, or a fixed label)")
        version = str(version)
        if version == "auto":
            version = content_version(command, files, root) if runnable else "unavailable"
        elif "@" in version or any(ch.isspace() for ch in version):
            raise c.fail(f"{key}.version", f"{version!r} is not allowed (no spaces or '@')")
        entries.append(BotEntry(name=name, command=command, cwd=str(cwd), version=version, files=files,
                                sandbox_dir=declared))
    return tuple(entries)


def check_own_dirs(c: Checker, bots: tuple[BotEntry, ...]) -> None:
    """Refuse a bot whose command names a file outside its own directory: sandboxed, it sees only
    that directory (its ``cwd``, else its program's), never what a word of its command names."""
    from harness.play.limits import resolve_command
    from harness.play.sandbox import outside_word, own_dirs

    for i, bot in enumerate(bots):
        argv = resolve_command(bot.command)
        own = own_dirs(argv, bot.cwd, bot.sandbox_dir)
        word = outside_word(argv, bot.cwd, own)
        if word is not None:
            where = (f"is outside its directory {' and '.join(rel_path(Path(d)) for d in own)}" if own else
                     "names a file, and the bot has no directory of its own (its command names no program file)")
            raise c.fail(f"bots[{i}].command", f"{word} {where}: a sandboxed bot sees only its own directory "
                                               f"(set cwd to one that holds every file it names, or move the "
                                               f"file there)")


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; False for what cannot be a path (too long, a NUL byte...)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def looks_like_path(word: str) -> bool:
    """Whether a command word names a file (has a slash, or a script suffix), not an option."""
    return not word.startswith("-") and ("/" in word or word.endswith(SCRIPT_SUFFIXES))


def _check_command(c: Checker, value: Any, key: str, cwd: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise c.fail(key, f"cannot split {value!r} into words: {exc}") from None
    elif isinstance(value, list) and all(isinstance(w, (str, int, float)) and not isinstance(w, bool) for w in value):
        words = [str(w) for w in value]
    else:
        raise c.fail(key, f"expected a command line (a string, or a list of words), got {show(value)}")
    if not words:
        raise c.fail(key, "empty command")
    exe = words[0]
    if not c.strict:
        return tuple(words)
    if "/" not in exe and not PYTHON_RE.match(exe) and shutil.which(exe) is None:
        raise c.fail(key, f"{exe!r} not found on PATH")
    for i, word in enumerate(words):
        if not looks_like_path(word):
            continue
        longest = max(len(part.encode()) for part in word.split("/"))
        if longest > NAME_MAX:
            shown = word if len(word) <= 60 else word[:57] + "..."
            raise c.fail(key, f"{shown!r} names a file of {longest} bytes, longer than a file name may be "
                              f"({NAME_MAX} bytes)")
        target = cwd / word
        if not _exists(target):
            hint = ""
            if Path(word).exists():  # relative to the current directory instead: say how to write it
                hint = f"; did you mean {os.path.relpath(Path(word).resolve(), cwd)}?"
            raise c.fail(key, f"{word} not found (relative to {rel_path(cwd)}{hint})")
        if i == 0 and not (target.is_file() and os.access(target, os.X_OK)):
            raise c.fail(key, f"{word} is not an executable file (chmod +x it, or start the command with "
                              f"its interpreter, e.g. python3 {word})")
    return tuple(words)


def _command_files(command: tuple[str, ...], cwd: Path) -> tuple[str, ...]:
    files = []
    for word in command:
        if word.startswith("-"):
            continue
        target = cwd / word
        if ("/" in word or word.endswith(SCRIPT_SUFFIXES) or word != command[0]) and _is_file(target):
            files.append(str(target.resolve()))
    return tuple(files)
