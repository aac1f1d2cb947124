"""`harness contest` commands for running a contest over weeks: status, backups, bulk teams and the
organizer's controls (thin: the work is in :mod:`harness.contest`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from harness.cli.common import contest_dir, echo, load_contest_config

_load = load_contest_config


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




def _who() -> str:
    import getpass

    try:
        return f"cli ({getpass.getuser()})"
    except (KeyError, OSError):
        return "cli"


def _db(root: Path):  # type: ignore[no-untyped-def]
    from harness.contest.db import ContestDB

    return ContestDB(_load(root).db_path)


def _control(root: Path, action, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
    """Run one of :mod:`harness.contest.controls`' actions as the command line's user; print what it did."""
    from harness.contest.controls import ControlError

    db = _db(root)
    try:
        echo(action(db, _who(), *args, **kwargs))
    except ControlError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        db.close()


@click.command("organizer-token")
@contest_dir
def organizer_token(contest_dir: Path) -> None:
    """Give the organizer a new token (the old one and its sessions stop working); printed last, alone.

    Sign in with it on the site's /signin page to reach /organizer.
    """
    from harness.contest.controls import new_organizer_token

    db = _db(contest_dir)
    try:
        token = new_organizer_token(db, _who())
    finally:
        db.close()
    echo("the organizer's token (shown only now; sign in with it at /signin, it opens /organizer):")
    echo(token)


target = [click.option("--team", default=None, help="The team."),
          click.option("--version", "version", default=None, metavar="sN", help="One version (s<upload id>).")]


def _targets(f: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(target):
        f = option(f)
    return f


@click.command()
@contest_dir
@_targets
@click.option("--reason", required=True, help="Why (the team sees it on every page).")
def disable(contest_dir: Path, team: str | None, version: str | None, reason: str) -> None:
    """Keep a team, or one version, out of the ladder (from its next round) until enabled."""
    from harness.contest.controls import disable as act

    _control(contest_dir, act, team=team, version=version, reason=reason)


@click.command()
@contest_dir
@_targets
def enable(contest_dir: Path, team: str | None, version: str | None) -> None:
    """Let a disabled team, or version, play in the ladder again."""
    from harness.contest.controls import enable as act

    _control(contest_dir, act, team=team, version=version)


@click.command()
@contest_dir
@click.argument("name")
@click.option("--reason", default="", help="Why (kept in the audit).")
def reset(contest_dir: Path, name: str, reason: str) -> None:
    """Put team NAME's current version aside: no version until its next upload; its games stay."""
    from harness.contest.controls import reset_team

    _control(contest_dir, reset_team, name, reason)


@click.command()
@contest_dir
@click.argument("name")
@click.option("--reason", default="", help="Why (kept in the audit).")
def remove(contest_dir: Path, name: str, reason: str) -> None:
    """Remove team NAME: signed out, its token dead, off the ladder and the leaderboard; its games stay."""
    from harness.contest.controls import remove_team

    _control(contest_dir, remove_team, name, reason)


@click.command()
@contest_dir
@click.argument("text")
def announce(contest_dir: Path, text: str) -> None:
    """Show TEXT to every team, on every page of the site."""
    from harness.contest.controls import announce as act

    _control(contest_dir, act, text)


@click.command()
@contest_dir
@click.option("--hours", type=click.FloatRange(min=0, min_open=True), default=None,
              help="For how long (default: until `harness contest close`).")
def reopen(contest_dir: Path, hours: float | None) -> None:
    """Take uploads again: after the finals froze them, past phases.uploads_close, or after close."""
    import time

    from harness.contest.controls import reopen_uploads

    _control(contest_dir, reopen_uploads, time.time() + hours * 3600 if hours else None)


@click.command()
@contest_dir
def close(contest_dir: Path) -> None:
    """Close uploads now, whatever contest.yaml's phases say (reopen opens them again)."""
    from harness.contest.controls import close_uploads

    _control(contest_dir, close_uploads)


@click.command()
@contest_dir
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="How many, latest first.")
def audit(contest_dir: Path, limit: int) -> None:
    """Show the organizer's actions, latest first: when, who, what."""
    import time

    from harness.contest.controls import audit_log

    db = _db(contest_dir)
    try:
        for row in audit_log(db, limit):
            echo(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(row.at))}  {row.who}  "
                 f"{row.action}: {row.detail}")
    finally:
        db.close()


