"""`harness contest`: the organizer's commands for a contest site (docs/contest.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.common import echo

if TYPE_CHECKING:
    from harness.contest.db import ContestDB

contest_dir = click.argument("contest_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))


def _load(root: Path):  # type: ignore[no-untyped-def]
    from harness.contest.config import ContestConfigError, load_contest

    try:
        return load_contest(root)
    except ContestConfigError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def contest() -> None:
    """Run a contest site: teams upload bots, a ladder plays them, everyone sees the leaderboard.

    \b
    Start to finish (docs/contest.md):
        harness contest init mycourse --game crisps
        harness contest team add mycourse alpha        # prints the team token once
        harness contest serve mycourse --port 8000     # the site
        harness contest run mycourse                   # the ladder (another terminal)
        harness contest finals mycourse --top 8 --rounds 20
    """


@contest.command()
@contest_dir
@click.option("--game", required=True, metavar="GAME", help="The game: epizodiak, dominoes or crisps.")
@click.option("--name", default=None, help="The contest's name (default: the directory's name).")
def init(contest_dir: Path, game: str, name: str | None) -> None:
    """Create the contest in DIR: its config (contest.yaml) and its database.

    Edit DIR/contest.yaml afterwards for the table sizes, time controls, runtimes (entry file,
    build and run commands) and quotas; every key is checked when the site or ladder starts.
    """
    from harness.contest.config import ContestConfigError, init_contest
    from harness.contest.db import ContestDB

    try:
        path = init_contest(contest_dir, game, name=name)
    except ContestConfigError as exc:
        raise click.ClickException(str(exc)) from None
    cfg = _load(contest_dir)
    ContestDB(cfg.db_path).close()
    echo(f"contest {cfg.name} ({cfg.game}) created: {path}")
    echo(f"next: harness contest team add {contest_dir} TEAM")


def _new_token(root: Path, make: Callable[[ContestDB, str], str], name: str) -> str:
    """``make(db, name)`` (a new team, or a team's new token) on the contest's database: the token,
    or one line saying why not (a name taken, a team unknown)."""
    from harness.contest.auth import TeamError
    from harness.contest.db import ContestDB

    db = ContestDB(_load(root).db_path)
    try:
        return make(db, name)
    except TeamError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        db.close()


@contest.group()
def team() -> None:
    """Add teams, list them, or give one a new token."""


@team.command("add")
@contest_dir
@click.argument("name")
def team_add(contest_dir: Path, name: str) -> None:
    """Add the team NAME and print its sign-in token (once: only a hash of it is kept).

    The token is the last line of the output, alone, for scripts:
    TOKEN=$(harness contest team add DIR NAME | tail -n 1)
    """
    from harness.contest.auth import add_team

    token = _new_token(contest_dir, add_team, name)
    echo(f"team {name} added; its token (shown only now, give it to the team; it signs in and uploads):")
    echo(token)


@team.command("token")
@contest_dir
@click.argument("name")
def team_token(contest_dir: Path, name: str) -> None:
    """Give the team NAME a new token (the old one and its sessions stop working); printed last, alone."""
    from harness.contest.auth import renew_token

    token = _new_token(contest_dir, renew_token, name)
    echo(f"new token for {name} (the old one no longer works):")
    echo(token)


@team.command("list")
@contest_dir
def team_list(contest_dir: Path) -> None:
    """List the teams and their current versions (and why a paused one was paused)."""
    from harness.contest.autopause import pause_of
    from harness.contest.db import ContestDB

    cfg = _load(contest_dir)
    db = ContestDB(cfg.db_path)
    try:
        for row in db.teams():
            current = f"version s{row['current_submission']}" if row["current_submission"] else "no version yet"
            sub = db.submission(row["current_submission"]) if row["current_submission"] else None
            pause = pause_of(db, sub["id"]) if sub is not None and sub["status"] == "paused" else None
            echo(f"{row['name']}: {current}" + (f" (paused: {pause['reason']})" if pause else ""))
    finally:
        db.close()


unsafe_option = click.option(
    "--unsafe", is_flag=True,
    help="Play even where the sandbox or the CPU clock does not hold here (see `harness doctor`); the "
         "leaderboard then says so.")


def _safe_or_unsafe(cfg, unsafe: bool, record: bool = True) -> None:  # type: ignore[no-untyped-def]
    """Refuse (one line) to play a contest's games without the sandbox and the CPU clock unless
    ``unsafe``; with ``record``, the leaderboard shows what does not hold (or nothing, once it does)."""
    from harness.contest.db import ContestDB
    from harness.play.doctor import ranked_play_problems
    from harness.play.sandbox import resolve_sandbox

    problems = ranked_play_problems(resolve_sandbox(cfg.limits.get("sandbox", "auto"))[0])
    if problems and not unsafe:
        raise click.ClickException("refusing to play ranked games here: " + "; ".join(problems)
                                   + " (`harness doctor` says more; --unsafe plays anyway, and the leaderboard says so)")
    if problems:
        echo("warning: playing unsafely (--unsafe): " + "; ".join(problems))
    if record:
        db = ContestDB(cfg.db_path)
        try:
            db.set_meta("unsafe", "; ".join(problems))
        finally:
            db.close()


@contest.command()
@contest_dir
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (127.0.0.1: this machine only; put https in front for the world).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="Port to listen on.")
@unsafe_option
def serve(contest_dir: Path, host: str, port: int, unsafe: bool) -> None:
    """Serve the contest site: sign-in, uploads, the leaderboard, replays, each team's own pages.

    Uploads are built and checked in the background by this process; `harness contest run DIR`
    (another process) plays the ladder. Requests over their limits are refused before they are
    read (contest.yaml's `site`: body sizes, header and body timeouts, the proxies whose
    X-Forwarded-For is believed; docs/contest.md). Refused where uploads cannot run in the
    sandbox with the CPU clock (`harness doctor` says why), unless --unsafe.
    """
    from harness.contest.guard import serve as serve_guarded
    from harness.contest.server import create_app

    cfg = _load(contest_dir)
    _safe_or_unsafe(cfg, unsafe, record=False)
    echo(f"contest site on http://{host}:{port}/ (Ctrl-C stops it)")
    serve_guarded(create_app(contest_dir), host, port, cfg.site)


dask_option = click.option("--dask", default=None, metavar="ADDRESS",
                           help="Play on the Dask cluster at ADDRESS (tcp://host:8786, or local:N) instead of "
                                "local worker processes (default: contest.yaml's executor).")


@contest.command()
@contest_dir
@dask_option
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes (default: contest.yaml's workers).")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show a progress bar per plan.")
@unsafe_option
def run(contest_dir: Path, dask: str | None, workers: int | None, progress: bool, unsafe: bool) -> None:
    """Play the ladder over every team's current version, until Ctrl-C.

    The ladder is a league (DIR/ladder.yaml, DIR/ladder.sqlite) re-planned as soon as a team's
    current version changes; a finished round is followed by the next. The leaderboard's
    summary is updated as games are recorded. Run it beside `harness contest serve DIR`.
    """
    import dataclasses

    from harness.contest.db import ContestDB
    from harness.contest.ladder import LADDER_STORE, Standings, play_ladder
    cfg = _load(contest_dir)
    _safe_or_unsafe(cfg, unsafe)
    if workers is not None:
        cfg = dataclasses.replace(cfg, workers=workers)
    db = ContestDB(cfg.db_path)
    from harness.contest.autopause import pause_failing

    standings = Standings(db, cfg.root / LADDER_STORE, after_flush=lambda: pause_failing(db, cfg.pause, echo))
    standings.rebuild()
    standings.start()
    played = 0
    try:
        from harness.contest.challenges import play_challenges

        played = play_ladder(cfg, db, should_stop=lambda: False, on_game=standings.on_game, progress=progress,
                             echo=echo, dask=dask, between_rounds=lambda: play_challenges(cfg, db, echo=echo))
    except KeyboardInterrupt:
        echo("interrupted")
    finally:
        standings.stop()
        db.close()
    echo(f"ladder stopped after {played} games in this run")


@contest.command()
@contest_dir
@click.option("--top", type=click.IntRange(min=2), required=True, help="How many teams (best on the leaderboard).")
@click.option("--rounds", type=click.IntRange(min=1), required=True, help="Rounds of the finals' round robin.")
@dask_option
@unsafe_option
def finals(contest_dir: Path, top: int, rounds: int, dask: str | None, unsafe: bool) -> None:
    """Freeze uploads and play the finals: a round robin of the TOP teams' current versions.

    Stop `harness contest run` first (the ladder and the finals would share the cores). The
    finals are their own league in DIR/finals/ (finals.yaml, finals.sqlite) and their HTML
    report is written to DIR/finals/report/. Uploads stay closed afterwards.
    """
    from harness.contest.db import ContestDB
    from harness.contest.ladder import play_finals
    from harness.league.config import ConfigError
    from harness.report.tables import format_table, league_table

    cfg = _load(contest_dir)
    _safe_or_unsafe(cfg, unsafe)
    db = ContestDB(cfg.db_path)
    try:
        league = play_finals(cfg, db, top, rounds, dask=dask, echo=echo)
    except (ValueError, ConfigError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        db.close()
    from harness.league.store import LeagueStore

    with LeagueStore(league.store, create=False) as store:
        echo(format_table(league_table(store, league), "table"))
