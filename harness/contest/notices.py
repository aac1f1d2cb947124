"""What every page shows above its body: the organizer's latest announcements, and to a signed-in
team why it (or its current version) is out of the ladder. One indexed read of small tables."""

from __future__ import annotations

import time
from typing import Any

from harness.contest.db import ContestDB

__all__ = ["notices", "ANNOUNCEMENTS_SHOWN"]

ANNOUNCEMENTS_SHOWN = 3


def notices(db: ContestDB, team_id: int | None) -> dict[str, Any]:
    """``announcements``: the latest (text, when); ``blocked``: the signed-in team's reasons;
    ``removed``: the names of removed teams (their games stay, marked in the lists)."""
    shown = [{"text": text, "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))}
             for text, at in db.latest_announcements(ANNOUNCEMENTS_SHOWN)]
    blocked: list[str] = []
    if team_id is not None:
        for kind, ref, reason in db.blocks_of_team(team_id):
            what = "your team is" if kind == "team" else f"your version s{ref} is"
            blocked.append(f"{what} out of the ladder, disabled by the organizer: {reason}")
    removed = db.removed_team_names()
    return {"announcements": shown, "blocked": blocked, "removed": removed}
