"""The checking primitives of league configs: the errors, and a checker whose every refusal is
one :class:`ConfigError` line naming the file, the key and what is allowed.

The sections' checks (:mod:`harness.league.bot_entries`, :mod:`harness.league.run_settings`,
:mod:`harness.league.config`) are built on :class:`Checker`.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["LeagueError", "ConfigError", "Checker", "show", "unknown_key", "rel_path", "NAME_RE"]


class LeagueError(ValueError):
    """A league that cannot be played or read as asked (its config, its store, its cluster); the
    message is one line saying what and how to fix it."""


class ConfigError(LeagueError):
    """A league config that cannot be used; the message is one line naming the file and the key."""


NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class Checker:
    """Checks of one config's values; each refusal is a ConfigError naming the file and key."""

    def __init__(self, path: str, strict: bool = True) -> None:
        self.path = path
        #: False for commands that only read results: bots need not be runnable on this machine.
        self.strict = strict

    def fail(self, key: str, message: str) -> ConfigError:
        """The error for ``key`` (empty: the whole file): ``FILE: KEY: MESSAGE``."""
        where = f"{self.path}: {key}: " if key else f"{self.path}: "
        return ConfigError(where + message)

    def mapping(self, value: Any, key: str, allowed: tuple[str, ...] | Mapping[str, Any]) -> dict[str, Any]:
        """``value`` as a mapping whose keys are all ``allowed`` (None: empty)."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a mapping of {', '.join(allowed)}, got {show(value)}")
        for k in value:
            if not isinstance(k, str) or k not in allowed:
                raise self.fail(f"{key}.{k}" if key else str(k), unknown_key(str(k), allowed))
        return value

    def integer(self, value: Any, key: str, lo: int | None = None, hi: int | None = None) -> int:
        """``value`` as an integer from ``lo`` to ``hi`` (None: unbounded); a bool is no integer."""
        if type(value) is not int or (lo is not None and value < lo) or (hi is not None and value > hi):
            if lo is not None and hi is not None:
                allowed = f"an integer from {lo} to {hi}"
            elif lo is not None:
                allowed = f"an integer >= {lo}"
            else:
                allowed = "an integer"
            raise self.fail(key, f"{show(value)} is not allowed (allowed: {allowed})")
        return value

    def number(self, value: Any, key: str, ok: Callable[[float], bool], allowed: str) -> float:
        """``value`` as a float for which ``ok`` holds (``allowed`` says which in the message)."""
        if type(value) not in (int, float) or not ok(float(value)):
            raise self.fail(key, f"{show(value)} is not allowed (allowed: {allowed})")
        return float(value)

    def name(self, value: Any, key: str) -> str:
        """``value`` as a name: letters, digits, '_', '.', '-', starting with a letter or digit."""
        if not isinstance(value, str) or not NAME_RE.match(value):
            raise self.fail(key, f"{show(value)} is not allowed (allowed: letters, digits, '_', '.', '-', "
                                 f"starting with a letter or digit)")
        return value


def show(value: Any) -> str:
    """How a YAML value is quoted in a message (as the YAML would write it)."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null (empty)"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return repr(value) if isinstance(value, str) else str(value)


#: Names people write for a key, by meaning (spelling alone would take `cmd` for `cwd`).
_SYNONYMS = {"cmd": "command", "exec": "command", "run": "command", "argv": "command", "dir": "cwd",
             "workdir": "cwd", "directory": "cwd", "player": "players", "seats": "players", "round": "rounds"}


def unknown_key(key: str, allowed: tuple[str, ...] | Mapping[str, Any]) -> str:
    """The message for an unknown ``key``: the closest allowed key by meaning and spelling, and all of them."""
    names = list(allowed)
    close = [n for n in [_SYNONYMS.get(key.lower(), "")] + difflib.get_close_matches(key, names, n=1) if n in names]
    close = list(dict.fromkeys(close))  # the meaning first, then the spelling, each once
    hint = f" (did you mean {' or '.join(repr(n) for n in close)}?)" if close else ""
    return f"unknown key{hint}; allowed keys: {', '.join(names)}"


def rel_path(path: Path) -> str:
    """``path`` as a message shows it: relative to the current directory unless that is far."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("../../..") else str(path)
