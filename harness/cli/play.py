"""`harness play` and `harness check-bot`: bot executables playing games under the referee."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import orjson

from harness.cli.common import (
    GAME,
    checked_options,
    echo,
    games_option,
    option_option,
    players_for,
    sandbox_option,
    seed_option,
    strikes_option,
    time_controls,
    time_options,
)
from harness.games import Game, InvalidOptions
from harness.league.bot_entries import SCRIPT_SUFFIXES
from harness.play.conformance import (
    BOTS_ENV,
    conformance_games,
    group_violations,
    hint,
    latency_line,
    reference_opponents,
)
from harness.play.limits import (
    BotSpec,
    ResourceLimits,
    SandboxUnavailable,
    check_sandbox,
    resolve_command,
)
from harness.play.pool import BotPool
from harness.play.referee import GameRecord, RefereeConfig, play_game
from harness.play.sandbox import resolve_sandbox
from harness.play.violations import Violation
from harness.report.tables import move_number

_INTERPRETERS = {"python", "python3", "node", "nodejs", "ruby", "perl", "java", "bash", "sh"}


def bot_name(argv: Sequence[str]) -> str:
    """A short display name from a command: the script's file name (``random_bot.js``), else the program's."""
    parts = list(argv)
    if not parts:
        return "bot"
    program = os.path.basename(parts[0])
    if program in _INTERPRETERS or program.startswith("python"):
        rest = [p for p in parts[1:] if not p.startswith("-")]
        if rest:
            return Path(rest[0]).name or rest[0]
    return program or parts[0]


def parse_bot(text: str, param_hint: str = "'--bot'") -> tuple[str, ...]:
    """Split a bot command line (shell-like quoting, never run by a shell) and check its executable exists."""
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise click.BadParameter(f"cannot split {text!r}: {exc}", param_hint=param_hint) from None
    if not argv:
        raise click.BadParameter("empty bot command", param_hint=param_hint)
    exe = resolve_command(argv)[0]
    if os.sep in exe:
        if not os.path.exists(exe):
            raise click.BadParameter(f"{exe} (from {text!r}) not found (relative to the current directory "
                                     f"{os.getcwd()})", param_hint=param_hint)
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise click.BadParameter(f"{exe!r} (from {text!r}) is not an executable file (chmod +x it, or start "
                                     f"the command with its interpreter)", param_hint=param_hint)
    elif shutil.which(exe) is None:
        raise click.BadParameter(f"executable {exe!r} (from {text!r}) is not found on PATH", param_hint=param_hint)
    for word in argv[1:]:  # `python3 mybot.py` with no mybot.py: refused now, not four forfeits later
        if word.endswith(SCRIPT_SUFFIXES) and not word.startswith("-") and not os.path.exists(word):
            raise click.BadParameter(f"{word} (from {text!r}) not found (relative to the current directory "
                                     f"{os.getcwd()})", param_hint=param_hint)
    return tuple(argv)


def unique_specs(commands: Sequence[tuple[str, ...]]) -> list[BotSpec]:
    """One BotSpec per seat; the same command shares a spec (and name), different ones get distinct names."""
    names: dict[tuple[str, ...], str] = {}
    used: set[str] = set()
    for argv in commands:
        if argv in names:
            continue
        base = name = bot_name(argv)
        n = 2
        while name in used:
            name = f"{base}-{n}"
            n += 1
        used.add(name)
        names[argv] = name
    return [BotSpec(name=names[argv], command=argv) for argv in commands]


def make_config(init_ms: int | None, move_ms: int | None, bank_ms: int | None, strikes: int | None,
                sandbox: str | None, stderr_dir: str | None, record_messages: bool) -> RefereeConfig:
    """A referee config from command-line values (None: the default); checks the sandbox first."""
    time = time_controls(init_ms, move_ms, bank_ms)
    resolved, warning = resolve_sandbox(sandbox or "auto")
    if warning:
        echo(warning, err=True)
    limits = ResourceLimits(sandbox=resolved)
    try:
        check_sandbox(limits)
    except SandboxUnavailable as exc:
        raise click.BadParameter(str(exc), param_hint="'--sandbox'") from None
    return RefereeConfig(time=time, limits=limits, strikes=strikes or 0, log_dir=stderr_dir, record_messages=record_messages)


def _one_line(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def describe_record(record: GameRecord, index: int, total: int) -> list[str]:
    """The readable result of one game."""
    lines = [f"game {index}/{total} {record.game} {record.game_id} seed {record.seed}: ended by {record.ended_by}, "
             f"{record.decisions} decisions ({record.requests} asked), {record.seconds:.2f} s"]
    width = max(len(b) for b in record.bots)
    for seat, bot in enumerate(record.bots):
        flag = "  FORFEIT" if seat in record.forfeits else ""
        lines.append(f"  seat {seat}  {bot:<{width}}  rank {record.ranking[seat] + 1}  score {record.scores[seat]}{flag}")
    for v in record.violations:
        lines.append(f"  violation: seat {v['seat']} {v['bot']}: {v['kind']} at {move_number(v['decision'])}: "
                     f"{_one_line(v['detail'])}")
        if v["received"]:
            lines.append(f"    received: {_one_line(v['received'], 120)}")
        tail = [t for t in v["stderr_tail"].splitlines() if t.strip() and not t.startswith("# tablebots")]
        for t in tail[-3:]:
            lines.append(f"    stderr: {_one_line(t, 150)}")
    return lines


class JsonLog:
    """``--log FILE``: one JSON object per line: a game header, every log entry, the result."""

    def __init__(self, path: str | None) -> None:
        try:
            self._fh = open(path, "wb") if path else None
        except OSError as exc:
            raise click.BadParameter(f"cannot write {path!r}: {exc.strerror or exc}", param_hint="'--log'") from None

    def write_game(self, record: GameRecord) -> None:
        fh = self._fh
        if fh is None:
            return
        fh.write(orjson.dumps({"type": "game", "game_id": record.game_id, "game": record.game,
                               "options": record.options, "seed": record.seed, "bots": record.bots}) + b"\n")
        for entry in record.log:
            fh.write(orjson.dumps({"game_id": record.game_id, **entry}) + b"\n")
        fh.write(orjson.dumps({"type": "game_result", "game_id": record.game_id, "ranking": record.ranking,
                               "scores": record.scores, "ended_by": record.ended_by, "forfeits": record.forfeits,
                               "decisions": record.decisions, "seconds": record.seconds}) + b"\n")
        fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


stderr_dir_option = click.option(
    "--stderr-dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
    help="Write each bot's stderr to DIR/<bot>.stderr.log (capped, rotating). Without it only the "
         "tail is kept, and shown with violations.")


def _checked_players(game: Game, n: int) -> None:
    try:
        game.validate_players(n)
    except InvalidOptions as exc:
        raise click.BadParameter(f"{exc} (one --bot per seat)", param_hint="'--bot'") from None


@click.command()
@click.argument("game", type=GAME)
@click.option("--bot", "bots", multiple=True, required=True, metavar="CMD",
              help="Command line of the bot in the next seat (repeat once per seat), e.g. "
                   "--bot 'python3 bots/random_bot.py'.")
@seed_option
@games_option
@option_option
@time_options
@strikes_option
@sandbox_option
@stderr_dir_option
@click.option("--log", "log_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write JSON lines: every message each way with timings, the public events and every "
                   "violation (\"type\": \"violation\").")
def play(game: Game, bots: tuple[str, ...], seed: int, n_games: int, options: dict[str, Any], init_ms: int | None,
         move_ms: int | None, bank_ms: int | None, strikes: int | None, sandbox: str | None,
         stderr_dir: str | None, log_path: str | None) -> None:
    """Play GAME between bot executables (one --bot per seat, in seat order) and print each result.

    Bots talk JSON lines over stdin/stdout (protocol.md); a leading `python`/`python3` runs
    with the harness's own interpreter. The bot processes stay alive across the games. Example:

    \b
        harness play crisps --bot 'python3 bots/random_bot.py' \\
                            --bot 'node bots/random_bot.js' --games 3 --log games.jsonl
    """
    commands = [parse_bot(b) for b in bots]
    _checked_players(game, len(commands))
    options = checked_options(game, options)
    config = make_config(init_ms, move_ms, bank_ms, strikes, sandbox, stderr_dir, record_messages=log_path is not None)
    specs = unique_specs(commands)
    log = JsonLog(log_path)
    totals: dict[str, list[int]] = {s.name: [] for s in specs}
    try:
        with BotPool(config) as pool:
            for i in range(n_games):
                record = play_game(game, options, seed + i, f"g-{seed + i:06d}", specs, pool, config)
                log.write_game(record)
                for line in describe_record(record, i + 1, n_games):
                    echo(line)
                for seat, spec in enumerate(specs):
                    totals[spec.name].append(record.ranking[seat])
    finally:
        log.close()
    if n_games > 1:
        echo("total:")
        for name, ranks in totals.items():
            firsts = sum(1 for r in ranks if r == 0)
            echo(f"  {name}: {firsts} first place(s) in {n_games} games, mean rank "
                       f"{sum(ranks) / len(ranks) + 1:.2f}")


def describe_check_game(i: int, n_games: int, seats: Sequence[BotSpec], mine: int, record: GameRecord) -> str:
    """One check-bot game: who sat where, your rank (1 = first) and the scores as you vs them."""
    who = ", ".join(f"{s}: {'YOU' if s == mine else spec.name}" for s, spec in enumerate(seats))
    theirs = " ".join(str(record.scores[s]) for s in range(len(seats)) if s != mine)
    return (f"game {i + 1}/{n_games} (seats {who}): rank {record.ranking[mine] + 1} of {len(seats)}, "
            f"score {record.scores[mine]} vs {theirs}" + (", FORFEIT" if mine in record.forfeits else ""))


@click.command("check-bot")
@click.argument("game", type=GAME)
@click.argument("command", metavar="CMD")
@click.option("--players", type=int, default=None, help="Seats per game (default: the game's minimum).")
@click.option("--seed", type=int, default=None,
              help="Derive the games' deals, ids and seats from this number, to get the same games again "
                   "[default: fresh secret deals each run, as a league's: your bot cannot tell a check from a "
                   "league game]")
@click.option("--games", "n_games", type=click.IntRange(min=1), default=4, show_default=True,
              help="Number of games to play.")
@click.option("--opponent", "opponent_commands", multiple=True, metavar="CMD",
              help="An opponent's command, repeatable; they take the other seats in turn  [default: the "
                   "reference bots: random, and the game's greedy bot, from bots/ (TABLEBOTS_BOTS names another "
                   "directory)]")
@click.option("--log", "log_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write every message of every game to FILE as JSON lines (as `harness play --log`).")
@option_option
@time_options
@sandbox_option
@stderr_dir_option
def check_bot(game: Game, command: str, players: int | None, seed: int | None, n_games: int,
              opponent_commands: tuple[str, ...], log_path: str | None, options: dict[str, Any],
              init_ms: int | None, move_ms: int | None, bank_ms: int | None, sandbox: str | None,
              stderr_dir: str | None) -> None:
    """Try the bot CMD at GAME against the reference bots before submitting it.

    Plays a few games with the bot in every seat in turn, then reports its start-up time,
    its decision latency (median, p99) and every violation it committed. Exits with status 1
    if it committed any. Example:

    \b
        harness check-bot dominoes 'python3 mybot.py'
    """
    argv = parse_bot(command, param_hint="'CMD'")
    players = players_for(game, players)
    options = checked_options(game, options)
    config = make_config(init_ms, move_ms, bank_ms, 0, sandbox, stderr_dir, record_messages=True)
    if opponent_commands:
        opponents = unique_specs([parse_bot(c, param_hint="'--opponent'") for c in opponent_commands])
    else:
        opponents = reference_opponents(game)
    if not opponents:
        raise click.UsageError(f"no reference bots found (set {BOTS_ENV} to a directory with random_bot.py, "
                               "e.g. a checkout's bots/), or give --opponent CMD")
    violations = run_conformance(game, BotSpec(name="you", command=argv), players, seed, n_games, options,
                                   config, opponents, log_path)
    if game.min_players != game.max_players:  # a bot may fail only at another table size
        others = [str(n) for n in range(game.min_players, game.max_players + 1) if n != players]
        sizes = " or ".join([", ".join(others[:-1]), others[-1]] if len(others) > 1 else others)
        echo(f"note: {players}-player tables only; {game.name} is also played at {sizes} seats: "
             f"check those your league plays with --players N")
    if violations:
        raise SystemExit(1)


def run_conformance(game: Game, candidate: BotSpec, players: int, seed: int | None, n_games: int, options: dict[str, Any],
                    config: RefereeConfig, opponents: Sequence[BotSpec], log_path: str | None) -> list[Violation]:
    """check-bot's games (:func:`harness.play.conformance.conformance_games`), printed: each game,
    the start-up time, the latency and every violation (grouped); returns the violations."""
    log = JsonLog(log_path)

    def on_game(i: int, seats: Sequence[BotSpec], mine: int, record: GameRecord) -> None:
        log.write_game(record)
        echo(describe_check_game(i, n_games, seats, mine, record))

    try:
        result = conformance_games(game, candidate, players, seed, n_games, options, config, opponents, on_game)
    finally:
        log.close()
    startups, latencies, violations = result.startups_ms, result.latencies_ms, result.violations
    if startups:
        echo(f"start-up (hello to ready): {', '.join(f'{ms:.0f}' for ms in startups)} ms")
    latency = latency_line(latencies, result.timeouts_ms, config.time.move_ms)
    if latency:
        echo(latency)
    if result.opponent_violations:
        echo(f"note: the reference bots committed {result.opponent_violations} violation(s)")
    if result.fallbacks:
        errors = sorted({f["error"] for f in result.fallbacks})
        echo(f"warning: {len(result.fallbacks)} answer(s) were the Python SDK's fallback (on_error='first'), "
             f"not the policy's: {_one_line('; '.join(errors), 200)}")
    if not violations:
        echo("no violations: ok" + (" (but see the fallback answers above)" if result.fallbacks else ""))
        return violations
    groups = group_violations(violations)
    echo(f"{len(violations)} violation(s)" + (f", {len(groups)} different:" if len(groups) < len(violations) else ":"))
    for (kind, detail), same in groups.items():
        v = same[0]
        where = ", ".join(f"{x['game_id']} {move_number(x['decision'])}" for x in same[:3])
        more = f" and {len(same) - 3} more" if len(same) > 3 else ""
        echo(f"  {len(same)}x {kind}: {_one_line(detail)}" if len(same) > 1 else f"  {kind}: {_one_line(detail)}")
        echo(f"    at {where}{more}")
        if v["received"]:
            echo(f"    received: {_one_line(v['received'], 120)}")
        tail = [t for t in v["stderr_tail"].splitlines() if t.strip() and not t.startswith("# tablebots")]
        for t in tail[-5:]:
            echo(f"    stderr: {_one_line(t, 150)}")
        advice = hint(v, bool(latencies))
        if advice:
            echo(f"    hint: {advice}")
    return violations
