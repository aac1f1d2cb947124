"""`harness reproduce FILE --command CMD`: replay a game downloaded from a contest seat to a bot."""

from __future__ import annotations

import json
import os
import shlex
import sys

import click

from harness.cli.common import echo, sandbox_option
from harness.play.limits import BotSpec, ResourceLimits, SandboxUnavailable, TimeControls, check_sandbox
from harness.play.sandbox import resolve_sandbox
from harness.play.seat_file import SeatFileError, check_seat_file, reproduce_seat

__all__ = ["reproduce"]


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--command", "bot_command", required=True, metavar="CMD",
              help="The bot to replay the game to, e.g. 'python3 bot.py' or 'java -cp . Bot' (run in --cwd).")
@click.option("--cwd", default=None, metavar="DIR", type=click.Path(exists=True, file_okay=False),
              help="The bot's directory (where CMD runs; the sandbox shows it)  [default: the current directory]")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=None,
              help="How long to wait for each answer  [default: the game's move_ms]")
@sandbox_option
def reproduce(file: str, bot_command: str, cwd: str | None, timeout_ms: int | None, sandbox: str | None) -> None:
    """Replay FILE, a game downloaded from your seat on the contest site (a game's or a
    violation's 'download' link), to the bot CMD on this machine.

    The bot is sent exactly what your seat was sent, in order, with the contest's time controls
    and memory limit: the hello, the start, every request up to the violation (or, for a game
    without one, up to the seat's last request). The replay says where its answers differ from the
    recorded ones and whether the violation is gone; it exits 1 while it is not (a regression test
    for your bot's own CI), 0 once it is, 2 if FILE is not a seat file. Example:

    \b
        harness reproduce violation-12.json --command "python3 bot.py"
    """
    try:
        with open(file, encoding="utf-8") as fh:
            data = check_seat_file(json.load(fh), file)
    except OSError as exc:
        echo(f"error: {file}: cannot read it: {exc.strerror or exc}", err=True)
        sys.exit(2)
    except json.JSONDecodeError as exc:
        echo(f"error: {file}: not a seat file (not JSON: {exc}); download one from your seat's game page", err=True)
        sys.exit(2)
    except (ValueError, SeatFileError) as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(2)
    resolved, warning = resolve_sandbox(sandbox or "auto")
    if warning:
        echo(warning, err=True)
    limits = ResourceLimits(**data.get("limits", {}), sandbox=resolved)
    try:
        check_sandbox(limits)
    except SandboxUnavailable as exc:
        raise click.BadParameter(str(exc), param_hint="'--sandbox'") from None
    folder = os.path.abspath(cwd or os.getcwd())
    argv = tuple(shlex.split(bot_command))
    if not argv:
        raise click.BadParameter("empty command", param_hint="'--command'")
    bot = BotSpec(name="bot", command=argv, cwd=folder, sandbox_dir=folder)
    try:
        outcome = reproduce_seat(data, time_controls=TimeControls(**data["time"]), limits=limits, bot=bot,
                                 timeout_ms=timeout_ms)
    except SeatFileError as exc:
        echo(f"error: {file}: {exc}", err=True)
        sys.exit(2)
    echo(outcome.text)
    if outcome.still_violation:
        sys.exit(1)
