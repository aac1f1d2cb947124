"""`harness submit`: add a bot to a league's config, only after it passes the conformance games.

The config is edited with ruamel.yaml's round trip, so its comments, key order and style stay
as the author wrote them; the new entry copies the style of the bots already listed (block or
flow mappings). The edited text is parsed and checked exactly as `harness run` will check it
before it replaces the file (atomically, through a temporary file beside it): a bot that fails,
or an edit that would not load, leaves the file untouched and exits non-zero.
"""

from __future__ import annotations

import dataclasses
import io
import os
import shlex
import tempfile
from pathlib import Path

import click

from harness.cli.common import echo, time_options
from harness.cli.league import config_argument
from harness.cli.play import make_config, run_conformance
from harness.league.config import ConfigError, StrictBoolLoader, load_config, parse_config
from harness.play.conformance import BOTS_ENV, reference_opponents
from harness.play.limits import BotSpec, ResourceLimits
from harness.play.violations import Violation


def _edited_text(text: str, name: str, command: str, cwd: str | None) -> str:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    yaml = YAML()  # round trip: comments, order and quoting are kept
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long command line
    yaml.indent(mapping=2, sequence=4, offset=2)
    data = yaml.load(text)
    bots = data.get("bots")
    if not isinstance(bots, CommentedSeq):
        raise click.ClickException("the config has no list of bots to add to (a `bots:` list)")
    entry = CommentedMap([("name", name), ("command", command)] + ([("cwd", cwd)] if cwd else []))
    if bots and getattr(bots[-1], "fa", None) is not None and bots[-1].fa.flow_style():
        entry.fa.set_flow_style()
    bots.append(entry)
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


@click.command()
@config_argument
@click.argument("name")
@click.argument("command", metavar="CMD")
@click.option("--cwd", default=None, metavar="DIR",
              help="The bot's working directory, relative to the config file's directory (as the `cwd` key).")
@click.option("--games", "n_games", type=click.IntRange(min=1), default=4, show_default=True,
              help="Conformance games to play first.")
@time_options
def submit(config: str, name: str, command: str, cwd: str | None, n_games: int, init_ms: int | None,
           move_ms: int | None, bank_ms: int | None) -> None:
    """Add the bot NAME, run as CMD, to CONFIG's league if it passes check-bot's conformance games.

    CMD is written as in the config: paths relative to the config file's directory (or to
    --cwd). The bot plays the reference bots with the league's game, options, time controls and limits in every seat;
    at every table size the league plays (`players`), at least one game per seat;
    only if it commits no violation is it added, keeping the file's comments and order. The next
    `harness run` plays only its games. Exits 1 (the file untouched) otherwise. Example:

    \b
        harness submit leagues/demo.yaml mybot "python3 ../bots/mybot.py"
    """
    path = Path(config)
    try:
        cfg = load_config(path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if any(b.name == name for b in cfg.bots):
        raise click.BadParameter(f"{config} already has a bot named {name!r}; choose another name (a changed "
                                 f"bot keeps its name and becomes a new version on the next run)", param_hint="NAME")
    text = path.read_text(encoding="utf-8")
    new_text = _edited_text(text, name, command, cwd)
    try:  # the edit must load exactly as `harness run` will load it, bot files included
        import yaml

        checked = parse_config(yaml.load(new_text, Loader=StrictBoolLoader), config,  # noqa: S506
                               base_dir=path.resolve().parent)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="CMD") from None
    entry = next(b for b in checked.bots if b.name == name)
    from harness.games import get_game

    game = get_game(cfg.game)
    t = cfg.time  # the league's time controls, unless given on the command line
    referee = make_config(t["init_ms"] if init_ms is None else init_ms, t["move_ms"] if move_ms is None else move_ms,
                          t["bank_ms"] if bank_ms is None else bank_ms, 0, cfg.limits.get("sandbox", "auto"), None, record_messages=True)
    # the league's limits (memory, processes, the sandbox...): a bot that passes here runs under them in the league
    referee = dataclasses.replace(referee, limits=ResourceLimits(**{**cfg.limits, "sandbox": referee.limits.sandbox}))
    echo(f"conformance games for {name}: {shlex.join(entry.command)} (in {entry.cwd})")
    candidate = BotSpec(name=name, command=entry.command, cwd=entry.cwd, sandbox_dir=entry.sandbox_dir)
    opponents = reference_opponents(game)
    if not opponents:
        raise click.ClickException(f"no reference bots to play the conformance games against (set {BOTS_ENV} to "
                                   "a directory with random_bot.py, e.g. a checkout's bots/)")
    violations: list[Violation] = []
    for players in cfg.table_sizes:  # every table size the league plays: a bot may fail only at 3 seats
        if len(cfg.table_sizes) > 1:
            echo(f"{players}-player tables:")
        violations += run_conformance(game, candidate, players, None, max(n_games, players), cfg.options, referee,
                                      opponents, None)
    if violations:
        echo(f"not submitted: {name} committed {len(violations)} violation(s); {config} is unchanged")
        raise SystemExit(1)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.resolve().parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new_text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    echo(f"submitted: {name} added to {config}; `harness run {config}` plays its games")
