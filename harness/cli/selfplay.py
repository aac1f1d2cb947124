"""`harness selfplay`: random games played in process, no bot processes involved."""

from __future__ import annotations

import random
from typing import Any

import click

from harness.cli.common import GAME, checked_options, games_option, option_option, players_for, seed_option
from harness.games import Game


@click.command()
@click.argument("game", type=GAME)
@click.option("--players", type=int, default=None, help="Number of seats (default: the game's minimum).")
@seed_option
@games_option
@option_option
@click.option("--show", is_flag=True, help="Print the table after every move.")
def selfplay(game: Game, players: int | None, seed: int, n_games: int, options: dict[str, Any], show: bool) -> None:
    """Play GAME between uniformly random players inside this process and print each result.

    A quick check that an engine works; no executables are started. Example:

        harness selfplay epizodiak --seed 7 --games 3
    """
    players = players_for(game, players)
    options = checked_options(game, options)
    for i in range(n_games):
        state = game.new_state(players, seed + i, options)
        chooser = random.Random(seed + i)
        moves = 0
        while not state.is_terminal():
            action = chooser.choice(state.legal_actions())
            if show:
                click.echo(f"seat {state.current_player}: {game.format_action(action)}")
            state.apply(action)
            moves += 1
            if show:
                click.echo(state.render())
        result = state.result()
        click.echo(f"{game.name} seed {seed + i}: {moves} moves, ended by {result['ended_by']}, "
                   f"scores {result['scores']}, ranking {result['ranking']} (0 = first)")
