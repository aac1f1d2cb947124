"""`harness report` (a static HTML site) and `harness serve` (the same pages, live, from the store)."""

from __future__ import annotations

import threading
from pathlib import Path

import click

from harness.cli.common import echo
from harness.cli.league import _load_to_read, _open_store, _shown_path, config_argument


@click.command()
@config_argument
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Where to write the site  [default: beside the league's store, runs/<name>.report/ for the "
                   "store runs/<name>.sqlite]")
@click.option("--replays", "max_replays", type=click.IntRange(min=0), default=500, show_default=True,
              help="Write at most this many game replays (the latest games, those with violations, each bot's "
                   "latest); the rest are listed without a link (harness serve shows any game).")
def report(config: str, out_dir: str | None, max_replays: int) -> None:
    """Write CONFIG's league as a self-contained HTML site (works offline, from file://).

    The table with its intervals, the head-to-head heat map, ratings over time, seat bias,
    every violation on its own page, and a replay viewer for the games: each game drawn as it
    lies on the table (the dominoes with their count and points, the cards, the dial), a move
    list in words, play/pause or step (buttons, slider, arrow keys, #move=N in the address), as
    the spectator or as one seat, with each move's stderr.
    Open <out>/index.html in a browser. Example:

    \b
        harness report leagues/demo.yaml -o demo-report && xdg-open demo-report/index.html
    """
    from harness.report.html import write_report

    cfg = _load_to_read(config)
    with _open_store(cfg):
        pass  # a clear error if there are no results yet
    target = Path(out_dir) if out_dir else Path(cfg.store).with_suffix(".report")
    written = write_report(cfg, target, max_replays=max_replays)
    echo(f"report: {_shown_path(str(target / 'index.html'))} ({written['replays']} replays, "
         f"{written['violations']} violation pages, {written['bytes'] / 1e6:.1f} MB)")


@click.command()
@config_argument
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8000, show_default=True,
              help="TCP port (0: any free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; the default serves this machine only. Anything else exposes "
                   "the league's logs (every seat's hands) to the network.")
def serve(config: str, port: int, host: str) -> None:
    """Serve CONFIG's league pages live from its store, while `harness run` plays it.

    The same pages as `harness report`, made from the store, with any game's replay. The index
    keeps itself current: its counts every second, the whole page (table, matrix, charts,
    violations, games) made as soon as games were recorded and swapped in at the next second;
    the config is read again when it or a bot's file changes. Started before the league, it waits for the store. A config that is not its
    store's owner (a copy that kept the name, which `harness run` refuses) is served with a
    warning line, on start and on every page: serve only reads. Ctrl-C stops it.
    Example:

    \b
        harness run leagues/demo.yaml & harness serve leagues/demo.yaml
    """
    from harness.report.serve import make_server

    cfg = _load_to_read(config)
    try:
        server = make_server(cfg, host, port)
    except OSError as exc:
        raise click.BadParameter(f"cannot listen on {host}:{port}: {exc.strerror or exc} (choose another port, "
                                 f"or 0 for any free one)", param_hint="'--port'") from None
    echo(f"serving {cfg.name} at http://{host}:{server.server_address[1]}/ (Ctrl-C stops)")
    warning = server.owner_warning()  # a copied config: it only reads, so it serves, and says so
    if warning:
        echo(warning, err=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        thread.join()
    except KeyboardInterrupt:
        echo("stopped")
    finally:
        server.shutdown()
        server.server_close()
