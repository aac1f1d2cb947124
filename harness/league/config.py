"""League configs: read a YAML file, check every key, and resolve bots to commands and versions.

A broken config is refused before anything runs with :class:`ConfigError`, one line that names
the file, the key and what is allowed, e.g.::

    leagues/x.yaml: bots[2].command: ../bots/nope.py not found (relative to leagues)
    leagues/x.yaml: players: 5 is not allowed for dominoes (allowed: 2, 3, 4)

Path rules (docs/leagues.md): a bot runs in its ``cwd``, which is relative to the config file's
directory and defaults to that directory, so the paths in its command are relative to it too.
The ``store`` path is relative to the config file's directory (default ``runs/<name>.sqlite`` beside it).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.games import GAMES, GameLoadError, InvalidOptions
from harness.league.versions import TooManyFiles, content_version, directory_files, version_dir
from harness.play.limits import MAX_IDLE_BOTS, TimeControls

__all__ = ["LeagueError", "ConfigError", "LeagueConfig", "BotEntry", "RatingParams", "ScheduleSpec", "load_config",
           "parse_config", "TOP_KEYS", "TIME_KEYS", "LIMIT_KEYS", "RATING_DEFAULTS", "SCHEDULE_KINDS", "default_workers",
           "games_per_round", "LOG_DEFAULTS"]


class LeagueError(ValueError):
    """A league that cannot be played or read as asked (its config, its store, its cluster); the
    message is one line saying what and how to fix it."""


class ConfigError(LeagueError):
    """A league config that cannot be used; the message is one line naming the file and the key."""


NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: Words of a command that are taken as file paths (and must exist) even without a slash.
SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".sh", ".lua", ".jar", ".php", ".R")
PYTHON_RE = re.compile(r"^python(3(\.\d+)?)?$")

TOP_KEYS = ("name", "game", "options", "players", "bots", "rounds", "time", "limits", "policy", "strikes",
            "rating", "seed", "workers", "store", "executor", "idle_bots", "spare_bots", "schedule",
            "logs", "deals")
#: ``deals``: fresh deals for every version (default), or the same deals for a bot's versions.
DEAL_RULES = ("per_version", "per_bot")
BOT_KEYS = ("name", "command", "cwd", "version")
#: The largest schedule a league may have (games over all rounds): 100 million games take ~10 GB
#: of store before any log, and hours to plan and to rate.
MAX_GAMES = 100_000_000
#: The time control keys and their defaults (the referee's).
TIME_KEYS: dict[str, int] = dataclasses.asdict(TimeControls())
#: Resource limit keys passed through to harness.play.botproc.ResourceLimits (its defaults apply when unset).
LIMIT_KEYS = ("memory_mb", "cpu_seconds", "processes", "open_files", "stderr_bytes", "max_line_bytes",
              "max_json_depth", "sandbox", "scratch_mb")
#: Limits that ``null`` switches off (the others always apply).
NULLABLE_LIMITS = ("memory_mb", "cpu_seconds", "processes", "open_files")
#: The longest file name (one path component) Linux file systems accept, in bytes.
NAME_MAX = 255
RATING_DEFAULTS = {"mu": 25.0, "sigma": 25.0 / 3, "beta": 25.0 / 6, "tau": 0.0, "draw_probability": 0.10}
POLICIES = ("forfeit", "strikes")
SCHEDULE_KINDS = ("round_robin", "adaptive")
SCHEDULE_KEYS = ("kind", "games", "until")
UNTIL_KEYS = ("top", "confidence")
DEFAULT_STRIKES = 3
#: ``logs``: the most bytes one game's log keeps (before compression; an honest game takes 0.1-0.4
#: MB), and the disk the league's logs file may use before only games with violations keep theirs
LOG_DEFAULTS = {"game_kb": 4096, "budget_mb": 4096}


def games_per_round(n_bots: int, sizes: Sequence[int]) -> int:
    """How many games one round has: every seat order of every table, sum over table sizes k of n! / (n - k)!."""
    return sum(math.perm(n_bots, k) for k in sizes)


def default_workers() -> int:
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class RatingParams:
    """TrueSkill environment parameters."""

    mu: float = RATING_DEFAULTS["mu"]
    sigma: float = RATING_DEFAULTS["sigma"]
    beta: float = RATING_DEFAULTS["beta"]
    tau: float = RATING_DEFAULTS["tau"]
    draw_probability: float = RATING_DEFAULTS["draw_probability"]

    def as_dict(self) -> dict[str, float]:
        return {"mu": self.mu, "sigma": self.sigma, "beta": self.beta, "tau": self.tau,
                "draw_probability": self.draw_probability}


@dataclass(frozen=True)
class ScheduleSpec:
    """The ``schedule`` key: the whole round robin (default), or adaptive rounds chosen as results come in."""

    kind: str = "round_robin"
    #: adaptive: stop once this many games are scheduled and played (None: no budget)
    games: int | None = None
    #: adaptive: stop once each adjacent pair of the top ``top`` (and the next bot) is ordered
    #: with ``confidence`` by the table's P(>next) (None: no question)
    top: int | None = None
    confidence: float | None = None

    @property
    def adaptive(self) -> bool:
        return self.kind == "adaptive"


@dataclass(frozen=True)
class BotEntry:
    """One bot of a league, resolved: its command, absolute working directory and version."""

    name: str
    command: tuple[str, ...]
    cwd: str
    version: str
    #: Absolute paths of the files whose content makes the version: every file of the bot's
    #: directory and those its command names (:mod:`harness.league.versions`).
    files: tuple[str, ...] = ()
    #: The directory a sandboxed bot sees as its own (its ``cwd`` when the config sets one;
    #: None: only the directory of its program, :func:`harness.play.sandbox.program_dir`).
    sandbox_dir: str | None = None

    @property
    def label(self) -> str:
        """``name@version``: how one version of a bot is named in tables and listings."""
        return f"{self.name}@{self.version}"


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
    #: most bot processes kept idle per worker between games (least recently used stopped first)
    idle_bots: int = MAX_IDLE_BOTS
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
# checking helpers: each raises ConfigError naming the file and key


class _Checker:
    def __init__(self, path: str, strict: bool = True) -> None:
        self.path = path
        #: False for commands that only read results: bots need not be runnable on this machine.
        self.strict = strict

    def fail(self, key: str, message: str) -> ConfigError:
        where = f"{self.path}: {key}: " if key else f"{self.path}: "
        return ConfigError(where + message)

    def mapping(self, value: Any, key: str, allowed: tuple[str, ...] | Mapping[str, Any]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a mapping of {', '.join(allowed)}, got {_show(value)}")
        for k in value:
            if not isinstance(k, str) or k not in allowed:
                raise self.fail(f"{key}.{k}" if key else str(k), _unknown(str(k), allowed))
        return value

    def integer(self, value: Any, key: str, lo: int | None = None, hi: int | None = None) -> int:
        if type(value) is not int or (lo is not None and value < lo) or (hi is not None and value > hi):
            if lo is not None and hi is not None:
                allowed = f"an integer from {lo} to {hi}"
            elif lo is not None:
                allowed = f"an integer >= {lo}"
            else:
                allowed = "an integer"
            raise self.fail(key, f"{_show(value)} is not allowed (allowed: {allowed})")
        return value

    def number(self, value: Any, key: str, ok: Callable[[float], bool], allowed: str) -> float:
        if type(value) not in (int, float) or not ok(float(value)):
            raise self.fail(key, f"{_show(value)} is not allowed (allowed: {allowed})")
        return float(value)

    def name(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not NAME_RE.match(value):
            raise self.fail(key, f"{_show(value)} is not allowed (allowed: letters, digits, '_', '.', '-', "
                                 f"starting with a letter or digit)")
        return value


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null (empty)"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return repr(value) if isinstance(value, str) else str(value)


#: Names people write for a key, by meaning (spelling alone would take `cmd` for `cwd`).
_SYNONYMS = {"cmd": "command", "exec": "command", "run": "command", "argv": "command", "dir": "cwd",
             "workdir": "cwd", "directory": "cwd", "player": "players", "seats": "players", "round": "rounds"}


def _unknown(key: str, allowed: tuple[str, ...] | Mapping[str, Any]) -> str:
    names = list(allowed)
    close = [n for n in [_SYNONYMS.get(key.lower(), "")] + difflib.get_close_matches(key, names, n=1) if n in names]
    close = list(dict.fromkeys(close))  # the meaning first, then the spelling, each once
    hint = f" (did you mean {' or '.join(repr(n) for n in close)}?)" if close else ""
    return f"unknown key{hint}; allowed keys: {', '.join(names)}"


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
    c = _Checker(shown, strict)
    if not isinstance(data, dict):
        raise c.fail("", f"expected a mapping of keys ({', '.join(TOP_KEYS)}), got {_show(data)}")
    c.mapping(data, "", TOP_KEYS)
    name = c.name(data.get("name", Path(shown).stem), "name")

    if "game" not in data:
        raise c.fail("game", f"missing (allowed: {', '.join(GAMES)})")
    game_name = data["game"]
    if not isinstance(game_name, str) or game_name not in list(GAMES):
        close = difflib.get_close_matches(str(game_name), list(GAMES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise c.fail("game", f"{_show(game_name)} is not a game{hint} (allowed: {', '.join(GAMES)})")
    try:
        game = GAMES[game_name]
    except GameLoadError as exc:
        raise c.fail("game", str(exc)) from None

    options = _check_options(c, game, data.get("options"))
    bots = _check_bots(c, data.get("bots"), base_dir)
    table_sizes = _check_table_sizes(c, game, data.get("players", game.min_players), len(bots))

    schedule = _check_schedule(c, data.get("schedule"), len(bots))
    if schedule.adaptive and "rounds" in data:
        raise c.fail("rounds", "only used with the round-robin schedule (this league's schedule is adaptive: "
                               "its budget is schedule.games)")
    n_rounds = c.integer(data.get("rounds", 1), "rounds", 1)
    if rounds is not None and schedule.adaptive:
        raise c.fail("--rounds", "only used with the round-robin schedule (this league's schedule is adaptive: "
                                 "its budget is schedule.games)")
    if rounds is not None:
        n_rounds = c.integer(rounds, "--rounds", 1)
    per_round = games_per_round(len(bots), table_sizes)
    if not schedule.adaptive and per_round * n_rounds > MAX_GAMES:
        raise c.fail("rounds" if rounds is None else "--rounds",
                     f"{n_rounds} rounds of {per_round:,} games make {per_round * n_rounds:,} games, more than "
                     f"the {MAX_GAMES:,} a league may hold (allowed: at most {max(1, MAX_GAMES // per_round):,} "
                     f"rounds with these bots and table sizes)")

    time_cfg = c.mapping(data.get("time"), "time", TIME_KEYS)
    time = {k: c.integer(time_cfg.get(k, d), f"time.{k}", 0 if k in ("bank_ms", "jitter_ms") else 1)
            for k, d in TIME_KEYS.items()}

    limits = _check_limits(c, data.get("limits"))
    if limits.get("sandbox") is not None and c.strict:
        _check_own_dirs(c, bots)

    policy = data.get("policy", "forfeit")
    if policy not in POLICIES:
        raise c.fail("policy", f"{_show(policy)} is not allowed (allowed: {', '.join(POLICIES)})")
    if "strikes" in data and policy != "strikes":
        raise c.fail("strikes", "only used with 'policy: strikes' (the policy here is forfeit)")
    strikes = c.integer(data.get("strikes", DEFAULT_STRIKES), "strikes", 1) if policy == "strikes" else 0

    rating_cfg = c.mapping(data.get("rating"), "rating", RATING_DEFAULTS)
    rating = RatingParams(
        mu=c.number(rating_cfg.get("mu", RATING_DEFAULTS["mu"]), "rating.mu", lambda v: True, "a number"),
        sigma=c.number(rating_cfg.get("sigma", RATING_DEFAULTS["sigma"]), "rating.sigma", lambda v: v > 0,
                       "a number > 0"),
        beta=c.number(rating_cfg.get("beta", RATING_DEFAULTS["beta"]), "rating.beta", lambda v: v > 0,
                      "a number > 0"),
        tau=c.number(rating_cfg.get("tau", RATING_DEFAULTS["tau"]), "rating.tau", lambda v: v >= 0,
                     "a number >= 0"),
        draw_probability=c.number(rating_cfg.get("draw_probability", RATING_DEFAULTS["draw_probability"]),
                                  "rating.draw_probability", lambda v: 0 < v < 1,
                                  "a number between 0 and 1, exclusive"),
    )

    seed = c.integer(data.get("seed", 0), "seed", 0, 2**63 - 1)

    n_workers = data.get("workers")
    n_workers = default_workers() if n_workers in (None, "auto") else c.integer(n_workers, "workers", 1)
    if workers is not None:
        n_workers = c.integer(workers, "--workers", 1)

    logs_cfg = c.mapping(data.get("logs"), "logs", LOG_DEFAULTS)
    # budget_mb 0: only games with violations keep their logs, from the first game on
    logs = {k: c.integer(logs_cfg.get(k, d), f"logs.{k}", 1 if k == "game_kb" else 0) for k, d in LOG_DEFAULTS.items()}

    store = data.get("store", f"runs/{name}.sqlite")
    if not isinstance(store, str) or not store.strip():
        raise c.fail("store", f"{_show(store)} is not allowed (allowed: a file path, relative to the config "
                              f"file's directory)")
    # Relative to the config file, like the bots' paths: every command finds the same store from
    # any current directory (it used to be the current directory, and `cd leagues && harness
    # violations x.yaml` found nothing and advised a run that started a second, empty store).
    store = str((base_dir / store).resolve())
    deals = data.get("deals", "per_version")
    if deals not in DEAL_RULES:
        raise c.fail("deals", f"{_show(deals)} is not allowed (allowed: {', '.join(DEAL_RULES)})")
    return LeagueConfig(path=shown, name=name, game=game_name, options=options, table_sizes=table_sizes, bots=bots,
                        rounds=n_rounds, time=time, limits=limits, policy=policy, strikes=strikes,
                        rating=rating, seed=seed, workers=n_workers, store=store,
                        executor=_check_executor(c, data.get("executor")),
                        idle_bots=c.integer(data.get("idle_bots", MAX_IDLE_BOTS), "idle_bots", 0),
                        spare_bots=c.integer(data.get("spare_bots", 0), "spare_bots", 0), schedule=schedule,
                        logs=logs, deals=deals)


def _check_schedule(c: _Checker, value: Any, n_bots: int) -> ScheduleSpec:
    """``schedule``: ``round_robin`` (default), ``adaptive``, or ``{kind, games, until: {top, confidence}}``."""
    if value is None or isinstance(value, str):
        value = {"kind": value or "round_robin"}
    cfg = c.mapping(value, "schedule", SCHEDULE_KEYS)
    kind = cfg.get("kind", "round_robin")
    if kind not in SCHEDULE_KINDS:
        close = difflib.get_close_matches(str(kind), SCHEDULE_KINDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise c.fail("schedule.kind", f"{_show(kind)} is not allowed{hint} (allowed: {', '.join(SCHEDULE_KINDS)})")
    if kind == "round_robin":
        for key in ("games", "until"):
            if key in cfg:
                raise c.fail(f"schedule.{key}", "only used with 'kind: adaptive' (a round robin plays its "
                                                "rounds: the 'rounds' key)")
        return ScheduleSpec()
    games = c.integer(cfg["games"], "schedule.games", 1) if cfg.get("games") is not None else None
    top = confidence = None
    if cfg.get("until") is not None:
        until = c.mapping(cfg["until"], "schedule.until", UNTIL_KEYS)
        for key in UNTIL_KEYS:
            if key not in until:
                raise c.fail(f"schedule.until.{key}", "missing (e.g. until: {top: 10, confidence: 0.95})")
        top = c.integer(until["top"], "schedule.until.top", 1)
        if top >= n_bots:
            raise c.fail("schedule.until.top", f"{top} needs at least {top + 1} bots (the league has {n_bots}: "
                                               f"the top {top} is ordered against the next one)")
        confidence = c.number(until["confidence"], "schedule.until.confidence", lambda v: 0.5 < v < 1,
                              "a number between 0.5 and 1, exclusive, e.g. 0.95")
    return ScheduleSpec(kind="adaptive", games=games, top=top, confidence=confidence)


def _check_executor(c: _Checker, value: Any) -> str | None:
    """``executor``: ``local`` (default) or ``{dask: ADDRESS}`` (``tcp://host:8786`` or ``local:N``)."""
    if value in (None, "local"):
        return None
    if isinstance(value, dict):
        cfg = c.mapping(value, "executor", ("dask",))
        address = cfg.get("dask")
        if isinstance(address, str) and address.strip():
            return address.strip()
        raise c.fail("executor.dask", f"{_show(address)} is not allowed (allowed: a scheduler address such as "
                                      f"tcp://10.0.0.1:8786, or local:N for N workers on this machine)")
    raise c.fail("executor", f"{_show(value)} is not allowed (allowed: local, or {{dask: ADDRESS}})")


def _check_options(c: _Checker, game: Any, value: Any) -> dict[str, Any]:
    known = {o.name: o for o in game.option_list}
    options = c.mapping(value, "options", known)
    for key, val in options.items():
        try:
            known[key].validate(val)
        except InvalidOptions:
            raise c.fail(f"options.{key}", f"{_show(val)} is not allowed for {game.name} "
                                           f"(allowed: {known[key].describe_allowed()})") from None
    try:
        return game.validate_options(options)
    except InvalidOptions as exc:  # a cross-option check of the engine
        raise c.fail("options", str(exc)) from None


def _check_table_sizes(c: _Checker, game: Any, value: Any, n_bots: int) -> tuple[int, ...]:
    sizes = value if isinstance(value, list) else [value]
    allowed = ", ".join(str(n) for n in range(game.min_players, game.max_players + 1))
    if not sizes:
        raise c.fail("players", f"empty list (allowed: {allowed}, or a list of them)")
    for n in sizes:
        if type(n) is not int or not game.min_players <= n <= game.max_players:
            raise c.fail("players", f"{_show(n)} is not allowed for {game.name} (allowed: {allowed})")
        if n > n_bots:
            raise c.fail("players", f"tables of {n} need at least {n} bots (the league has {n_bots})")
    if len(set(sizes)) != len(sizes):
        raise c.fail("players", f"{sizes} repeats a table size")
    return tuple(sorted(sizes))


def _check_limits(c: _Checker, value: Any) -> dict[str, Any]:
    limits = c.mapping(value, "limits", LIMIT_KEYS)
    out: dict[str, Any] = {}
    for key, val in limits.items():
        if key == "sandbox":
            if val in (None, "none", False):
                out[key] = None
            elif val == "auto":
                out[key] = "auto"
            elif val == "bwrap":
                if c.strict and shutil.which("bwrap") is None:
                    raise c.fail("limits.sandbox", "bwrap (bubblewrap) is not installed: install it "
                                                   "(apt-get install bubblewrap) or remove the key")
                out[key] = "bwrap"
            else:
                raise c.fail("limits.sandbox", f"{_show(val)} is not allowed (allowed: auto, bwrap, none)")
        elif val is None and key in NULLABLE_LIMITS:
            out[key] = None  # no limit
        else:
            out[key] = c.integer(val, f"limits.{key}", 1)
    out.setdefault("sandbox", "auto")  # bubblewrap where it works here, else none with a warning
    return out


def _check_bots(c: _Checker, value: Any, base_dir: Path) -> tuple[BotEntry, ...]:
    if not isinstance(value, list) or len(value) < 2:
        got = f"{len(value)} bot" + ("" if len(value) == 1 else "s") if isinstance(value, list) else _show(value)
        raise c.fail("bots", f"a list of at least 2 bots is needed (each with name and command), got {got}")
    entries = []
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        key = f"bots[{i}]"
        if not isinstance(item, dict):
            raise c.fail(key, f"expected a mapping with name and command, got {_show(item)}")
        c.mapping(item, key, BOT_KEYS)
        if "name" not in item:
            raise c.fail(f"{key}.name", "missing (each bot needs a name and a command)")
        name = c.name(item["name"], f"{key}.name")
        if name in seen:
            raise c.fail(f"{key}.name", f"{name!r} is already the name of bots[{seen[name]}]")
        seen[name] = i
        cwd = base_dir
        if item.get("cwd") is not None:
            if not isinstance(item["cwd"], str):
                raise c.fail(f"{key}.cwd", f"{_show(item['cwd'])} is not a directory path")
            cwd = (base_dir / item["cwd"]).resolve()
            if c.strict and not cwd.is_dir():
                raise c.fail(f"{key}.cwd", f"{item['cwd']} is not a directory (relative to {_rel(base_dir)})")
        command = _check_command(c, item.get("command"), f"{key}.command", cwd)
        files, root = _command_files(command, cwd), None
        runnable = all(_exists(cwd / w) for w in command if looks_like_path(w))
        declared = str(cwd) if item.get("cwd") is not None else None
        auto = str(item.get("version", "auto")) == "auto"  # a fixed label needs no hash (a contest's s<id>)
        folder = version_dir(command, cwd, declared, base_dir) if runnable and auto else None
        if folder is not None:  # every file of its directory: a rebuild is a new version
            try:
                files, root = tuple(dict.fromkeys(directory_files(folder) + files)), str(folder)
            except TooManyFiles as exc:
                raise c.fail(f"{key}.cwd", str(exc)) from None
        version = item.get("version", "auto")
        if not isinstance(version, (str, int)) or isinstance(version, bool) or not str(version).strip():
            raise c.fail(f"{key}.version", f"{_show(version)} is not allowed (allowed: auto, or a fixed label)")
        version = str(version)
        if version == "auto":
            version = content_version(command, files, root) if runnable else "unavailable"
        elif "@" in version or any(ch.isspace() for ch in version):
            raise c.fail(f"{key}.version", f"{version!r} is not allowed (no spaces or '@')")
        entries.append(BotEntry(name=name, command=command, cwd=str(cwd), version=version, files=files,
                                sandbox_dir=declared))
    return tuple(entries)


def _check_own_dirs(c: _Checker, bots: tuple[BotEntry, ...]) -> None:
    """Refuse a bot whose command names a file outside its own directory: sandboxed, it sees only
    that directory (its ``cwd``, else its program's), never what a word of its command names."""
    from harness.play.limits import resolve_command
    from harness.play.sandbox import outside_word, own_dirs

    for i, bot in enumerate(bots):
        argv = resolve_command(bot.command)
        own = own_dirs(argv, bot.cwd, bot.sandbox_dir)
        word = outside_word(argv, bot.cwd, own)
        if word is not None:
            where = (f"is outside its directory {' and '.join(_rel(Path(d)) for d in own)}" if own else
                     "names a file, and the bot has no directory of its own (its command names no program file)")
            raise c.fail(f"bots[{i}].command", f"{word} {where}: a sandboxed bot sees only its own directory "
                                               f"(set cwd to one that holds every file it names, or move the "
                                               f"file there)")


def _rel(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("../../..") else str(path)


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; False for what cannot be a path (too long, a NUL byte...)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def looks_like_path(word: str) -> bool:
    """Whether a command word names a file (has a slash, or a script suffix), not an option."""
    return not word.startswith("-") and ("/" in word or word.endswith(SCRIPT_SUFFIXES))


def _check_command(c: _Checker, value: Any, key: str, cwd: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise c.fail(key, f"cannot split {value!r} into words: {exc}") from None
    elif isinstance(value, list) and all(isinstance(w, (str, int, float)) and not isinstance(w, bool) for w in value):
        words = [str(w) for w in value]
    else:
        raise c.fail(key, f"expected a command line (a string, or a list of words), got {_show(value)}")
    if not words:
        raise c.fail(key, "empty command")
    exe = words[0]
    if not c.strict:
        return tuple(words)
    if "/" not in exe and not PYTHON_RE.match(exe) and shutil.which(exe) is None:
        raise c.fail(key, f"{exe!r} not found on PATH")
    for i, word in enumerate(words):
        if not looks_like_path(word):
            continue
        longest = max(len(part.encode()) for part in word.split("/"))
        if longest > NAME_MAX:
            shown = word if len(word) <= 60 else word[:57] + "..."
            raise c.fail(key, f"{shown!r} names a file of {longest} bytes, longer than a file name may be "
                              f"({NAME_MAX} bytes)")
        target = cwd / word
        if not _exists(target):
            hint = ""
            if Path(word).exists():  # relative to the current directory instead: say how to write it
                hint = f"; did you mean {os.path.relpath(Path(word).resolve(), cwd)}?"
            raise c.fail(key, f"{word} not found (relative to {_rel(cwd)}{hint})")
        if i == 0 and not (target.is_file() and os.access(target, os.X_OK)):
            raise c.fail(key, f"{word} is not an executable file (chmod +x it, or start the command with "
                              f"its interpreter, e.g. python3 {word})")
    return tuple(words)


def _command_files(command: tuple[str, ...], cwd: Path) -> tuple[str, ...]:
    files = []
    for word in command:
        if word.startswith("-"):
            continue
        target = cwd / word
        if ("/" in word or word.endswith(SCRIPT_SUFFIXES) or word != command[0]) and _is_file(target):
            files.append(str(target.resolve()))
    return tuple(files)
