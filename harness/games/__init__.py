"""Rules engines and the registry of games.

>>> from harness.games import get_game, GAMES, IllegalAction
>>> game = get_game("epizodiak")
>>> state = game.new_state(players=3, seed=7, options={})

Registering a game is one line in ``_REGISTRY`` below: its name and the
``module:Class`` that implements :class:`harness.games.base.Game`. Engines are
imported on first use, so a broken engine cannot stop the others from loading.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .base import (
    Action,
    Game,
    IllegalAction,
    InvalidAction,
    InvalidOptions,
    InvalidSnapshot,
    Option,
    State,
    ranking_from_keys,
)

__all__ = ["GAMES", "get_game", "Game", "State", "Action", "Option", "IllegalAction", "InvalidAction",
           "InvalidOptions", "InvalidSnapshot", "UnknownGame", "ranking_from_keys"]

_REGISTRY: dict[str, str] = {
    "epizodiak": "harness.games.epizodiak:Epizodiak",
    "dominoes": "harness.games.dominoes:Dominoes",
    "crisps": "harness.games.crisps:Crisps",
}


class UnknownGame(ValueError):
    """A game name that is not registered."""


class _Registry(Mapping[str, Game]):
    """Read-only name -> Game mapping that imports each engine when first asked for."""

    def __init__(self, paths: Mapping[str, str]) -> None:
        self._paths = dict(paths)

    def __getitem__(self, name: str) -> Game:
        try:
            path = self._paths[name]
        except KeyError:
            raise UnknownGame(f"unknown game {name!r} (known games: {', '.join(self._paths)})") from None
        module_name, class_name = path.split(":")
        return getattr(importlib.import_module(module_name), class_name)()

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


GAMES: Mapping[str, Game] = _Registry(_REGISTRY)


def get_game(name: str) -> Game:
    """The registered game called ``name``; :class:`UnknownGame` (a ValueError) lists the known ones."""
    return GAMES[name]
