"""`harness export`: a league's results as JSON lines or CSV on stdout."""

from __future__ import annotations

import os
import sys

import click

from harness.cli.league import _load_to_read, _open_store, config_argument
from harness.report.export import TABLES, export_rows, to_csv_lines, to_jsonl_lines


@click.command()
@config_argument
@click.argument("table", type=click.Choice(TABLES))
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True,
              help="JSON lines (one object a line, exact), or CSV with a header (lists and objects as JSON text). "
                   "logs are JSON lines only.")
def export(config: str, table: str, fmt: str) -> None:
    """Write the finished games of CONFIG's league to stdout, one row a line.

    \b
    TABLE is one of:
      games       id, round, seed, players, bots by seat, ranking, scores, ended_by, decisions, seconds
      seats       one row per seat: game_id, round, seed, players, seat, bot, version, rank, score, forfeited
      violations  the full record: game, move, seat, bot, kind, detail, request, received, stderr tail
      logs        every game's referee log, as the JSON lines `harness play --log` writes

    Ranks count from 0 (0 = first), as in the protocol. For pandas:

    \b
        harness export leagues/demo.yaml seats > seats.jsonl
        python3 -c "import pandas as pd; print(pd.read_json('seats.jsonl', lines=True).groupby('bot')['rank'].mean())"
    """
    if table == "logs" and fmt == "csv":
        raise click.BadParameter("logs are JSON lines only (their entries differ in shape)", param_hint="'--format'")
    cfg = _load_to_read(config)
    with _open_store(cfg) as store:
        rows = export_rows(store, table, cfg.game, cfg.options)
        try:
            for line in (to_csv_lines(rows) if fmt == "csv" else to_jsonl_lines(rows)):
                click.echo(line)  # data: exact, as the bots sent it (JSON escapes control characters)
        except BrokenPipeError:  # `| head`: the reader has all it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