@click.command("import")
@contest_dir
@click.argument("csv_file", metavar="TEAMS.csv", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the tokens go (default: DIR/tokens-<time>.csv); made readable by its owner only.")
def team_import(contest_dir: Path, csv_file: Path, out: Path | None) -> None:
    """Add every team of TEAMS.csv (its first column, a header `name` allowed) and write their tokens
    to a new file only its owner can read (mode 0600): `team,token` lines, one a team.

    Every name is checked first: one bad or taken name, and no team is added.
    """
    from harness.contest.teams_import import ImportError_, import_teams

    db = _db(contest_dir)
    try:
        path, added = import_teams(db, csv_file, out or contest_dir / f"tokens-{_stamp()}.csv")
    except ImportError_ as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        db.close()
    echo(f"{len(added)} teams added; their tokens are in {path} (mode 0600: give each team its own, privately)")


def _stamp() -> str:
    import time

    return time.strftime("%Y%m%d-%H%M%S")


@click.command()
@contest_dir
@click.argument("out", metavar="OUT", type=click.Path(file_okay=False, path_type=Path))
def backup(contest_dir: Path, out: Path) -> None:
    """Copy the contest to the new directory OUT while the site and the ladder run.

    The databases are copied with SQLite's online backup API (a consistent snapshot each), the
    config, uploads and logs as files; OUT is readable by its owner only. Restore it with
    `harness contest restore OUT NEWDIR`.
    """
    from harness.contest.backup import BackupError, backup_contest

    try:
        manifest = backup_contest(_load(contest_dir), out)
    except (BackupError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    echo(f"backup in {out}: {manifest.get('teams', 0)} teams, {manifest.get('uploads', 0)} uploads, "
         f"{manifest.get('games', 0)} games ({manifest['finished'] - manifest['started']:.1f} s)")


@click.command()
@click.argument("backup_dir", metavar="BACKUP", type=click.Path(file_okay=False, exists=True, path_type=Path))
@contest_dir
def restore(backup_dir: Path, contest_dir: Path) -> None:
    """Restore the backup BACKUP into the new directory DIR; then serve and run it there as before."""
    from harness.contest.backup import BackupError, restore_contest

    try:
        manifest = restore_contest(backup_dir, contest_dir)
    except (BackupError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    _load(contest_dir)
    echo(f"restored {manifest.get('contest')} into {contest_dir}: {manifest.get('teams', 0)} teams, "
         f"{manifest.get('uploads', 0)} uploads, {manifest.get('games', 0)} games")


@click.command()
@contest_dir
@click.option("--server-name", default="_", show_default=True, help="The site's host name (nginx server_name).")
@click.option("--site-port", type=click.IntRange(1, 65535), default=8000, show_default=True,
              help="The port the site listens on, on 127.0.0.1.")
@click.option("--https-port", type=click.IntRange(1, 65535), default=443, show_default=True)
@click.option("--http-port", type=click.IntRange(1, 65535), default=80, show_default=True,
              help="Redirected to https.")
@click.option("--listen", default="", help="The address nginx listens on (default: every address).")
@click.option("--cert", default=None, help="The TLS certificate (default: Let's Encrypt's for --server-name).")
@click.option("--key", default=None, help="The TLS certificate's key.")
@click.option("--user", default="tablebots", show_default=True, help="The user the site and the ladder run as.")
def deploy(contest_dir: Path, server_name: str, site_port: int, https_port: int, http_port: int, listen: str,
           cert: str | None, key: str | None, user: str) -> None:
    """Write systemd units for the site and the ladder and an nginx config (https) to DIR/deploy/.

    Sets contest.yaml for https (secure_cookies: true, and the proxy as the one address whose
    X-Forwarded-For the site believes). Nothing is installed: the output says where each file goes.
    """
    from harness.contest.deploy import DeployOptions, write_deploy

    live = f"/etc/letsencrypt/live/{server_name if server_name != '_' else 'HOST'}"
    opts = DeployOptions(server_name=server_name, site_port=site_port, https_port=https_port, http_port=http_port,
                         listen=listen, cert=cert or f"{live}/fullchain.pem", key=key or f"{live}/privkey.pem",
                         user=user)
    _load(contest_dir)
    folder, changed = write_deploy(contest_dir, opts)
    for line in changed:
        echo(f"contest.yaml: {line}")
    echo(f"written to {folder}:")
    for path in sorted(folder.iterdir()):
        where = "/etc/nginx/sites-enabled/" if path.suffix == ".conf" else "/etc/systemd/system/"
        echo(f"  {path.name}  -> copy to {where}")
    echo("then: systemctl daemon-reload && systemctl enable --now " + " ".join(
        p.name for p in sorted(folder.glob("*.service"))) + " && nginx -s reload")


def register(group: click.Group, team: click.Group) -> None:
    """Add these commands to ``harness contest`` (and its ``team`` group)."""
    for command in (status, organizer_token, disable, enable, reset, remove, announce, reopen, close, audit,
                    backup, restore, deploy):
        group.add_command(command)
    team.add_command(team_import)
