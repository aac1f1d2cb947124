"""`harness contest` commands for running a contest over weeks: status, backups, bulk teams and the
organizer's controls (thin: the work is in :mod:`harness.contest`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.common import echo

contest_dir = click.argument("contest_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))


def _load(root: Path):  # type: ignore[no-untyped-def]
    from harness.contest.config import ContestConfigError, load_contest

    try:
        return load_contest(root)
    except ContestConfigError as exc:
        raise click.ClickException(str(exc)) from None


@click.command()
@contest_dir
def status(contest_dir: Path) -> None:
    """Show the contest's games, pace, upload queue, disk, and what the log retention drops.

    Safe while the site and the ladder run.
    """
    from harness.contest.db import ContestDB
    from harness.contest.status import contest_status, format_status

    cfg = _load(contest_dir)
    db = ContestDB(cfg.db_path)
    try:
        for line in format_status(contest_status(cfg, db)):
            echo(line)
    finally:
        db.close()


def register(group: click.Group, team: click.Group) -> None:
    """Add these commands to ``harness contest`` (and its ``team`` group)."""
    group.add_command(status)
