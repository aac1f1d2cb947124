"""League commands: `harness run`, `harness table`, `harness violations`, `harness replay`.

Every command takes the league's YAML config (docs/leagues.md); the store it names (default
runs/<name>.sqlite, relative to the current directory) holds the results.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from harness.league.config import ConfigError, LeagueConfig, load_config
from harness.league.store import LeagueStore

__all__ = ["run", "table", "violations", "replay"]

config_argument = click.argument("config", metavar="CONFIG", type=click.Path(dir_okay=False))


class ConfigProblem(click.ClickException):
    """A config or store that cannot be used: one line, exit code 2 (like a usage error)."""

    exit_code = 2


def _load(path: str, **overrides: Any) -> LeagueConfig:
    try:
        return load_config(path, **overrides)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None


def _load_to_read(path: str) -> LeagueConfig:
    """The config for a command that only reads results: its bots need not be runnable here."""
    try:
        return load_config(path, strict=False)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None


def _open_store(config: LeagueConfig) -> LeagueStore:
    if not Path(config.store).exists():
        raise ConfigProblem(f"{config.store}: no results yet (stores are relative to the current directory); "
                            f"play the league first: harness run {config.path}")
    try:
        return LeagueStore(config.store, create=False)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None


@click.command()
@config_argument
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Games played in parallel, one process per core  [default: the config's workers, else the "
                   "number of cores]")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="Rounds of the schedule (overrides the config's rounds; more rounds add games).")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar  [default: when stderr is a terminal]")
@click.option("--dask", "dask", default=None, metavar="ADDRESS|local:N",
              help="Play on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.1:8786), or on "
                   "N local Dask workers with local:N; the store is still written here. Overrides the config's "
                   "executor. See docs/scale-out.md.")
def run(config: str, workers: int | None, rounds: int | None, progress: bool | None, dask: str | None) -> None:
    """Play the league in CONFIG: every scheduled game not played yet, then print a summary.

    Re-running resumes: finished games are never replayed, even after the runner was killed,
    and a bot added to the config plays only its new games. A bot whose files changed is a new
    version, rated separately (see `version` in docs/leagues.md). Ctrl-C stops cleanly after
    recording the games that finished. Example:

    \b
        harness run leagues/demo.yaml && harness table leagues/demo.yaml
    """
    from harness.league.runner import LeagueInterrupted, run_league

    cfg = _load(config, rounds=rounds, workers=workers)
    if progress is None:
        progress = sys.stderr.isatty()
    try:
        summary = run_league(cfg, progress=progress, dask=dask)
    except LeagueInterrupted as stop:
        summary = stop.summary
        pending = summary.plan.pending - summary.played
        dropped = (f" ({summary.dropped_in_flight} unfinished games dropped, not recorded)"
                   if summary.dropped_in_flight else "")
        click.echo(f"stopped: {summary.played} games recorded this run{dropped}, {pending} still to play; "
                   f"run the same command again to resume", err=True)
        raise SystemExit(130) from None
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None
    plan = summary.plan
    notes = []
    if plan.added and plan.done:
        notes.append(f"{plan.added} new games scheduled")
    if plan.dropped:
        notes.append(f"{plan.dropped} unplayed games dropped: no longer scheduled (a bot, version or round left "
                     f"the config)")
    if plan.reactivated:
        notes.append(f"{plan.reactivated} dropped games back in the schedule")
    for note in notes:
        click.echo(note)
    if not plan.pending:
        click.echo(f"{cfg.name}: all {plan.done} games already played; nothing to do. "
                   f"See: harness table {cfg.path}")
        return
    left = plan.pending - summary.played
    click.echo(f"{cfg.name}: played {summary.played} games in {summary.seconds:.1f} s "
               f"({summary.games_per_second:.1f} games/s, {summary.workers} {'Dask ' if dask or cfg.dask else ''}"
               f"workers), "
               f"{summary.violations} violations; {plan.done + summary.played} done, {left} left. "
               f"See: harness table {cfg.path}")
    if summary.violations:
        click.echo(f"violations: harness violations {cfg.path}")
    for i, err in enumerate(summary.errors):  # the first in full, the others in one line
        click.echo(f"error: {err.rstrip() if i == 0 else err.strip().splitlines()[-1]}", err=True)
    if summary.gave_up:
        click.echo(f"stopped after {len(summary.errors)} games failed inside the harness (not because of a bot); "
                   f"they are still pending", err=True)
    if summary.errors:
        raise SystemExit(1)


@click.command()
@config_argument
@click.option("--format", "fmt", type=click.Choice(["table", "md", "csv", "json"]), default="table",
              show_default=True, help="Terminal table, Markdown, CSV or JSON.")
@click.option("--recompute", is_flag=True,
              help="Rebuild the ratings from the stored results instead of the kept incremental ones.")
def table(config: str, fmt: str, recompute: bool) -> None:
    """Print the league table of CONFIG, best first by the conservative rating mu - 3 sigma.

    Columns: rank, bot, version ("(old)": not the version in the config now), TrueSkill mu and
    sigma, mu - 3 sigma, games, wins (first places, shared or not), mean rank (1 = always
    first) and violations. Example:

    \b
        harness table leagues/demo.yaml --format md
    """
    from harness.report.tables import format_table, league_table

    cfg = _load_to_read(config)
    with _open_store(cfg) as store:
        started = time.perf_counter()
        rows = league_table(store, cfg, recompute=recompute)
        counts = store.counts()
    info = {"league": cfg.name, "game": cfg.game, "games_done": counts["done"], "games_pending": counts["pending"]}
    click.echo(format_table(rows, fmt, info=info))
    if fmt == "table":
        footer = f"\n{cfg.name} ({cfg.game}): {counts['done']} games played"
        if counts["pending"]:
            footer += f", {counts['pending']} still to play (harness run {cfg.path})"
        if recompute:
            footer += f"; ratings recomputed in {time.perf_counter() - started:.2f} s"
        click.echo(footer)


@click.command()
@config_argument
@click.option("--bot", default=None, metavar="NAME[@VERSION] | CMD",
              help="Only this bot's violations; with --replay: the command to replay to (as --command).")
@click.option("--kind", type=click.Choice(["timeout", "illegal", "malformed", "oversize", "crash", "protocol"]),
              default=None, help="Only violations of this kind.")
@click.option("--show", "show_id", type=int, default=None, metavar="ID",
              help="Print violation ID in full: the request, what the bot sent, its stderr tail.")
@click.option("--json", "as_json", is_flag=True, help="With --show: print the full record as JSON (with the "
                                                      "state snapshot).")
@click.option("--replay", "replay_id", type=int, default=None, metavar="ID",
              help="Send violation ID's request again to the bot (after its hello and start) and show the answer.")
@click.option("--command", "--bot-command", "bot_command", default=None, metavar="CMD",
              help="With --replay: run this command instead of the bot's (e.g. a fixed version), relative to "
                   "the current directory.")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=None,
              help="With --replay: how long to wait for the answer  [default: the league's move_ms]")
def violations(config: str, bot: str | None, kind: str | None, show_id: int | None, as_json: bool,
               replay_id: int | None, bot_command: str | None, timeout_ms: int | None) -> None:
    """List the violations of CONFIG's league, one a line; or show or replay one.

    Examples:

    \b
        harness violations leagues/demo.yaml --kind timeout
        harness violations leagues/demo.yaml --show 3
        harness violations leagues/demo.yaml --replay 3 --bot "python3 bots/my_bot_fixed.py"
    """
    from harness.report.tables import format_violation, format_violation_line

    if replay_id is not None and bot is not None:
        if bot_command is not None:
            raise click.UsageError("with --replay give the command once: --bot CMD or --command CMD")
        bot_command, bot = bot, None
    cfg = _load_to_read(config)
    with _open_store(cfg) as store:
        if show_id is not None or replay_id is not None:
            wanted = show_id if show_id is not None else replay_id
            found = store.violation(wanted)  # type: ignore[arg-type]
            if found is None:
                raise click.BadParameter(f"no violation #{wanted} in {cfg.store}",
                                         param_hint="'--show'" if show_id is not None else "'--replay'")
            row, record = found
            if show_id is not None:
                click.echo(json.dumps(record, indent=2) if as_json else format_violation(row, record, cfg.path))
                return
            from harness.report.tables import replay_violation

            players = len(store.game_seats(row["game_seq"]))
            click.echo(replay_violation(cfg, row, record, players, bot_command, timeout_ms))
            return
        rows = store.violations(bot=bot, kind=kind)
        for r in rows:
            click.echo(format_violation_line(r))
        if not rows:
            click.echo("no violations" + (" matching the filters" if bot or kind else ""), err=True)


@click.command()
@config_argument
@click.argument("game_id")
def replay(config: str, game_id: str) -> None:
    """Print game GAME_ID of CONFIG's league move by move, with the table after each move.

    GAME_ID may be abbreviated to any unique prefix (ids are listed by `harness violations`).
    Example:

    \b
        harness replay leagues/demo.yaml g-3f9a
    """
    from harness.games import get_game
    from harness.report.tables import format_replay

    cfg = _load_to_read(config)
    with _open_store(cfg) as store:
        matches = store.find_games(game_id)
        if len(matches) != 1:
            why = "no game" if not matches else f"several games ({', '.join(matches)}, ...)"
            raise click.BadParameter(f"{why} with an id starting {game_id!r} in {cfg.store}", param_hint="GAME_ID")
        row = store.game(matches[0])
        if row is None:  # deleted between the two reads
            raise click.BadParameter(f"game {matches[0]} is no longer in {cfg.store}", param_hint="GAME_ID")
        seats = store.game_seats(row["seq"])
        log = store.game_log(row["seq"])
        vio = store.violations(game_seq=row["seq"])
        click.echo(format_replay(get_game(cfg.game), cfg.options, row, seats, log, vio))
