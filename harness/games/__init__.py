"""Rules engines and the registry of games.

>>> from harness.games import get_game, GAMES, IllegalAction
>>> game = get_game("epizodiak")
>>> state = game.new_state(players=3, seed=7, options={})

The built-in games are the lines of ``BUILT_IN`` below: a name and the ``module:Class`` that
implements :class:`harness.games.base.Game`. A game in another installed package registers itself
with a Python entry point in the group ``tablebots.games`` (:data:`ENTRY_POINT_GROUP`), named as
the game and naming its ``Game`` class; in that package's ``pyproject.toml``::

    [project.entry-points."tablebots.games"]
    nim = "nim_for_tablebots:Nim"

It then works everywhere a built-in game does (docs/games.md). Engines are imported on first
use, so a broken engine cannot stop the others from loading: it fails with
:class:`GameLoadError` naming the entry point when it is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .base import (
    Action,
    EndedBy,
    Game,
    GameResult,
    IllegalAction,
    InvalidAction,
    InvalidOptions,
    InvalidSnapshot,
    Option,
    State,
    ranking_from_keys,
)

__all__ = ["GAMES", "get_game", "EndedBy", "Game", "GameResult", "State", "Action", "Option", "IllegalAction", "InvalidAction",
           "InvalidOptions", "InvalidSnapshot", "UnknownGame", "GameLoadError", "ENTRY_POINT_GROUP",
           "ranking_from_keys"]

#: The entry-point group in which installed packages register games.
ENTRY_POINT_GROUP = "tablebots.games"

BUILT_IN: dict[str, str] = {
    "epizodiak": "harness.games.epizodiak:Epizodiak",
    "dominoes": "harness.games.dominoes:Dominoes",
    "crisps": "harness.games.crisps:Crisps",
}


class UnknownGame(ValueError):
    """A game name that is not registered."""


class GameLoadError(ValueError):
    """A registered game whose engine cannot be imported or is not a :class:`Game` of that name."""


def _plugins() -> dict[str, str]:
    """Games registered by installed packages: name -> ``module:Class`` (built-in names are kept)."""
    from importlib.metadata import entry_points  # only when a plug-in may be asked for: ~10-20 ms

    found: dict[str, str] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name not in BUILT_IN:
            found.setdefault(point.name, point.value)
    return found


class _Registry(Mapping[str, Game]):
    """Read-only name -> Game mapping: the built-in games, then the installed plug-ins (looked up
    once, on first use); each engine is imported when first asked for."""

    def __init__(self, built_in: Mapping[str, str]) -> None:
        self._built_in = dict(built_in)
        self._paths: dict[str, str] | None = None

    @property
    def paths(self) -> dict[str, str]:
        """name -> ``module:Class`` of every registered game."""
        if self._paths is None:
            self._paths = {**self._built_in, **_plugins()}
        return self._paths

    def __getitem__(self, name: str) -> Game:
        try:  # a built-in game is found without looking at the installed packages
            path = self._built_in[name] if name in self._built_in else self.paths[name]
        except KeyError:
            raise UnknownGame(f"unknown game {name!r} (known games: {', '.join(self.paths)})") from None
        module_name, _, class_name = path.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
            game = cls()
        except Exception as exc:  # noqa: BLE001 - a plug-in's failure, whatever it is, is named, not a crash
            raise GameLoadError(f"game {name!r} ({path}) cannot be loaded: {type(exc).__name__}: {exc}") from exc
        if not isinstance(game, Game) or game.name != name:
            raise GameLoadError(f"game {name!r} ({path}) is not a harness.games.Game named {name!r}")
        return game

    def __contains__(self, name: object) -> bool:
        return name in self._built_in or name in self.paths

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


GAMES: Mapping[str, Game] = _Registry(BUILT_IN)


def get_game(name: str) -> Game:
    """The registered game called ``name``; :class:`UnknownGame` (a ValueError) lists the known ones,
    :class:`GameLoadError` (a ValueError) says why a registered one cannot be loaded."""
    return GAMES[name]
