"""Epizodiak, 3 players on a dial of tiles 1-12: rules in docs/rules/epizodiak.md.

Every game package has the same layout: ``game`` (the :class:`~harness.games.base.Game`: options,
new states, snapshots, the text form of actions), ``state`` (the state and its turn flow),
``sampling`` (``resample_from_infostate``) and ``evaluator`` (what a tree search needs to know
of the game), plus ``dial`` (the dial's vocabulary) and ``reasons`` (why an action is rejected).
"""

from .game import Epizodiak
from .state import EpizodiakState

__all__ = ["Epizodiak", "EpizodiakState"]
