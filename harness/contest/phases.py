"""Whether the site takes uploads now, and the line every page shows about it.

contest.yaml's ``phases`` give the times (``opens``, ``uploads_close``, ``finals``); the
organizer's controls override them: ``close`` shuts uploads whatever the times, ``reopen``
opens them (until a time, or until closed again) even after ``uploads_close`` or the finals'
freeze. The finals freeze uploads (meta ``frozen``) when they start.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from harness.contest.config import ContestConfig
from harness.contest.db import ContestDB

__all__ = ["UploadState", "upload_state", "when"]


def when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


@dataclass(frozen=True)
class UploadState:
    """``open`` and the sentence that says so (with the time of the next change, when there is one)."""

    open: bool
    line: str


def upload_state(cfg: ContestConfig, db: ContestDB, now: float | None = None) -> UploadState:
    """The site's uploads now: open or closed, and why (see the module docstring for the order)."""
    now = time.time() if now is None else now
    p = cfg.phases
    finals = f"; the finals are planned for {when(p.finals)}" if p.finals else ""
    reopened = float(db.get_meta("reopened_until", "0") or 0)
    if db.get_meta("closed") == "1":
        return UploadState(False, "uploads closed by the organizer" + finals)
    if reopened > now:
        until = "" if reopened == float("inf") else f" until {when(reopened)}"
        return UploadState(True, f"uploads open (reopened by the organizer{until})" + finals)
    if db.get_meta("frozen") == "1":
        return UploadState(False, "uploads closed: the finals have started")
    if p.opens is not None and now < p.opens:
        return UploadState(False, f"uploads closed: the contest opens {when(p.opens)}" + finals)
    if p.uploads_close is not None and now >= p.uploads_close:
        return UploadState(False, f"uploads closed since {when(p.uploads_close)}" + finals)
    if p.uploads_close is not None:
        return UploadState(True, f"uploads open until {when(p.uploads_close)}" + finals)
    return UploadState(True, "uploads open" + finals)
