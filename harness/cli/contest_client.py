"""`harness contest submit|games|violations|download URL --token-file F ...`: a team's command line
over a contest site's API (:mod:`harness.contest.client`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from harness.cli.common import echo
from harness.contest.client import Client, ClientError, guess_runtime

__all__ = ["add_client_commands"]

url_argument = click.argument("url", metavar="URL")
token_option = click.option("--token-file", required=True, type=click.Path(dir_okay=False), metavar="FILE",
                            help="A file holding your team's token (one line; never put it on the command line).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the site's JSON answer.")


def _client(url: str, token_file: str) -> Client:
    try:
        return Client.from_token_file(url, token_file)
    except ClientError as exc:
        raise click.ClickException(str(exc)) from None


def _call(func: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return func(*args, **kwargs)
    except ClientError as exc:
        raise click.ClickException(str(exc)) from None


@click.command("submit")
@url_argument
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@token_option
@click.option("--runtime", default=None, help="The contest's runtime (default: from the file's suffix: bot.py -> python).")
@click.option("--no-wait", is_flag=True, help="Return once uploaded, without waiting for the build and the check.")
def submit_command(url: str, file: str, token_file: str, runtime: str | None, no_wait: bool) -> None:
    """Upload FILE (the runtime's entry file, or a .zip/.tar.gz holding it) to the contest at URL,
    wait for its build and conformance games, print their logs; exit 1 if it failed. Example:

    \b
        harness contest submit https://contest.example.org --token-file ~/.team-token bot.py
    """
    path = Path(file)
    runtime = runtime or guess_runtime(path)
    if runtime is None:
        raise click.BadParameter(f"cannot tell the runtime of {path.name}: give --runtime (e.g. python, cpp)",
                                 param_hint="'--runtime'")
    client = _client(url, token_file)
    answer = _call(client.submit, path, runtime)
    echo(f"uploaded: version s{answer['id']} ({runtime}), {answer['status']}")
    if no_wait:
        return
    state = _call(client.wait, answer["id"])
    for key in ("build_log", "check_log"):
        if state.get(key):
            echo(f"-- {key.replace('_', ' ')} --\n{state[key].rstrip()}")
    echo(f"version s{answer['id']}: {state['status']}" + (" (your current version)" if state.get("current") else ""))
    if state["status"] not in ("active", "replaced"):
        sys.exit(1)


@click.command("games")
@url_argument
@token_option
@click.option("--result", type=click.Choice(["won", "lost"]), default=None, help="Only the games won or lost.")
@click.option("--players", type=click.IntRange(min=1), default=None, help="Only games at this table size.")
@click.option("--opponent", default=None, metavar="TEAM", help="Only games with this team at the table.")
@click.option("--limit", type=click.IntRange(1, 500), default=50, show_default=True)
@json_option
def games_command(url: str, token_file: str, result: str | None, players: int | None, opponent: str | None,
                  limit: int, as_json: bool) -> None:
    """Your team's latest games in the contest at URL, one a line: id, won/lost, the seats, and
    the path of each of your seats' download (for `harness contest download`)."""
    games = _call(_client(url, token_file).get_json, "/api/games", **{"result": result, "players": players,
                                                                        "opponent": opponent, "limit": limit})
    if as_json:
        echo(json.dumps(games, indent=1))
        return
    for g in games:
        seats = ", ".join(f"{s['team']}@{s['version']} ({s['rank'] + 1})" for s in g["seats"])
        echo(f"{g['id']}  {'won ' if g['won'] else 'lost'}  {seats}  {' '.join(g['downloads'])}")
    if not games:
        echo("no games" + (" matching the filters" if result or players or opponent else " yet"), err=True)


@click.command("violations")
@url_argument
@token_option
@json_option
def violations_command(url: str, token_file: str, as_json: bool) -> None:
    """Your team's violations in the contest at URL, grouped by kind and message, with the newest of each."""
    data = _call(_client(url, token_file).get_json, "/api/violations")
    if as_json:
        echo(json.dumps(data, indent=1))
        return
    for g in data["groups"]:
        echo(f"{g['count']:>5}x {g['kind']}: {g['newest']['detail']}  (versions {', '.join(g['versions'])}; newest "
             f"#{g['newest']['id']} in {g['newest']['game_id']}: {g['newest']['download']})")
    if not data["groups"]:
        echo("no violations", err=True)


@click.command("download")
@url_argument
@token_option
@click.option("--game", "game_id", default=None, help="A game id (with --seat).")
@click.option("--seat", type=click.IntRange(min=0), default=None, help="Your seat in --game.")
@click.option("--violation", "violation_id", type=click.IntRange(min=1), default=None, help="A violation's id.")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False), help="The file to write.")
def download_command(url: str, token_file: str, game_id: str | None, seat: int | None, violation_id: int | None,
                     output: str | None) -> None:
    """Download a game from your seat (--game G --seat S) or a violation (--violation ID) as a
    file for `harness reproduce FILE --command CMD`."""
    if violation_id is not None and game_id is None:
        path, name = f"/api/violations/{violation_id}", f"violation-{violation_id}.json"
    elif game_id is not None and seat is not None and violation_id is None:
        path, name = f"/api/games/{game_id}/seat/{seat}", f"game-{game_id}-seat{seat}.json"
    else:
        raise click.UsageError("give --violation ID, or --game G and --seat S")
    out = _call(_client(url, token_file).download, path, Path(output or name))
    echo(f"saved {out}; replay it: harness reproduce {out} --command \"python3 bot.py\"")


@click.command("challenge")
@url_argument
@token_option
@click.option("--against", required=True, metavar="TEAM[,TEAM...]", help="The teams to play (one table with you).")
@click.option("--games", type=click.IntRange(min=1), default=10, show_default=True)
def challenge_command(url: str, token_file: str, against: str, games: int) -> None:
    """Ask for GAMES unranked games of your current version against the teams' current versions,
    played by the ladder between its rounds; `harness contest challenges` shows the results."""
    answer = _call(_client(url, token_file).post_form, "/api/challenges", {"opponents": against, "games": str(games)})
    echo(f"challenge {answer['id']}: {games} games against {against}, pending")


@click.command("challenges")
@url_argument
@token_option
def challenges_command(url: str, token_file: str) -> None:
    """Your team's challenges and their results (ahead / behind / level against each team)."""
    for c in _call(_client(url, token_file).get_json, "/api/challenges"):
        versus = "; ".join(f"{name}: {v[0]} / {v[1]} / {v[2]}" for name, v in c["versus"].items())
        echo(f"#{c['id']} {', '.join(c['seats'])}: {c['played']}/{c['games']} played ({c['status']}); {versus}")


def add_client_commands(group: click.Group) -> None:
    """Add the client commands to ``harness contest``."""
    for command in (submit_command, games_command, violations_command, download_command, challenge_command,
                    challenges_command):
        group.add_command(command)
