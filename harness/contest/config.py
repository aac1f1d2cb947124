"""The contest config, ``DIR/contest.yaml``: written by ``harness contest init``, checked on load.

A broken file is refused with :class:`ContestConfigError`, one line naming the file, the key and
what is allowed (as league configs are). Runtimes name their entry file (an upload is that single
file, or an archive holding it at its top level), the build command run in the sandbox in the
upload's directory (``null``: nothing to build), and the command the ladder runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.contest.guard import SiteLimits, parse_site
from harness.league.config import LOG_DEFAULTS, StrictBoolLoader
from harness.league.config_checks import Checker, ConfigError
from harness.league.run_settings import SCHEDULE_KINDS, ScheduleKind, check_limits, check_time

__all__ = ["ContestConfig", "ContestConfigError", "Runtime", "Quotas", "LogRetention", "Phases", "PausePolicy",
           "ChallengePolicy", "CONFORMANCE_GAMES", "DEFAULT_RUNTIMES", "init_contest", "load_contest", "CONFIG_NAME"]

CONFIG_NAME = "contest.yaml"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")

#: The runtimes a new contest offers. Builds run inside the sandbox with no network.
DEFAULT_RUNTIMES: dict[str, dict[str, Any]] = {
    "python": {"entry": "bot.py", "build": ["python3", "-I", "-m", "py_compile", "bot.py"], "run": ["python3", "bot.py"]},
    "node": {"entry": "bot.js", "build": ["node", "--check", "bot.js"], "run": ["node", "bot.js"]},
    "cpp": {"entry": "bot.cpp", "build": ["g++", "-O2", "-std=c++17", "-o", "bot", "bot.cpp"], "run": ["./bot"]},
    # javac is a JVM too: sized to fit the build's memory limit (the bots' JVMs: harness.play.jvm)
    "java": {"entry": "Bot.java", "build": ["javac", "-J-Xmx512m", "-J-XX:CompressedClassSpaceSize=64m",
                                            "-J-XX:ReservedCodeCacheSize=64m", "-J-XX:+UseSerialGC",
                                            "-J-XX:-UsePerfData", "Bot.java"],
             "run": ["java", "-cp", ".", "Bot"]},
    "go": {"entry": "bot.go", "build": ["go", "build", "-o", "bot", "bot.go"], "run": ["./bot"]},
}

QUOTA_DEFAULTS = {
    "uploads_per_hour": 12,      # per team
    "active_versions": 2,        # a team's versions being built or checked at once
    "upload_kb": 1024,           # the uploaded file
    "unpacked_kb": 16384,        # all files of an archive, unpacked
    "files": 200,                # files in an archive
    "ratio": 100,                # unpacked size / compressed size of any member, and of the whole
    "signins_per_minute": 10,    # sign-in attempts per address
}
BUILD_DEFAULTS = {"seconds": 120, "memory_mb": 2048}
TOP_KEYS = ("name", "game", "options", "players", "time", "limits", "runtimes", "quotas", "build",
            "conformance_games", "workers", "executor", "secure_cookies", "ladder", "site", "logs", "phases",
            "pause", "challenges")
#: conformance games per table size when contest.yaml sets none: a bot that fails one game in five
#: fails at least one of 14 with probability 1 - 0.8^14 = 95.6%
CONFORMANCE_GAMES = 14
#: auto-pause: a current version is taken out of the ladder once it has played ``min_games`` and
#: forfeited more than ``forfeit_rate`` of them, or committed more than ``violation_rate``
#: violations a game (``null``: that rate never pauses)
PAUSE_DEFAULTS: dict[str, Any] = {"min_games": 20, "forfeit_rate": 0.1, "violation_rate": 0.25}
#: challenges: unranked games a team asks for against chosen teams (harness.contest.challenges)
CHALLENGE_DEFAULTS = {"per_hour": 3, "max_games": 20}
#: the ladder's schedules: a league's
LADDER_KINDS = SCHEDULE_KINDS
#: how long the ladder's game logs are kept, and the most disk they may take (see :mod:`.retention`)
LOGS_DEFAULTS = {"keep_days": 14, "violations_days": 90, "disk_mb": 2048}  # below LOG_DEFAULTS["budget_mb"]
PHASE_KEYS = ("opens", "uploads_close", "finals")
#: the ladder's games an hour unless contest.yaml says otherwise (docs/contest.md: disk per day)
PACE_DEFAULT = 600


class ContestConfigError(ValueError):
    """A contest config that cannot be used; the message is one line naming the file and the key."""


@dataclass(frozen=True)
class Runtime:
    """How an upload for one language is built and run."""

    name: str
    entry: str
    build: tuple[str, ...] | None
    run: tuple[str, ...]


@dataclass(frozen=True)
class Quotas:
    uploads_per_hour: int = QUOTA_DEFAULTS["uploads_per_hour"]
    active_versions: int = QUOTA_DEFAULTS["active_versions"]
    upload_kb: int = QUOTA_DEFAULTS["upload_kb"]
    unpacked_kb: int = QUOTA_DEFAULTS["unpacked_kb"]
    files: int = QUOTA_DEFAULTS["files"]
    ratio: int = QUOTA_DEFAULTS["ratio"]
    signins_per_minute: int = QUOTA_DEFAULTS["signins_per_minute"]


@dataclass(frozen=True)
class LogRetention:
    """The ladder's game logs: kept ``keep_days`` (those of games with a violation
    ``violations_days``), and the oldest dropped first beyond ``disk_mb``."""

    keep_days: int = LOGS_DEFAULTS["keep_days"]
    violations_days: int = LOGS_DEFAULTS["violations_days"]
    disk_mb: int = LOGS_DEFAULTS["disk_mb"]


@dataclass(frozen=True)
class Phases:
    """The contest's times (UNIX seconds, None: not set): the site takes uploads from ``opens``
    until ``uploads_close``; ``finals`` is when the organizer plans to play them (shown on the site)."""

    opens: float | None = None
    uploads_close: float | None = None
    finals: float | None = None


@dataclass(frozen=True)
class PausePolicy:
    """When a current version is paused (see PAUSE_DEFAULTS)."""

    min_games: int = PAUSE_DEFAULTS["min_games"]
    forfeit_rate: float | None = PAUSE_DEFAULTS["forfeit_rate"]
    violation_rate: float | None = PAUSE_DEFAULTS["violation_rate"]


@dataclass(frozen=True)
class ChallengePolicy:
    """How many challenges a team may ask an hour, and of how many games at most."""

    per_hour: int = CHALLENGE_DEFAULTS["per_hour"]
    max_games: int = CHALLENGE_DEFAULTS["max_games"]


@dataclass(frozen=True)
class ContestConfig:
    """A checked contest config; ``root`` is the contest directory."""

    root: Path
    name: str
    game: str
    players: tuple[int, ...]
    time: dict[str, int]
    runtimes: dict[str, Runtime]
    quotas: Quotas = Quotas()
    options: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    build_seconds: int = BUILD_DEFAULTS["seconds"]
    build_memory_mb: int = BUILD_DEFAULTS["memory_mb"]
    #: conformance games per table size (load_contest: CONFORMANCE_GAMES unless contest.yaml sets it; None: one per seat)
    conformance_games: int | None = None
    workers: int = 1
    executor: dict[str, Any] | None = None
    #: mark the session cookie Secure (serve behind https)
    secure_cookies: bool = False
    #: the ladder's schedule: round robins re-planned when the roster changes, or the adaptive schedule
    ladder: str = ScheduleKind.ROUND_ROBIN.value
    #: the ladder's pace (None: as fast as the workers play)
    games_per_hour: int | None = PACE_DEFAULT
    #: the ladder rests while every team is above the next with this probability (None: never rests)
    settle_confidence: float | None = None
    #: what the site refuses before it reads (body sizes, slow clients, trusted proxies)
    site: SiteLimits = SiteLimits()
    #: the ladder's and the finals' game logs (a league's ``logs``: game_kb, budget_mb)
    logs: dict[str, int] = field(default_factory=lambda: dict(LOG_DEFAULTS))
    #: how long the ladder keeps its game logs and within what disk (``logs``' other keys)
    retention: LogRetention = LogRetention()
    phases: Phases = Phases()
    #: auto-pause of a failing current version (:mod:`harness.contest.autopause`)
    pause: PausePolicy = PausePolicy()
    challenges: ChallengePolicy = ChallengePolicy()

    @property
    def db_path(self) -> Path:
        return self.root / "contest.sqlite"

    @property
    def submissions_dir(self) -> Path:
        return self.root / "submissions"


def init_contest(root: Path, game: str, *, name: str | None = None) -> Path:
    """Write a new ``contest.yaml`` in ``root`` (refused if one exists); return its path."""
    from harness.games import GAMES, get_game

    if game not in GAMES:
        raise ContestConfigError(f"--game: {game!r} is not a game (allowed: {', '.join(GAMES)})")
    path = root / CONFIG_NAME
    if path.exists():
        raise ContestConfigError(f"{path}: already exists (edit it, or choose another directory)")
    engine = get_game(game)
    sizes = list(range(engine.min_players, engine.max_players + 1))
    name = name or root.resolve().name
    if not NAME_RE.match(name):
        name = "contest"
    text = f"""\
