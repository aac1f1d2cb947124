"""``harness contest team import DIR teams.csv``: many teams at once, their tokens in a private file.

The CSV's first column is the team's name (a first row ``name`` is a header; other columns, such
as the members, are ignored; blank lines are skipped). Every name is checked before any team is
added, so a bad or taken name adds none. The tokens go to a new file created with mode 0600 (its
owner alone reads it), never printed: a terminal's scrollback or a CI log does not keep them.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from harness.contest.auth import NAME_RE, add_team
from harness.contest.db import ContestDB

__all__ = ["import_teams", "ImportError_"]


class ImportError_(ValueError):  # noqa: N801  (not the builtin ImportError)
    """A teams file that cannot be imported; one line naming the file, the line and why."""


def _names(csv_file: Path, db: ContestDB) -> list[str]:
    try:
        rows = list(csv.reader(csv_file.read_text(encoding="utf-8-sig").splitlines()))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ImportError_(f"{csv_file}: cannot read it ({exc})") from None
    names: list[str] = []
    for number, row in enumerate(rows, 1):
        name = row[0].strip() if row else ""
        if not name or (number == 1 and name.lower() in ("name", "team")):
            continue
        if not NAME_RE.match(name):
            raise ImportError_(f"{csv_file}:{number}: {name!r} is not allowed as a team name (1-40 letters, digits, "
                               f"'_', '.', '-', starting with a letter or digit); no team was added")
        if name in names or db.team_by_name(name) is not None:
            raise ImportError_(f"{csv_file}:{number}: a team named {name!r} exists already; no team was added")
        names.append(name)
    if not names:
        raise ImportError_(f"{csv_file}: no team names in its first column")
    return names


def import_teams(db: ContestDB, csv_file: Path, out: Path) -> tuple[Path, list[str]]:
    """Add the teams of ``csv_file``; write ``team,token`` lines to ``out`` (new, mode 0600)."""
    names = _names(csv_file, db)
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ImportError_(f"{out}: exists already (choose another --out: tokens are never overwritten)") from None
    except OSError as exc:
        raise ImportError_(f"{out}: cannot create it ({exc.strerror})") from None
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        os.fchmod(handle.fileno(), 0o600)  # whatever the umask
        writer = csv.writer(handle)
        writer.writerow(["team", "token"])
        for name in names:
            writer.writerow([name, add_team(db, name)])
            handle.flush()
    return out, names
