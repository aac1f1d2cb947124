"""`harness contest`: the organizer's commands for a contest site (docs/contest.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.common import contest_dir, echo, load_contest_config

if TYPE_CHECKING:
    from harness.contest.db import ContestDB

_load = load_contest_config


@click.group()
def contest() -> None:
    """Run a contest site: teams upload bots, a ladder plays them, everyone sees the leaderboard.

    \b
    Start to finish (docs/contest.md):
        harness contest init mycourse --game crisps    # prints the organizer token
        harness contest team import mycourse teams.csv # the tokens into a 0600 file
        harness contest deploy mycourse --server-name bots.example.edu
        harness contest serve mycourse --port 8000     # the site
        harness contest run mycourse                   # the ladder (another terminal)
        harness contest status mycourse                # games, pace, queue, disk
        harness contest backup mycourse /backups/mycourse-today
        harness contest finals mycourse --top 8 --rounds 4
    """


@contest.command()
@contest_dir
@click.option("--game", required=True, metavar="GAME", help="The game: epizodiak, dominoes or crisps.")
@click.option("--name", default=None, help="The contest's name (default: the directory's name).")
def init(contest_dir: Path, game: str, name: str | None) -> None:
    """Create the contest in DIR: its config (contest.yaml) and its database; print the organizer's
    token (last, alone on its line: only its hash is kept).

    Edit DIR/contest.yaml afterwards for the table sizes, time controls, runtimes (entry file,
    build and run commands) and quotas; every key is checked when the site or ladder starts.
    """
    from harness.contest.config import ContestConfigError, init_contest
    from harness.contest.db import ContestDB

    try:
        path = init_contest(contest_dir, game, name=name)
    except ContestConfigError as exc:
        raise click.ClickException(str(exc)) from None
    from harness.contest.controls import new_organizer_token

    cfg = _load(contest_dir)
    db = ContestDB(cfg.db_path)
    token = new_organizer_token(db, "cli (init)")
    db.close()
    echo(f"contest {cfg.name} ({cfg.game}) created: {path}")
    echo(f"next: harness contest team add {contest_dir} TEAM (or team import {contest_dir} teams.csv)")
    echo("the organizer's token (shown only now; sign in with it at /signin, it opens /organizer; "
         "harness contest organizer-token DIR gives a new one):")
    echo(token)


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
            current = f"version s{row.current_submission}" if row.current_submission else "no version yet"
            sub = db.submission(row.current_submission) if row.current_submission else None
            pause = pause_of(db, sub.id) if sub is not None and sub.status == "paused" else None
            echo(f"{row.name}: {current}" + (f" (paused: {pause['reason']})" if pause else ""))
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
    It keeps to contest.yaml's pace (ladder: {games_per_hour: N}) and prunes the game logs
    every 10 minutes as contest.yaml's `logs` says (`harness contest status DIR` shows both).
    """
    import dataclasses

    from harness.contest.board_fit import Refitter
    from harness.contest.db import ContestDB
    from harness.contest.ladder import LADDER_STORE, Standings, play_ladder
    from harness.contest.retention import Pruner
    from harness.contest.status import record_pruned
    cfg = _load(contest_dir)
    _safe_or_unsafe(cfg, unsafe)
    if workers is not None:
        cfg = dataclasses.replace(cfg, workers=workers)
    db = ContestDB(cfg.db_path)
    from harness.contest.autopause import pause_failing

    standings = Standings(db, cfg.root / LADDER_STORE, after_flush=lambda: pause_failing(db, cfg.pause, echo))
    standings.rebuild()
    standings.start()
    pruner = Pruner(cfg.root / LADDER_STORE, cfg.retention, record_pruned(db))
    pruner.start()
    refitter = Refitter(cfg, db, lambda: db.counts()["games"])
    refitter.start()
    played = 0
    try:
        from harness.contest.challenges import play_challenges

        played = play_ladder(cfg, db, should_stop=lambda: False, on_game=standings.on_game, progress=progress,
                             echo=echo, dask=dask, between_rounds=lambda: play_challenges(cfg, db, echo=echo))
    except KeyboardInterrupt:
        echo("interrupted")
    finally:
        refitter.stop()
        pruner.stop()
        standings.stop()
        db.close()
    echo(f"ladder stopped after {played} games in this run")


@contest.command()
@contest_dir
@click.option("--top", type=click.IntRange(min=2), required=True, help="How many teams (best on the leaderboard).")
@click.option("--rounds", type=click.IntRange(min=1), required=True,
              help="Rounds of the round robin played first, and then at a time until the order is settled.")
@click.option("--confidence", type=click.FloatRange(0.5, 1.0, max_open=True), default=0.95, show_default=True,
              help="Settled: every finalist above the next with at least this probability (the batch fit's P(>next)).")
@click.option("--max-games", type=click.IntRange(min=1), default=None,
              help="The finals' game budget (default: ten times the first --rounds).")
@dask_option
@unsafe_option
def finals(contest_dir: Path, top: int, rounds: int, confidence: float, max_games: int | None,
           dask: str | None, unsafe: bool) -> None:
    """Freeze uploads and play the finals until the TOP teams' order is settled (or the budget runs out).

    Stop `harness contest run` first (the ladder and the finals would share the cores). The
    finals are their own league in DIR/finals/ (finals.yaml, finals.sqlite); their result, with
    each finalist's probability of being champion, is DIR/finals/result.json and the site's
    /finals page, their HTML report DIR/finals/report/. Uploads stay closed afterwards
    (`harness contest reopen DIR` opens them).
    """
    from harness.contest.db import ContestDB
    from harness.contest.finals import play_finals
    from harness.league.config import ConfigError

    cfg = _load(contest_dir)
    _safe_or_unsafe(cfg, unsafe)
    db = ContestDB(cfg.db_path)
    try:
        result = play_finals(cfg, db, top, rounds, confidence=confidence, max_games=max_games, dask=dask, echo=echo)
    except (ValueError, ConfigError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        db.close()
    echo(f"{'rank':>4}  {'team':<20} {'version':<8} {'mu':>7} {'±95%':>7} {'P(>next)':>8} {'P(champion)':>11}")
    for r in result["finalists"]:
        p_better = f"{r['p_better']:.2f}" if r["p_better"] is not None else "-"
        echo(f"{r['rank']:>4}  {r['team']:<20} {r['version']:<8} {r['mu']:>7.2f} {1.96 * r['sigma']:>7.2f} "
             f"{p_better:>8} {r['p_champion']:>11.2f}")

from harness.cli import contest_ops  # noqa: E402  (its commands join the group above)

contest_ops.register(contest, team)