# A tablebots contest (docs/contest.md). Every key is checked when the site or the ladder starts.
name: {name}
game: {game}
# table sizes the ladder plays (every upload plays its conformance games at each of them)
players: {sizes}
time: {{init_ms: 5000, move_ms: 200, bank_ms: 2000}}
limits: {{memory_mb: 1024, sandbox: auto}}
# an upload is the entry file alone, or a .zip/.tar.gz holding it at its top level
runtimes:
"""
    for rname, rt in DEFAULT_RUNTIMES.items():
        flow = [yaml.safe_dump(rt[k], default_flow_style=True, width=1000).strip() for k in ("build", "run")]
        text += f"  {rname}:\n    entry: {rt['entry']}\n    build: {flow[0]}\n    run: {flow[1]}\n"
    text += "build: " + yaml.safe_dump(BUILD_DEFAULTS, default_flow_style=True)
    text += "quotas:\n" + "".join(f"  {k}: {v}\n" for k, v in QUOTA_DEFAULTS.items())
    # the adaptive schedule plays every table size from the start (as many teams as the largest
    # table first); the round robin plays the sizes the teams can fill, re-planned as they arrive
    ladder = ScheduleKind.ADAPTIVE.value if len(sizes) == 1 else ScheduleKind.ROUND_ROBIN.value
    text += (f"# ladder: the schedule, adaptive (rounds chosen as results come in, teams joining while it plays)\n"
             f"# or round_robin; with a pace: ladder: {{schedule: {ladder}, games_per_hour: {PACE_DEFAULT}}} (the default\n"
             f"# pace; null: as fast as the workers play)\n"
             f"ladder: {ladder}\nworkers: 1\n"
             f"# the ladder's game logs: kept keep_days (with a violation: violations_days), within disk_mb\n"
             f"logs: {yaml.safe_dump(LOGS_DEFAULTS, default_flow_style=True, sort_keys=False).strip()}\n"
             f"# when the site takes uploads (UTC unless a zone is given), and when the finals are planned\n"
             f"phases: {{opens: null, uploads_close: null, finals: null}}\n")
    text += ("# a current version is paused (taken out of the ladder until its team uploads another) once it has\n"
             "# played min_games and forfeited more than forfeit_rate of them or committed more than violation_rate\n"
             "# violations a game (null: never)\npause: " + yaml.safe_dump(PAUSE_DEFAULTS, default_flow_style=True))
    text += ("# unranked games a team may ask for against chosen teams, played between the ladder's rounds\n"
             "challenges: " + yaml.safe_dump(CHALLENGE_DEFAULTS, default_flow_style=True))
    root.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    load_contest(root)  # what init writes must load
    return path


def _fail(path: Path, key: str, message: str) -> ContestConfigError:
    return ContestConfigError(f"{path}: {key}: {message}" if key else f"{path}: {message}")


def _int(path: Path, value: Any, key: str, lo: int = 1) -> int:
    if type(value) is not int or value < lo:
        raise _fail(path, key, f"{value!r} is not allowed (allowed: an integer >= {lo})")
    return value


def _argv(path: Path, value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        import shlex

        value = shlex.split(value)
    if not isinstance(value, list) or not value or not all(isinstance(w, str) and w for w in value):
        raise _fail(path, key, "expected a command: a list of words such as [python3, bot.py] (quote a word "
                               "that looks like a number: '2021')")
    return tuple(value)


def load_contest(root: str | Path) -> ContestConfig:
    """Read and check ``root/contest.yaml``."""
    root = Path(root).resolve()
    path = root / CONFIG_NAME
    data = _read(root, path)
    name = data.get("name", root.name)
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise _fail(path, "name", f"{name!r} is not allowed (letters, digits, '_', '.', '-')")
    game, sizes = _game_and_players(path, data)
    time, limits = _league_checks(path, data)
    runtimes = _runtimes(path, data.get("runtimes"))
    quotas_data = data.get("quotas") or {}
    if not isinstance(quotas_data, dict) or any(k not in QUOTA_DEFAULTS for k in quotas_data):
        raise _fail(path, "quotas", f"expected a mapping of {', '.join(QUOTA_DEFAULTS)}")
    quotas = Quotas(**{k: _int(path, quotas_data.get(k, d), f"quotas.{k}") for k, d in QUOTA_DEFAULTS.items()})
    build, options, executor = _passed_on(path, data)
    games = data.get("conformance_games")
    ladder, games_per_hour, settle = _ladder(path, data.get("ladder", ScheduleKind.ROUND_ROBIN.value))
    logs, retention = _logs(path, data.get("logs"))
    try:
        site = parse_site(data.get("site"))
    except ValueError as exc:
        raise _fail(path, *exc.args[0]) from None
    return ContestConfig(
        root=root, name=name, game=str(game), players=tuple(sorted(set(sizes))), time=time, runtimes=runtimes,
        quotas=quotas, options=options, limits=limits,
        build_seconds=_int(path, build.get("seconds", BUILD_DEFAULTS["seconds"]), "build.seconds"),
        build_memory_mb=_int(path, build.get("memory_mb", BUILD_DEFAULTS["memory_mb"]), "build.memory_mb"),
        conformance_games=CONFORMANCE_GAMES if games is None else _int(path, games, "conformance_games"),
        workers=_int(path, data.get("workers", 1), "workers"),
        executor=executor if isinstance(executor, dict) else None,
        secure_cookies=bool(data.get("secure_cookies", False)), ladder=ladder, games_per_hour=games_per_hour,
        settle_confidence=settle, site=site, logs=logs, retention=retention, phases=_phases(path, data.get("phases")),
        pause=_pause(path, data.get("pause")), challenges=_challenges(path, data.get("challenges")))


def _read(root: Path, path: Path) -> dict[str, Any]:
    """The YAML of ``path``: a mapping of TOP_KEYS only."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=StrictBoolLoader)  # noqa: S506
    except FileNotFoundError:
        raise ContestConfigError(f"{path}: no such file (create it: harness contest init {root} --game GAME)") from None
    except (OSError, yaml.YAMLError) as exc:
        raise ContestConfigError(f"{path}: cannot read: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise _fail(path, "", "expected a mapping of keys")
    for key in data:
        if key not in TOP_KEYS:
            raise _fail(path, str(key), f"unknown key; allowed keys: {', '.join(TOP_KEYS)}")
    return data


def _game_and_players(path: Path, data: dict[str, Any]) -> tuple[str, list[Any]]:
    """``game`` (a game's name) and ``players`` (table sizes it allows; its smallest when unset)."""
    from harness.games import GAMES, get_game

    game = data.get("game")
    if game not in GAMES:
        raise _fail(path, "game", f"{game!r} is not a game (allowed: {', '.join(GAMES)})")
    engine = get_game(str(game))
    sizes = data.get("players", [engine.min_players])
    sizes = sizes if isinstance(sizes, list) else [sizes]
    for n in sizes:
        if type(n) is not int or not engine.min_players <= n <= engine.max_players:
            raise _fail(path, "players", f"{n!r} is not allowed for {game} (allowed: "
                                         f"{engine.min_players} to {engine.max_players})")
    return str(game), sizes


def _runtimes(path: Path, value: Any) -> dict[str, Runtime]:
    """``runtimes``: a mapping of runtime names to {entry, build, run}, at least one."""
    if not isinstance(value, dict) or not value:
        raise _fail(path, "runtimes", "expected a mapping of runtime names to {entry, build, run}")
    runtimes = {}
    for rname, rt in value.items():
        key = f"runtimes.{rname}"
        if not isinstance(rname, str) or not NAME_RE.match(rname):
            raise _fail(path, key, "a runtime name is letters, digits, '_', '.', '-'")
        if not isinstance(rt, dict) or set(rt) - {"entry", "build", "run"} or "entry" not in rt or "run" not in rt:
            raise _fail(path, key, "expected {entry: FILE, build: COMMAND or null, run: COMMAND}")
        entry = rt["entry"]
        if not isinstance(entry, str) or not NAME_RE.match(entry):
            raise _fail(path, f"{key}.entry", f"{entry!r} is not a plain file name")
        build_argv = None if rt.get("build") is None else _argv(path, rt["build"], f"{key}.build")
        runtimes[rname] = Runtime(rname, entry, build_argv, _argv(path, rt["run"], f"{key}.run"))
    return runtimes


def _league_checks(path: Path, data: dict[str, Any]) -> tuple[dict[str, int], dict[str, Any]]:
    """``time`` and ``limits``, checked by the league config's own checks (the ladder's league
    config and the challenges pass them on): one validator of each, in the lower layer."""
    c = Checker(str(path))
    try:
        return check_time(c, data.get("time")), check_limits(c, data.get("limits"))
    except ConfigError as exc:
        raise ContestConfigError(str(exc)) from None


def _passed_on(path: Path, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """``build``, ``options`` and ``executor``, checked here only for their shape (the build's
    values when the config is built; the rest by the league config the ladder writes)."""
    build = data.get("build") or {}
    if not isinstance(build, dict) or any(k not in BUILD_DEFAULTS for k in build):
        raise _fail(path, "build", f"expected a mapping of {', '.join(BUILD_DEFAULTS)}")
    options = data.get("options") or {}
    if not isinstance(options, dict):
        raise _fail(path, "options", "expected a mapping of the game's options")
    executor = data.get("executor")
    if executor not in (None, "local") and not (isinstance(executor, dict) and set(executor) == {"dask"}):
        raise _fail(path, "executor", "expected local, or {dask: ADDRESS}")
    return build, options, executor


def _ladder(path: Path, value: Any) -> tuple[str, int | None, float | None]:
    """``ladder``: a schedule's name, or ``{schedule: NAME, games_per_hour: N, settle_confidence: P}``."""
    settle: Any = None
    if isinstance(value, dict):
        unknown = set(value) - {"schedule", "games_per_hour", "settle_confidence"}
        if unknown:
            raise _fail(path, f"ladder.{sorted(map(str, unknown))[0]}", "unknown key; allowed keys: schedule, "
                                                                        "games_per_hour, settle_confidence")
        pace = value.get("games_per_hour", PACE_DEFAULT)
        schedule = value.get("schedule", ScheduleKind.ROUND_ROBIN.value)
        pace = None if pace is None else _int(path, pace, "ladder.games_per_hour")
        settle = value.get("settle_confidence")
        if settle is not None and (type(settle) not in (int, float) or not 0.5 < settle < 1):
            raise _fail(path, "ladder.settle_confidence", f"{settle!r} is not allowed (allowed: a probability "
                                                          f"between 0.5 and 1, such as 0.99, or null)")
    else:
        schedule, pace = value, PACE_DEFAULT
    if schedule not in LADDER_KINDS:
        raise _fail(path, "ladder", f"{schedule!r} is not allowed (allowed: {', '.join(LADDER_KINDS)})")
    return str(schedule), pace, None if settle is None else float(settle)


def _logs(path: Path, value: Any) -> tuple[dict[str, int], LogRetention]:
    """``logs``: a league's (game_kb, budget_mb: the ladder's runner caps each game's log and the
    file's size) and the retention's (keep_days, violations_days, disk_mb: the ladder prunes)."""
    value = value or {}
    allowed = {**LOG_DEFAULTS, **LOGS_DEFAULTS}
    if not isinstance(value, dict) or any(k not in allowed for k in value):
        raise _fail(path, "logs", f"expected a mapping of {', '.join(allowed)}")
    league = {k: _int(path, value.get(k, d), f"logs.{k}", 1 if k == "game_kb" else 0) for k, d in LOG_DEFAULTS.items()}
    keep = LogRetention(**{k: _int(path, value.get(k, d), f"logs.{k}") for k, d in LOGS_DEFAULTS.items()})
    if league["budget_mb"] and keep.disk_mb >= league["budget_mb"]:
        # the runner's budget counts the file's size, which pruning never shrinks: past it, no new
        # game but those with a violation would keep its log however much was pruned
        raise _fail(path, "logs.disk_mb", f"{keep.disk_mb} must be below logs.budget_mb ({league['budget_mb']}): "
                                          f"the ladder prunes to disk_mb, the runner stops writing at budget_mb")
    return league, keep


def _phases(path: Path, value: Any) -> Phases:
    """``phases``: times as ``2026-01-12 09:00`` (UTC unless the text names a zone), or null."""
    import datetime as dt

    value = value or {}
    if not isinstance(value, dict) or any(k not in PHASE_KEYS for k in value):
        raise _fail(path, "phases", f"expected a mapping of {', '.join(PHASE_KEYS)} to times (2026-01-12 09:00)")
    times: dict[str, float | None] = {}
    for key in PHASE_KEYS:
        raw = value.get(key)
        if raw is None:
            times[key] = None
            continue
        try:
            when = raw if isinstance(raw, dt.datetime) else dt.datetime.fromisoformat(str(raw))
        except ValueError:
            raise _fail(path, f"phases.{key}", f"{raw!r} is not a time (write it as 2026-01-12 09:00, UTC, "
                                               f"or with its zone: 2026-01-12 09:00+01:00)") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        times[key] = when.timestamp()
    opens, close = times["opens"], times["uploads_close"]
    if opens is not None and close is not None and close <= opens:
        raise _fail(path, "phases.uploads_close", "must be after phases.opens")
    return Phases(**times)


def _challenges(path: Path, value: Any) -> ChallengePolicy:
    value = {} if value is None else value
    if not isinstance(value, dict) or any(k not in CHALLENGE_DEFAULTS for k in value):
        raise _fail(path, "challenges", f"expected a mapping of {', '.join(CHALLENGE_DEFAULTS)}")
    return ChallengePolicy(**{k: _int(path, value.get(k, d), f"challenges.{k}", 0 if k == "per_hour" else 1)
                              for k, d in CHALLENGE_DEFAULTS.items()})


def _pause(path: Path, value: Any) -> PausePolicy:
    """The ``pause`` key: a mapping of PAUSE_DEFAULTS' keys (a rate: a number from 0 to 1, or null)."""
    value = {} if value is None else value
    if not isinstance(value, dict) or any(k not in PAUSE_DEFAULTS for k in value):
        raise _fail(path, "pause", f"expected a mapping of {', '.join(PAUSE_DEFAULTS)}")
    rates: dict[str, float | None] = {}
    for key in ("forfeit_rate", "violation_rate"):
        rate = value.get(key, PAUSE_DEFAULTS[key])
        if rate is not None and (type(rate) not in (int, float) or not 0 <= rate):
            raise _fail(path, f"pause.{key}", f"{rate!r} is not allowed (allowed: a number >= 0, or null: never)")
        rates[key] = None if rate is None else float(rate)
    return PausePolicy(min_games=_int(path, value.get("min_games", PAUSE_DEFAULTS["min_games"]), "pause.min_games"),
                       forfeit_rate=rates["forfeit_rate"], violation_rate=rates["violation_rate"])
