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
    shown = [{"text": r["text"], "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(r["at"]))}
             for r in db.db.execute("SELECT text, at FROM announcements ORDER BY id DESC LIMIT ?",
                                    (ANNOUNCEMENTS_SHOWN,))]
    blocked: list[str] = []
    if team_id is not None:
        for r in db.db.execute(
                "SELECT b.kind, b.ref, b.reason FROM blocks b LEFT JOIN submissions s ON b.kind = 'version' AND "
                "s.id = b.ref WHERE (b.kind = 'team' AND b.ref = ?) OR s.team_id = ?", (team_id, team_id)):
            what = "your team is" if r["kind"] == "team" else f"your version s{r['ref']} is"
            blocked.append(f"{what} out of the ladder, disabled by the organizer: {r['reason']}")
    removed = {r[0] for r in db.db.execute("SELECT t.name FROM team_state ts JOIN teams t ON t.id = ts.team_id "
                                           "WHERE ts.removed_at IS NOT NULL")}
    return {"announcements": shown, "blocked": blocked, "removed": removed}
