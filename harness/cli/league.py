"""League commands: `harness run`, `harness table`, `harness violations`, `harness replay`.

Every command takes the league's YAML config (docs/leagues.md); the store it names (default
runs/<name>.sqlite, relative to the current directory) holds the results.
"""

from __future__ import annotations

import collections
import difflib
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import click

from harness.cli.common import dask_option, echo
from harness.league.config import ConfigError, LeagueConfig, LeagueError, load_config
from harness.league.store import LeagueStore
from harness.play.violations import VIOLATION_KINDS

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


def _shown_path(path: str) -> str:
    """``path`` relative to the current directory when it lies below it, else as it is."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def _open_store(config: LeagueConfig) -> LeagueStore:
    if not Path(config.store).exists():
        raise ConfigProblem(f"{config.store}: no results yet (the store of {config.path}); "
                            f"play the league first: harness run {config.path}")
    try:
        store = LeagueStore(config.store, create=False)
    except LeagueError as exc:
        raise ConfigProblem(str(exc)) from None
    problem = store.owner_problem(config)  # a copied config must not read the original's league as its own
    if problem:
        store.close()
        raise ConfigProblem(problem)
    return store


@click.command()
@config_argument
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Games played in parallel, one process per core  [default: the config's workers, else the "
                   "number of cores]")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="Rounds of the schedule (overrides the config's rounds; more rounds add games).")
@click.option("--progress/--no-progress", default=None,
              help="A progress bar, or --no-progress for none  [default: a bar when stderr is a terminal, "
                   "else a line every 10 s: done, rate, time left]")
@click.option("--quiet", "-q", is_flag=True, help="No progress at all (the summary is still printed).")
@click.option("--forever", is_flag=True,
              help="Adaptive schedule: a standing ladder. Keep choosing rounds past schedule.games and "
                   "schedule.until, wait for bots when there are too few, take the config's new bots as it "
                   "changes; Ctrl-C stops it (run again to resume).")
@click.option("--claim-store", is_flag=True,
              help="Make CONFIG the owner of its store although another config file made it (CONFIG replaces "
                   "that one: a renamed copy, a checkout elsewhere). Without it such a store is refused.")
@dask_option
def run(config: str, workers: int | None, rounds: int | None, progress: bool | None, quiet: bool,
        forever: bool, claim_store: bool, dask: str | None) -> None:
    """Play the league in CONFIG: every scheduled game not played yet, then print a summary.

    Re-running resumes: finished games are never replayed, even after the runner was killed,
    and a bot added to the config plays only its new games. A bot whose files changed is a new
    version, rated separately (see `version` in docs/leagues.md). Ctrl-C stops cleanly after
    recording the games that finished. Example:

    \b
        harness run leagues/demo.yaml && harness table leagues/demo.yaml

    With `schedule: {kind: adaptive}` the games are chosen round by round as results come in,
    until schedule.games are played or schedule.until is answered (it says which); the config is
    re-read between rounds, so `harness submit` (or an edit) adds a bot while it plays, and a bot
    removed from the config stops being chosen.
    """
    from harness.league.runner import LeagueInterrupted, RunHooks, RunOptions, run_league

    cfg = _load(config, rounds=rounds, workers=workers)
    _say_what_is_off(cfg)
    if forever and not cfg.schedule.adaptive:
        raise click.BadParameter("only with an adaptive schedule (schedule: {kind: adaptive} in the config); a "
                                 "round robin plays its rounds and stops", param_hint="--forever")
    shown: bool | str = progress if progress is not None else ("bar" if sys.stderr.isatty() else "lines")
    if quiet:
        shown = "none"
    hooks = RunHooks()
    if cfg.schedule.adaptive:
        from harness.league.schedule_adaptive import config_roster

        hooks = RunHooks(roster=config_roster(config, cfg), notify=lambda line: echo(line, err=True))
    try:
        summary = run_league(cfg, progress=shown, options=RunOptions(dask=dask, forever=forever, claim_store=claim_store), hooks=hooks)
    except LeagueInterrupted as stop:
        _say_interrupted(cfg, stop.summary)
        raise SystemExit(130) from None
    except LeagueError as exc:  # a store in use or of another league, an unreachable cluster...
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
        echo(note)
    if cfg.schedule.adaptive:
        _adaptive_summary(cfg, summary, dask)
        return
    if not plan.pending:
        echo(f"{cfg.name}: all {plan.done} games already played; nothing to do. "
                   f"See: harness table {cfg.path}")
        return
    left = plan.pending - summary.played
    _run_summary(cfg, summary, dask, f"{plan.done + summary.played} done, {left} left", left)
    if summary.errors:
        raise SystemExit(1)


def _say_what_is_off(cfg: LeagueConfig) -> None:
    """One line each for a sandbox that will not run and for guarantees this user does not get."""
    from harness.play.doctor import off_here
    from harness.play.sandbox import resolve_sandbox

    _, warning = resolve_sandbox(cfg.limits.get("sandbox", "auto"))  # workers resolve auto the same way
    if warning:
        echo(warning, err=True)
    weaker = off_here()  # an ordinary user gets less: said plainly, never silently
    if weaker:
        echo(weaker, err=True)


def _say_interrupted(cfg: LeagueConfig, summary: Any) -> None:
    """What a run stopped by Ctrl-C recorded, and what is still to play."""
    pending = summary.counts.get("pending", 0) if cfg.schedule.adaptive else summary.plan.pending - summary.played
    dropped = (f" ({summary.dropped_in_flight} unfinished games dropped, not recorded)"
               if summary.dropped_in_flight else "")
    echo(f"stopped: {summary.played} games recorded this run{dropped}, {pending} still to play; "
         f"run the same command again to resume", err=True)


def _run_summary(cfg: LeagueConfig, summary: Any, dask: str | None, totals: str, pending: int) -> None:
    """What a run played (``totals``: the league's games done and left), where its results are,
    the harness's errors, and why it stopped early if it did (exit 1 for a stop, e.g. a lost
    cluster; ``pending`` games are left)."""
    echo(f"{cfg.name}: played {summary.played} games in {summary.seconds:.1f} s ({summary.games_per_second:.1f} "
         f"games/s, {summary.workers} {'Dask ' if dask or cfg.executor else ''}worker"
         f"{'' if summary.workers == 1 else 's'}), {summary.violations} violations; {totals}. "
         f"See: harness table {cfg.path}")
    if summary.violations:
        echo(f"violations: harness violations {cfg.path}")
    echo(f"results: {_shown_path(cfg.store)}")
    echo(_logs_line(cfg, summary))
    counted = collections.Counter(summary.errors)  # a failed batch gives each of its games the same error
    for i, (err, times) in enumerate(counted.items()):  # the first in full, the others in one line
        games = f" ({times} games)" if times > 1 else ""
        echo(f"error{games}: {err.rstrip() if i == 0 else err.strip().splitlines()[-1]}", err=True)
    if summary.stop_reason:
        echo(f"stopped: {summary.stop_reason}; the games recorded are kept, {pending} are still pending: run the "
             f"same command again once it is back", err=True)
        raise SystemExit(1)
    if summary.gave_up:
        echo(f"stopped after {len(summary.errors)} games failed inside the harness (not because of a bot); "
             f"they are still pending", err=True)


def _logs_line(cfg: LeagueConfig, summary: Any) -> str:
    """The game logs' disk use against the league's budget, and what happens past it."""
    budget = cfg.logs["budget_mb"]
    line = (f"logs: {summary.logs_bytes / 2**20:.1f} MB of the {budget} MB budget (logs.budget_mb), "
            f"{cfg.logs['game_kb']} KB at most a game (logs.game_kb)")
    if summary.logs_dropped:
        return (line + f"; over budget: {summary.logs_dropped} games without violations were recorded without "
                       f"their logs (games with violations keep theirs; raise logs.budget_mb to keep every log)")
    if summary.logs_bytes >= budget * 2**20:
        return line + "; over budget: from now on only games with violations keep their logs"
    return line


def _adaptive_summary(cfg: LeagueConfig, summary: Any, dask: str | None) -> None:
    """What an adaptive run did and why it stopped."""
    pending = summary.counts.get("pending", 0)
    _run_summary(cfg, summary, dask, f"{summary.counts.get('done', 0)} done in all", pending)
    if not summary.gave_up:  # (a run that gave up said why)
        echo(f"finished: {summary.finished or f'no table to fill ({pending} games pending)'}")
    if summary.errors:
        raise SystemExit(1)


@click.command()
@config_argument
@click.option("--format", "fmt", type=click.Choice(["table", "md", "csv", "json"]), default="table",
              show_default=True, help="Terminal table, Markdown, CSV or JSON.")
@click.option("--recompute", is_flag=True,
              help="Rebuild the ratings from the stored results instead of the kept incremental ones.")
@click.option("--current", "current_only", is_flag=True,
              help="Only the bot versions in the config now (hide old versions that played before).")
@click.option("--seats", "show_seats", is_flag=True,
              help="Also the seat bias: per table size, each seat's win rate with its 95% interval.")
@click.option("--incremental", is_flag=True,
              help="Show the incremental TrueSkill the runner keeps (game by game, in schedule order), "
                   "without the order-free fit and the intervals: instant on any league.")
def table(config: str, fmt: str, recompute: bool, current_only: bool, show_seats: bool, incremental: bool) -> None:
    """Print the league table of CONFIG, best first by the fitted skill mu.

    Columns: rank, bot, version ("(old)": not the version in the config now), mu and its 95%
    interval (+- 1.96 sigma) from TrueSkill's model fitted to all games at once (the same
    results give the same table in any order; the interval allows for the games of a duplicate
    set sharing a deal; docs/ratings.md), mu - 3 sigma, games, wins (first places, shared or
    not), mean score and mean rank (1 = always first) with 95% intervals (clustered by
    duplicate set), P(>next): the fit's probability that the bot is really better than the next
    one (never below 0.5: the order is the fit's), and violations. With --incremental, the
    runner's TrueSkill sorted by mu - 3 sigma, without intervals. JSON carries every interval
    as [low, high] under a key ending in _ci, CSV as two columns <name>_low and <name>_high.
    Example:

    \b
        harness table leagues/demo.yaml --format md
    """
    from harness.report.tables import format_table, league_table

    cfg = _load_to_read(config)
    with _open_store(cfg) as store:
        started = time.perf_counter()
        rows = league_table(store, cfg, recompute=recompute, current_only=current_only, stats=not incremental)
        counts = store.counts()
        seats = None
        if show_seats:
            from harness.report import statistics

            seats = statistics.seat_bias(statistics.load_arrays(store))
    info: dict[str, Any] = {"league": cfg.name, "game": cfg.game, "games_done": counts["done"],
                            "games_pending": counts["pending"]}
    if seats is not None and fmt == "json":
        info["seats"] = {str(k): v for k, v in seats.items()}
    text = format_table(rows, fmt, info=info)
    if fmt in ("json", "csv"):
        click.echo(text)  # data formats stay exact
    else:
        echo(text)
    if fmt == "table":
        footer = f"\n{cfg.name} ({cfg.game}): {counts['done']} games played"
        if counts["pending"]:
            footer += f", {counts['pending']} still to play (harness run {cfg.path})"
        if recompute:
            footer += f"; ratings recomputed in {time.perf_counter() - started:.2f} s"
        echo(footer)
    if seats is not None and fmt != "json":
        for size, rows_ in seats.items():
            echo(f"seat bias, {size} players (win rate, 95% interval; fair: {1 / size:.2f}): " + "; ".join(
                f"seat {r['seat']} {r['win_rate']:.2f} ({r['win_rate_ci'][0]:.2f}-{r['win_rate_ci'][1]:.2f})"
                for r in rows_))


@click.command()
@config_argument
@click.option("--bot", default=None, metavar="NAME[@VERSION] | CMD",
              help="Only this bot's violations; with --replay: the command to replay to (as --command).")
@click.option("--kind", type=click.Choice(VIOLATION_KINDS),
              default=None, help="Only violations of this kind.")
@click.option("--show", "show_id", type=int, default=None, metavar="ID",
              help="Print violation ID in full: the request, what the bot sent, its stderr tail.")
@click.option("--json", "as_json", is_flag=True, help="With --show: print the full record as JSON (with the "
                                                      "state snapshot).")
@click.option("--replay", "replay_id", type=int, default=None, metavar="ID",
              help="Replay violation ID's game to the bot as its seat saw it (hello, start, every earlier "
                   "request with its events), then the violating request; show the verdict. Exits 1 while "
                   "it is still a violation or the bot does not start, 0 once the answer is legal.")
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
    from harness.report.tables import format_violation, format_violation_line, truncation_note

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
                if as_json:
                    click.echo(json.dumps(record, indent=2))  # exact: JSON escapes control characters itself
                else:
                    echo(format_violation(row, record, cfg.path))
                    note = truncation_note(store.game_log(row.game_seq))
                    if note:
                        echo(note)
                return
            from harness.games import get_game
            from harness.play.limits import BotSpec, ResourceLimits, TimeControls
            from harness.play.reproduce import reproduce_violation

            players = len(store.game_seats(row.game_seq))
            if row.command is None and not bot_command:
                raise click.BadParameter(f"violation #{wanted} was charged to no bot version: give the command "
                                         f"to replay it to with --bot-command", param_hint="'--replay'")
            argv = tuple(shlex.split(bot_command)) if bot_command else tuple(json.loads(row.command or "[]"))
            cwd = None if bot_command else row.cwd
            outcome = reproduce_violation(
                get_game(cfg.game), cfg.options, TimeControls(**cfg.time), ResourceLimits(**cfg.limits),
                BotSpec(name=str(row.name), command=argv, cwd=cwd),
                {"id": row.id, "kind": row.kind, "detail": row.detail, "game_id": row.game_id,
                 "seat": record.get("seat", 0), "request": record.get("request")},
                store.game_log(row.game_seq), players, timeout_ms)
            echo(outcome.text)
            note = truncation_note(store.game_log(row.game_seq))
            if note:
                echo(note + " (the replay sends the requests kept before the cut, then the violating one)")
            if outcome.still_violation:
                sys.exit(1)  # a regression test for the bot's own CI: fails while the bug is there
            return
        if bot is not None:
            _known_bot(store, bot)
        rows = store.violations(bot=bot, kind=kind)
        for r in rows:
            echo(format_violation_line(r))
        if not rows:
            echo("no violations" + (" matching the filters" if bot or kind else ""), err=True)


def _known_bot(store: LeagueStore, bot: str) -> None:
    """Refuse a --bot NAME[@VERSION] the league never had (a typo must not read as "no violations")."""
    name, _, version = bot.partition("@")
    versions = store.versions()
    if any(v.name == name and (not version or v.version == version) for v in versions):
        return
    names = sorted({v.name for v in versions})
    if any(v.name == name for v in versions):
        known = ", ".join(v.version for v in versions if v.name == name)
        raise click.BadParameter(f"{name} has no version {version!r} in this league (its versions: {known})",
                                 param_hint="'--bot'")
    close = difflib.get_close_matches(name, names, n=1)
    raise click.BadParameter(f"no bot named {name!r} in this league" + (f" (did you mean {close[0]!r}?)" if close else "")
                             + f"; its bots: {', '.join(names) or 'none yet'}", param_hint="'--bot'")


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
        seats = store.game_seats(row.seq)
        log = store.game_log(row.seq)
        vio = store.violations(game_seq=row.seq)
        echo(format_replay(get_game(cfg.game), cfg.options, row, seats, log, vio))


@click.command()
@config_argument
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="A matrix for people, or JSON (every pair, with intervals as [low, high]).")
@click.option("--top", type=click.IntRange(min=2), default=None, metavar="N",
              help="Only the table's first N bots (in its order), e.g. --top 20 in a large league.")
@click.option("--bot", "bots", multiple=True, metavar="NAME[@VERSION]",
              help="This bot against each of its opponents, a line each (repeatable; a name alone: its every "
                   "version). With --top: added to the first N's matrix.")
def h2h(config: str, fmt: str, top: int | None, bots: tuple[str, ...]) -> None:
    """Head to head: for each pair of bots in CONFIG's league, on the deals they shared.

    Each cell is the share of their common games the row bot finished ahead of the column bot
    (level: half), the number of games, and the row bot's mean score difference with its 95%
    interval (clustered by duplicate set: a bootstrap over the sets, or in a league of more than
    10,000 sets its large-sample limit, the delta method); JSON gives the same per pair. Example:

    \b
        harness h2h leagues/demo.yaml
        harness h2h leagues/demo.yaml --top 10 --bot greedy
    """
    from harness.report import statistics

    cfg = _load_to_read(config)
    with _open_store(cfg) as store:
        for bot in bots:
            _known_bot(store, bot)
        versions = store.versions()
        names = {r.id: r.label for r in versions}
        played = statistics.load_arrays(store)
        named = {r.id for r in versions for b in bots
                 if r.name == b.partition("@")[0] and b.partition("@")[2] in ("", r.version)}
        if top is not None:
            from harness.report.tables import league_table

            ids = {(r.name, r.version): r.id for r in versions}
            among = named | {ids[(r.bot, r.version)] for r in league_table(store, cfg, played=played)[:top]}
            pairs = statistics.head_to_head(played, among=among)
        else:
            pairs = statistics.head_to_head(played)
            if bots:
                pairs = [p for p in pairs if p["a"] in named or p["b"] in named]
    if fmt == "json":
        import orjson  # the stdlib's indenting encoder is pure Python: 20 s for 1,000 bots' 300,000 pairs

        click.echo(orjson.dumps({"league": cfg.name, "pairs": [
            {**p, "a": names[p["a"]], "b": names[p["b"]]} for p in pairs]}, option=orjson.OPT_INDENT_2).decode())
        return
    if bots and top is None:
        _h2h_lines(pairs, named, names)
        return
    shown = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs}, key=lambda v: names[v])
    cell: dict[tuple[int, int], str] = {}
    for p in pairs:
        low, high = p["score_diff_ci"] if p.get("score_diff_ci") else (None, None)
        interval = "" if low is None or high is None else f" [{low:+.1f}, {high:+.1f}]"
        back = "" if low is None or high is None else f" [{-high:+.1f}, {-low:+.1f}]"
        cell[(p["a"], p["b"])] = f"{p['a_won_share']:.2f} ({p['games']}) {p['score_diff']:+.1f}{interval}"
        cell[(p["b"], p["a"])] = f"{1 - p['a_won_share']:.2f} ({p['games']}) {-p['score_diff']:+.1f}{back}"
    width = max([len(names[v]) for v in shown] + [3])  # full names: two versions may share a prefix
    widths = {b: max([len(names[b])] + [len(cell.get((a, b), "-")) for a in shown]) for b in shown}
    echo("row bot vs column bot on the deals they shared: share of the games it finished ahead (games), "
         "mean score difference [95% interval]:")
    echo(" " * width + "  " + "  ".join(names[b].rjust(widths[b]) for b in shown))
    for a in shown:
        echo(names[a].ljust(width) + "  " + "  ".join(cell.get((a, b), "-").rjust(widths[b]) for b in shown))



def _h2h_lines(pairs: list[dict[str, Any]], named: set[int], names: dict[int, str]) -> None:
    """Each named bot against each of its opponents, a line each, the named bot first."""
    lines = []
    for p in pairs:
        for me, other, sign in ((p["a"], p["b"], 1), (p["b"], p["a"], -1)):
            if me not in named:
                continue
            share = p["a_won_share"] if sign == 1 else 1 - p["a_won_share"]
            low, high = p["score_diff_ci"] if p.get("score_diff_ci") else (None, None)
            interval = "" if low is None or high is None else \
                f" [{sign * (low if sign == 1 else high):+.1f}, {sign * (high if sign == 1 else low):+.1f}]"
            lines.append((names[me], names[other], f"{share:.2f} ({p['games']}) {sign * p['score_diff']:+.1f}{interval}"))
    if not lines:
        echo("no games between these bots and any other", err=True)
        return
    lines.sort()
    width = max(len(a) + len(b) for a, b, _ in lines) + 4
    echo("bot vs opponent on the deals they shared: share of the games it finished ahead (games), "
         "mean score difference [95% interval]:")
    for a, b, text in lines:
        echo(f"{a} vs {b}".ljust(width) + "  " + text)
