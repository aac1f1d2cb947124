"""The `harness` command line. Each command lives in its own module and is added here in one line."""

from __future__ import annotations

import click

from harness.cli.collusion import collusion
from harness.cli.contest import contest
from harness.cli.contest_client import add_client_commands
from harness.cli.doctor import doctor
from harness.cli.export import export
from harness.cli.league import h2h, replay, run, table, violations
from harness.cli.match import match
from harness.cli.play import check_bot, play
from harness.cli.report import report, serve
from harness.cli.reproduce import reproduce
from harness.cli.selfplay import selfplay
from harness.cli.submit import submit


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="tablebots")
def cli() -> None:
    """tablebots: pit bot executables against each other at Epizodiak, Dominoes and Crisps.

    Bots talk JSON lines over stdin/stdout (see protocol.md). Start with `harness run
    leagues/demo.yaml`, then `harness table leagues/demo.yaml`.
    """


cli.add_command(selfplay)
cli.add_command(play)
cli.add_command(check_bot)
cli.add_command(run)
cli.add_command(table)
cli.add_command(violations)
cli.add_command(replay)
cli.add_command(export)
cli.add_command(submit)
cli.add_command(h2h)
cli.add_command(match)
cli.add_command(report)
cli.add_command(serve)
add_client_commands(contest)  # a team's client commands: harness contest submit|games|violations|download
cli.add_command(contest)
cli.add_command(collusion)
cli.add_command(reproduce)
cli.add_command(doctor)


def main() -> None:
    """Console-script entry point."""
    cli()
