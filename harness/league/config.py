"""League configs: read a YAML file, check every key, and resolve bots to commands and versions.

A broken config is refused before anything runs with :class:`ConfigError`, one line that names
the file, the key and what is allowed, e.g.::

    leagues/x.yaml: bots[2].command: ../bots/nope.py not found (relative to leagues)
    leagues/x.yaml: players: 5 is not allowed for dominoes (allowed: 2, 3, 4)

Path rules (docs/leagues.md): a bot runs in its ``cwd``, which is relative to the config file's
directory and defaults to that directory, so the paths in its command are relative to it too.
The ``store`` path is relative to the config file's directory (default ``runs/<name>.sqlite`` beside it).

This module reads the file and checks its top level (name, game, options, players, rounds, seed,
store, deals...); the sections have their own modules: :mod:`harness.league.bot_entries` (``bots``),
:mod:`harness.league.run_settings` (schedule, rounds, time, limits, policy, rating, workers, logs,
store, executor), on the checks of :mod:`harness.league.config_checks`. Their public names are
importable from here too.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.games import GAMES, Game, GameLoadError, InvalidOptions
from harness.league.bot_entries import BotEntry, check_bots, check_own_dirs
from harness.league.config_checks import Checker, ConfigError, LeagueError, show
from harness.league.run_settings import (
    LIMIT_KEYS,
    LOG_DEFAULTS,
    MAX_GAMES,
    RATING_DEFAULTS,
    SCHEDULE_KINDS,
    TIME_KEYS,
    RatingParams,
    ScheduleSpec,
    check_executor,
    check_limits,
    check_logs,
    check_policy,
    check_rating,
    check_rounds,
    check_schedule,
    check_store,
    check_time,
    check_workers,
    default_workers,
    games_per_round,
)

__all__ = ["LeagueError", "ConfigError", "LeagueConfig", "BotEntry", "RatingParams", "ScheduleSpec", "load_config",
           "parse_config", "TOP_KEYS", "TIME_KEYS", "LIMIT_KEYS", "RATING_DEFAULTS", "SCHEDULE_KINDS", "default_workers",
           "games_per_round", "LOG_DEFAULTS", "MAX_GAMES", "StrictBoolLoader", "parse_scalar"]

TOP_KEYS = ("name", "game", "options", "players", "bots", "rounds", "time", "limits", "policy", "strikes",
            "rating", "seed", "workers", "store", "executor", "idle_bots", "spare_bots", "schedule",
            "logs", "deals")
#: ``deals``: fresh deals for every version (default), or the same deals for a bot's versions.
DEAL_RULES = ("per_version", "per_bot")



@dataclass(frozen=True)
class LeagueConfig:
    """A checked league config. Build it with :func:`load_config`."""

    path: str
    name: str
    game: str
    options: dict[str, Any]
    #: the YAML ``players``: the table sizes played (one number, or a list), sorted
    table_sizes: tuple[int, ...]
    bots: tuple[BotEntry, ...]
    rounds: int = 1
    time: dict[str, int] = field(default_factory=lambda: dict(TIME_KEYS))
    limits: dict[str, Any] = field(default_factory=dict)
    policy: str = "forfeit"
    strikes: int = 0
    rating: RatingParams = RatingParams()
    seed: int = 0
    workers: int = 1
    store: str = ""
    #: the YAML ``executor``: None for ``local`` (worker processes here), else the Dask scheduler
    #: address of ``{dask: ADDRESS}`` (``tcp://host:8786`` or ``local:N``)
    executor: str | None = None
    #: most bot processes kept idle per worker between games (least recently used stopped first);
    #: None (the key left out): :func:`harness.league.runner.idle_bound`, sized to the league
    idle_bots: int | None = None
    #: spare processes a worker starts ahead of need for a bot that needed a new one (BotPool.spares)
    spare_bots: int = 0
    #: ``schedule``: round robin, or adaptive (docs/leagues.md)
    schedule: ScheduleSpec = ScheduleSpec()
    #: ``logs``: game_kb (a game's log is cut there, and marked) and budget_mb (the logs file's size
    #: past which only games with violations keep their logs)
    logs: dict[str, int] = field(default_factory=lambda: dict(LOG_DEFAULTS))

    #: ``deals``: per_version (a deal's seed hashes the versions at the table) or per_bot (the names)
    deals: str = "per_version"

    @property
    def deals_per_version(self) -> bool:
        return self.deals == "per_version"

    def bot(self, name: str) -> BotEntry:
        for b in self.bots:
            if b.name == name:
                return b
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# loading


class StrictBoolLoader(yaml.SafeLoader):
    """YAML's safe loader with the booleans the docs promise: ``true`` and ``false`` (also
    ``True``/``TRUE``, ``False``/``FALSE``, as YAML 1.2 has them). YAML 1.1's ``yes``, ``no``,
    ``on``, ``off``, ``y`` and ``n`` stay strings, so ``jacks: yes`` is refused with the allowed
    values instead of silently meaning true."""


StrictBoolLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StrictBoolLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def parse_scalar(text: str) -> Any:
    """One command-line value (``-o KEY=VALUE``) read as the league YAML reads it: numbers,
    ``true``/``false``, ``null``, else the text itself."""
    try:
        return yaml.load(text, Loader=StrictBoolLoader) if text.strip() else ""  # noqa: S506
    except yaml.YAMLError:
        return text


def load_config(path: str | os.PathLike[str], *, rounds: int | None = None, workers: int | None = None,
                strict: bool = True) -> LeagueConfig:
    """Read and check the league config at ``path``; :class:`ConfigError` if anything is wrong.

    ``rounds`` and ``workers`` override the file's values (command-line flags). ``strict=False``
    (for commands that only read results) does not require the bots to be runnable here: a
    missing file or interpreter is no error, and such a bot's version is ``unavailable``.
    """
    shown = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{shown}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}: cannot read: {exc}") from None
    try:
        data = yaml.load(text, Loader=StrictBoolLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise ConfigError(f"{shown}: {where}YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{shown}: YAML error: {exc}") from None
    return parse_config(data, shown, base_dir=Path(path).resolve().parent, rounds=rounds, workers=workers,
                        strict=strict)


def parse_config(data: Any, shown: str, *, base_dir: Path, rounds: int | None = None,
                 workers: int | None = None, strict: bool = True) -> LeagueConfig:
    """Check an already-parsed config mapping (``shown`` is the file name used in messages)."""
    c = Checker(shown, strict)
    if not isinstance(data, dict):
        raise c.fail("", f"expected a mapping of keys ({', '.join(TOP_KEYS)}), got {show(data)}")
    c.mapping(data, "", TOP_KEYS)
    name = c.name(data.get("name", Path(shown).stem), "name")
    game_name, game = _check_game(c, data)

    options = _check_options(c, game, data.get("options"))
    bots = check_bots(c, data.get("bots"), base_dir)
    table_sizes = _check_table_sizes(c, game, data.get("players", game.min_players), len(bots))

    schedule = check_schedule(c, data.get("schedule"), len(bots))
    n_rounds = check_rounds(c, data, rounds, schedule, games_per_round(len(bots), table_sizes))
    time = check_time(c, data.get("time"))

    limits = check_limits(c, data.get("limits"))
    if limits.get("sandbox") is not None and c.strict:
        check_own_dirs(c, bots)

    policy, strikes = check_policy(c, data)
    rating = check_rating(c, data.get("rating"))
    seed = c.integer(data.get("seed", 0), "seed", 0, 2**63 - 1)
    n_workers = check_workers(c, data.get("workers"), workers)
    logs = check_logs(c, data.get("logs"))
    store = check_store(c, data.get("store", f"runs/{name}.sqlite"), base_dir)
    deals = data.get("deals", "per_version")
    if deals not in DEAL_RULES:
        raise c.fail("deals", f"{show(deals)} is not allowed (allowed: {', '.join(DEAL_RULES)})")
    return LeagueConfig(path=shown, name=name, game=game_name, options=options, table_sizes=table_sizes, bots=bots,
                        rounds=n_rounds, time=time, limits=limits, policy=policy, strikes=strikes,
                        rating=rating, seed=seed, workers=n_workers, store=store,
                        executor=check_executor(c, data.get("executor")),
                        idle_bots=None if data.get("idle_bots") is None else c.integer(data["idle_bots"], "idle_bots", 0),
                        spare_bots=c.integer(data.get("spare_bots", 0), "spare_bots", 0), schedule=schedule,
                        logs=logs, deals=deals)


def _check_game(c: Checker, data: dict[str, Any]) -> tuple[str, Any]:
    """``game``: one of GAMES, required: (its name, the loaded game)."""
    if "game" not in data:
        raise c.fail("game", f"missing (allowed: {', '.join(GAMES)})")
    game_name = data["game"]
    if not isinstance(game_name, str) or game_name not in list(GAMES):
        close = difflib.get_close_matches(str(game_name), list(GAMES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise c.fail("game", f"{show(game_name)} is not a game{hint} (allowed: {', '.join(GAMES)})")
    try:
        return game_name, GAMES[game_name]
    except GameLoadError as exc:
        raise c.fail("game", str(exc)) from None


def _check_options(c: Checker, game: Game, value: Any) -> dict[str, Any]:
    known = {o.name: o for o in game.option_list}
    options = c.mapping(value, "options", known)
    for key, val in options.items():
        try:
            known[key].validate(val)
        except InvalidOptions:
            raise c.fail(f"options.{key}", f"{show(val)} is not allowed for {game.name} "
                                           f"(allowed: {known[key].describe_allowed()})") from None
    try:
        return game.validate_options(options)
    except InvalidOptions as exc:  # a cross-option check of the engine
        raise c.fail("options", str(exc)) from None


def _check_table_sizes(c: Checker, game: Any, value: Any, n_bots: int) -> tuple[int, ...]:
    sizes = value if isinstance(value, list) else [value]
    allowed = ", ".join(str(n) for n in range(game.min_players, game.max_players + 1))
    if not sizes:
        raise c.fail("players", f"empty list (allowed: {allowed}, or a list of them)")
    for n in sizes:
        if type(n) is not int or not game.min_players <= n <= game.max_players:
            raise c.fail("players", f"{show(n)} is not allowed for {game.name} (allowed: {allowed})")
        if n > n_bots:
            raise c.fail("players", f"tables of {n} need at least {n} bots (the league has {n_bots})")
    if len(set(sizes)) != len(sizes):
        raise c.fail("players", f"{sizes} repeats a table size")
    return tuple(sorted(sizes))
