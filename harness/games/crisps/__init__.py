"""Crisps, a 2-player climbing card game: rules in docs/rules/crisps.md.

Every game package has the same layout: ``game`` (the :class:`~harness.games.base.Game`: options,
new states, snapshots, the text form of actions), ``state`` (the state and its turn flow),
``sampling`` (``resample_from_infostate``) and ``evaluator`` (what a tree search needs to know
of the game), plus ``plays`` (the plays of a hand, from tables) and ``snapshot`` (restoring ``to_json``).
"""

from .game import Crisps
from .state import CrispsState

__all__ = ["Crisps", "CrispsState"]
