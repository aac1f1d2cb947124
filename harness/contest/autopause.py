"""Auto-pause: a current version that forfeits or violates too often leaves the ladder.

After each flush of the standings (:class:`~harness.contest.ladder.Standings`), every current
version that has played ``pause.min_games`` ladder games is checked against ``pause.forfeit_rate``
(forfeited games / games) and ``pause.violation_rate`` (violations / games) of ``contest.yaml``.
One over its rate is *paused*: its status becomes ``paused``, the roster (:meth:`ContestDB.roster`)
no longer offers it, so the ladder re-plans without it, and a ``pauses`` row keeps the reason. Its
games and rating stay. The team's page says why and what to do; uploading a version that passes
conformance makes it current again (the paused one is then ``replaced``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.contest import db_ops
from harness.contest.config import PausePolicy
from harness.contest.db import ContestDB

__all__ = ["pause_reason", "pause_failing", "pause_of", "WHAT_TO_DO"]

WHAT_TO_DO = ("download one of its failing games or violations from your page, reproduce it at home with "
              "`harness reproduce FILE --command ...`, fix the bot and upload the fixed version: once it passes "
              "the conformance games it plays in the ladder again")


def pause_reason(games: int, forfeits: int, violations: int, policy: PausePolicy) -> str | None:
    """Why a version with these totals is paused, or None (too few games, or within the rates)."""
    if games < policy.min_games or games == 0:
        return None
    if policy.forfeit_rate is not None and forfeits / games > policy.forfeit_rate:
        return (f"it forfeited {forfeits} of its {games} ladder games ({forfeits / games:.0%}, more than the "
                f"contest's {policy.forfeit_rate:.0%})")
    if policy.violation_rate is not None and violations / games > policy.violation_rate:
        return (f"it committed {violations} violations in its {games} ladder games ({violations / games:.2f} a game, "
                f"more than the contest's {policy.violation_rate:g})")
    return None


def pause_failing(db: ContestDB, policy: PausePolicy, echo: Callable[[str], None] | None = None) -> list[int]:
    """Pause every current version over a rate; return the submission ids paused now."""
    paused = []
    for c in db_ops.pause_candidates(db, policy.min_games):
        reason = pause_reason(c.games, c.forfeits, c.violations, policy)
        if reason is None or not db_ops.pause_version(db, c, reason):
            continue
        paused.append(c.id)
        if echo is not None:
            echo(f"paused {c.name}'s version s{c.id}: {reason}")
    return paused


def pause_of(db: ContestDB, submission_id: int) -> dict[str, Any] | None:
    """The pause of a version (reason, when, its totals then), or None."""
    pause = db_ops.pause_of(db, submission_id)
    return pause._asdict() if pause else None
