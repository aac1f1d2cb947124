"""Click options and parameter types shared by several commands (defined once, used everywhere)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.games import GAMES, Game, GameLoadError, InvalidOptions, get_game
from harness.league.config import parse_scalar
from harness.play.limits import TimeControls
from harness.play.sandbox import SANDBOX_CHOICES

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


# (click.ParamType is generic from click 8.2 on, which pyproject does not require: not subscripted here)
class GameType(click.ParamType):  # type: ignore[type-arg]
    """A registered game name, converted to its :class:`Game`."""

    name = "game"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Game:
        if isinstance(value, str) and value in GAMES:
            try:
                return get_game(value)
            except GameLoadError as exc:
                self.fail(str(exc), param, ctx)
        self.fail(f"{value!r} is not a game (choose from: {', '.join(GAMES)})", param, ctx)

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem
        return [CompletionItem(name) for name in GAMES if name.startswith(incomplete)]


GAME = GameType()


def _parse_option(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE (e.g. -o target=13)", ctx=ctx, param=param)
        options[key.strip()] = parse_scalar(raw)  # true/false as the docs say; `yes`/`on` stay text
    return options


option_option = click.option(
    "-o", "--option", "options", multiple=True, callback=_parse_option, metavar="KEY=VALUE",
    help="Game option, repeatable (e.g. -o mode=one_round -o target=13). See docs/rules/<game>.md.")

seed_option = click.option("--seed", type=int, default=1, show_default=True,
                           help="Seed of the first game; game i uses seed+i.")

games_option = click.option("--games", "n_games", type=click.IntRange(min=1), default=1, show_default=True,
                            help="Number of games to play.")


_TIME = TimeControls()  # the defaults, defined once in the play stage


def time_options(func: Any) -> Any:
    """--init-ms, --move-ms, --bank-ms: the referee's deadlines (see protocol.md, "Timing")."""
    func = click.option("--bank-ms", type=click.IntRange(min=0), default=None,
                        help=f"Per-game time bank a bot may dip into past --move-ms [default: {_TIME.bank_ms}].")(func)
    func = click.option("--move-ms", type=click.IntRange(min=1), default=None,
                        help=f"Deadline per decision, in ms [default: {_TIME.move_ms}].")(func)
    func = click.option("--init-ms", type=click.IntRange(min=1), default=None,
                        help=f"Deadline from start to the bot's ready, in ms [default: {_TIME.init_ms}].")(func)
    return func


def time_controls(init_ms: int | None, move_ms: int | None, bank_ms: int | None) -> TimeControls:
    """The deadlines given by :func:`time_options` (``None``: the default)."""
    return TimeControls(init_ms=_TIME.init_ms if init_ms is None else init_ms,
                        move_ms=_TIME.move_ms if move_ms is None else move_ms,
                        bank_ms=_TIME.bank_ms if bank_ms is None else bank_ms)


strikes_option = click.option(
    "--strikes", type=click.IntRange(min=0), default=None,
    help="Violations a bot may commit in one game before it forfeits; each one costs it that "
         "decision (played by a random fallback) [default: 0, forfeit at the first].")

sandbox_option = click.option(
    "--sandbox", type=click.Choice(SANDBOX_CHOICES), default=None,
    help="bwrap: run every bot under bubblewrap, where it sees only the system's runtime and its "
         "own directory (read-only) and a private /tmp, with no network (protocol.md, Sandbox); "
         "auto: bwrap if it works on this machine, else none with a warning; none: no sandbox "
         "[default: auto].")


dask_option = click.option(
    "--dask", "dask", default=None, metavar="ADDRESS|local:N",
    help="Play on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.1:8786), or on N local "
         "Dask workers with local:N; the store is still written here. Overrides the config's executor. "
         "See docs/scale-out.md.")


def checked_options(game: Game, options: dict[str, Any]) -> dict[str, Any]:
    """Validate game options, turning an engine error into a usage error naming ``--option``."""
    try:
        return game.validate_options(options)
    except InvalidOptions as exc:
        raise click.BadParameter(str(exc), param_hint="'-o' / '--option'") from None


def players_for(game: Game, players: int | None) -> int:
    """The player count to use: the one asked for (checked) or the game's minimum."""
    if players is None:
        return game.min_players
    try:
        return game.validate_players(players)
    except InvalidOptions as exc:
        raise click.BadParameter(str(exc), param_hint="'--players'") from None


def echo(text: str, err: bool = False) -> None:
    """Print text for a person: every control character a bot may have put in it is shown
    escaped (:func:`harness.report.safe_text.visible`), never sent raw to the terminal."""
    from harness.report.safe_text import visible

    click.echo(visible(text), err=err)


#: The contest directory argument, shared by every `harness contest` command that takes one.
contest_dir = click.argument("contest_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))


def load_contest_config(root: Path):  # type: ignore[no-untyped-def]
    """The contest in ``root`` (its contest.yaml), or one clear line naming what is wrong."""
    from harness.contest.config import ContestConfigError, load_contest

    try:
        return load_contest(root)
    except ContestConfigError as exc:
        raise click.ClickException(str(exc)) from None
