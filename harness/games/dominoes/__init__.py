"""All-Fives Dominoes, 2-4 players: rules in docs/rules/dominoes.md.

Every game package has the same layout: ``game`` (the :class:`~harness.games.base.Game`: options,
new states, snapshots, the text form of actions), ``state`` (the state and its turn flow),
``sampling`` (``resample_from_infostate``) and ``evaluator`` (what a tree search needs to know
of the game).
"""

from .game import Dominoes
from .state import DominoesState

__all__ = ["Dominoes", "DominoesState"]
