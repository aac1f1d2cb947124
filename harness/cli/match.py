"""`harness match`: is my new version better? A against B on duplicate sets, with an SPRT."""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from harness.cli.common import (
    GAME,
    checked_options,
    dask_option,
    echo,
    option_option,
    sandbox_option,
    time_controls,
    time_options,
)
from harness.cli.play import parse_bot
from harness.games import Game

#: deals a match hands out together (blocked by seat order, fewer bot starts; small: the SPRT waits for whole sets)
MATCH_DEAL_WINDOW = 4


def _sprt_option(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    from harness.report.sprt import parse_sprt

    try:
        return parse_sprt(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _format(summary: dict[str, Any]) -> list[str]:
    elo = summary["elo"]
    low, high = summary["elo_ci"]
    at = "at the decision: " if summary["verdict"] != "none" else ""
    lines = [f"{at}games: {summary['games']} in {summary['sets']} duplicate sets of {summary['set_size']}",
             f"A's score against B: {summary['score']:.3f}",
             f"Elo difference (A - B): {elo:+.1f}" + ("" if low is None else f", 95% interval [{low:+.1f}, {high:+.1f}]"),
             f"likelihood of superiority (A better): {summary['los']:.3f}",
             "set scores (A's share of the set): " + ", ".join(f"{k}: {v}" for k, v in summary["set_scores"].items())]
    sides = summary.get("violations")
    if sides is not None:
        lines.append(f"violations (all games played): A {sides['A']['violations']}, B {sides['B']['violations']}"
                     + "".join(f"; {side} forfeited {sides[side]['forfeits']} games" for side in ("A", "B")
                               if sides[side]["forfeits"])
                     + ("  (harness violations CONFIG shows them)" if sides["A"]["violations"]
                        or sides["B"]["violations"] else ""))
    if "llr" in summary:
        lower, upper = summary["llr_bounds"]
        sprt = summary["sprt"]
        head = f"SPRT elo0={sprt['elo0']:g} elo1={sprt['elo1']:g} alpha={sprt['alpha']:g} beta={sprt['beta']:g}: "
        if summary["verdict"] == "H1":
            lines.append(head + f"LLR {summary['llr']:.2f} reached the upper bound {upper:.2f} (accept H1) "
                         f"at set {summary['sets']}")
        elif summary["verdict"] == "H0":
            lines.append(head + f"LLR {summary['llr']:.2f} reached the lower bound {lower:.2f} (accept H0) "
                         f"at set {summary['sets']}")
        else:
            lines.append(head + f"LLR {summary['llr']:.2f}, between the bounds {lower:.2f} (H0) and {upper:.2f} (H1)")
        lines.append({"H1": f"verdict: H1 accepted: A is better than B by at least {sprt['elo1']:g} Elo",
                      "H0": f"verdict: H0 accepted: A is not better than B by {sprt['elo1']:g} Elo",
                      "none": "verdict: none yet (the games ran out first)"}[summary["verdict"]])
    late = summary.get("after_decision")
    if late and late["games"]:
        sets = late["sets"]
        lines.append(f"after the decision: {late['games']} more games finished (they were in flight)"
                     + (f", {sets} complete set{'' if sets == 1 else 's'}, A's score there {late['score']:.3f}"
                        if sets else "") + "; not part of the verdict")
    if summary.get("waiting_games"):
        lines.append(f"not read by the test yet: {summary['waiting_games']} games of sets that are unfinished "
                     f"or behind an unfinished one (run the same command again to finish them)")
    return lines


@click.command()
@click.argument("game", type=GAME)
@click.option("--bot", "bots", multiple=True, required=True, metavar="CMD",
              help="Give it twice: A (e.g. your new version), then B (e.g. the old one).")
@click.option("--opponent", "opponents", multiple=True, metavar="CMD",
              help="A fixed opponent filling the table (repeatable): Epizodiak needs one, Dominoes "
                   "may take one or two. Each set plays every seat order of A, B and them.")
@click.option("--games", "n_games", type=click.IntRange(min=1), default=1000, show_default=True,
              help="The most games to play (rounded up to whole duplicate sets).")
@click.option("--sprt", "sprt", default="elo0=0,elo1=10,alpha=0.05,beta=0.05", show_default=True,
              callback=_sprt_option, metavar="elo0=..,elo1=..,alpha=..,beta=..",
              help="The sequential test: stop when it accepts H0 (A is not elo1 better) or H1.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Games in parallel  [default: one per core]")
@click.option("--seed", type=int, default=0, show_default=True, help="The match's seed (part of its id).")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default="runs", show_default=True,
              help="Where the match's config and store go (relative to the current directory).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress while it plays.")
@option_option
@time_options
@sandbox_option
@dask_option
def match(game: Game, bots: tuple[str, ...], opponents: tuple[str, ...], n_games: int, sprt: Any, workers: int | None,
          seed: int, directory: str, fmt: str, quiet: bool, options: dict[str, Any], init_ms: int | None, move_ms: int | None,
          bank_ms: int | None, sandbox: str | None, dask: str | None) -> None:
    """Is A better than B at GAME? Play them on duplicate sets until a sequential test decides.

    A set is one deal played in every seat order of A, B and the --opponent bots (2 games for
    two players, 6 for three, 24 for four); a set's score (A's mean score against B: ahead 1,
    level 1/2, behind 0) is the unit of the statistics, since its games share the deal's luck.
    Prints games, A's score, the Elo difference with its 95% interval, the likelihood of
    superiority, the distribution of set scores (pentanomial for two players) and the SPRT's
    LLR with the bound it crossed, and each side's violations. The verdict and its figures are
    those of the set that decided (sets are read in schedule order); games that finish after it
    (in flight when it decided) are reported apart, and the games not started are dropped, so
    the match's league has nothing left to play. The match is stored under --dir and resumes
    when run again (a decided match prints its result without playing); with
    --dask its games are played on a Dask cluster (checked after each batch of games). Exit
    status: 0, also when H0 is accepted or the games ran out. Example:

    \b
        harness match crisps --bot "python3 mybot_v2.py" --bot "python3 mybot_v1.py" --move-ms 100
    """
    from harness.cli.league import ConfigProblem
    from harness.league.config import LeagueError
    from harness.league.game_sources import StoreSource
    from harness.league.match import MatchSpec, MatchState, match_config
    from harness.league.runner import LeagueInterrupted, RunHooks, RunOptions, run_league
    from harness.league.store import LeagueStore
    from harness.report.sprt import match_summary

    if len(bots) != 2:
        raise click.BadParameter(f"give exactly two bots, A then B (got {len(bots)})", param_hint="'--bot'")
    for command in (*bots, *opponents):
        parse_bot(command, param_hint="'--bot'" if command in bots else "'--opponent'")
    spec = MatchSpec(game=game.name, a=bots[0], b=bots[1], opponents=tuple(opponents),
                     options=checked_options(game, options), seed=seed)
    if not game.min_players <= spec.players <= game.max_players:
        need = game.min_players - 2
        raise click.BadParameter(f"{game.name} is played by {game.min_players}-{game.max_players}; A and B make 2, so "
                                 f"give {need}{'-' + str(game.max_players - 2) if game.max_players > game.min_players else ''}"
                                 f" --opponent", param_hint="'--opponent'")
    time = asdict(time_controls(init_ms, move_ms, bank_ms))
    cfg = match_config(spec, games=n_games, directory=Path(directory), workers=workers, time=time, sandbox=sandbox)
    state = MatchState(cfg, spec.set_size, lambda scores: match_summary(scores, 0, sprt, spec.set_size)["verdict"])
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        state.load(store)
    if not state.decided:
        progress: bool | str = "none" if quiet or fmt == "json" else ("bar" if sys.stderr.isatty() else "lines")
        with LeagueStore(cfg.store) as reader:
            try:
                # a small window of deals: the SPRT counts whole sets, blocking delays their completion
                ran = run_league(cfg, progress=progress,
                                 options=RunOptions(dask=dask, source=functools.partial(StoreSource,
                                                                                        window=MATCH_DEAL_WINDOW)),
                                 hooks=RunHooks(on_game=lambda seq, outcome: state.on_game(reader, seq, outcome),
                                                should_stop=lambda: state.decided))
                if ran.stop_reason:
                    echo(f"stopped: {ran.stop_reason}; run the same command again to resume", err=True)
            except LeagueInterrupted:
                echo("interrupted: run the same command again to resume", err=True)
            except LeagueError as exc:  # an unreachable cluster, a worker with other bot files...
                raise ConfigProblem(str(exc)) from None
    summary = match_summary(state.scores, state.games, sprt, spec.set_size)
    with LeagueStore(cfg.store) as store:
        if state.decided:
            store.drop_all_pending()  # the match is over: its league has nothing left to play
        summary["violations"] = _sides(store, state.ids(store))
    if state.decided:
        late = match_summary(state.late_scores, state.late_games, None, spec.set_size)
        summary["after_decision"] = {"games": state.late_games, "sets": late["sets"], "score": late["score"]}
    else:
        summary["waiting_games"] = state.waiting_games
    summary["match"] = {"id": spec.match_id, "config": str(Path(directory) / f"{spec.match_id}.yaml"),
                        "a": spec.a, "b": spec.b, "opponents": list(spec.opponents)}
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2))
        return
    for line in _format(summary):
        echo(line)
    echo(f"stored: {summary['match']['config']} (harness violations/replay/table work on it)")


def _sides(store: Any, ids: tuple[int, int]) -> dict[str, dict[str, int]]:
    """Violations and forfeited games of A and B over every game of the match played."""
    stats = store.seat_stats()
    return {side: {"violations": int(stats.get(vid, {}).get("violations", 0) or 0),
                   "forfeits": int(stats.get(vid, {}).get("forfeits", 0) or 0)} for side, vid in zip("AB", ids)}
