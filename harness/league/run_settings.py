"""How a league runs, as its config sets it: the ``schedule`` and ``rounds``, ``time``, ``limits``,
``policy`` and ``strikes``, ``rating``, ``workers``, ``logs``, ``store`` and ``executor`` keys, each
checked with the defaults the docs promise (docs/leagues.md).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from harness.league.config_checks import Checker, show
from harness.play.limits import LIMIT_KEYS, NULLABLE_LIMITS, TimeControls
from harness.play.sandbox import SANDBOX_CHOICES, SandboxMode

__all__ = ["RatingParams", "ScheduleKind", "ScheduleSpec", "TIME_KEYS", "LIMIT_KEYS", "RATING_DEFAULTS", "SCHEDULE_KINDS",
           "LOG_DEFAULTS", "default_workers", "check_schedule", "check_time", "check_limits", "check_policy",
           "check_rating", "check_workers", "check_logs", "check_executor", "check_rounds", "check_store",
           "games_per_round", "MAX_GAMES"]

#: The time control keys and their defaults (the referee's).
TIME_KEYS: dict[str, int] = dataclasses.asdict(TimeControls())
RATING_DEFAULTS = {"mu": 25.0, "sigma": 25.0 / 3, "beta": 25.0 / 6, "tau": 0.0, "draw_probability": 0.10}
POLICIES = ("forfeit", "strikes")


class ScheduleKind(StrEnum):
    """How a league chooses its games (``schedule.kind``; a contest's ``ladder``): the one list."""

    #: every table of every round, planned up front (the ``rounds`` key)
    ROUND_ROBIN = "round_robin"
    #: rounds of duplicate sets chosen as results come in (schedule_adaptive)
    ADAPTIVE = "adaptive"


SCHEDULE_KINDS: tuple[str, ...] = tuple(kind.value for kind in ScheduleKind)
SCHEDULE_KEYS = ("kind", "games", "until")
UNTIL_KEYS = ("top", "confidence")
DEFAULT_STRIKES = 3
#: ``logs``: the most bytes one game's log keeps (before compression; an honest game takes 0.1-0.4
#: MB), and the disk the league's logs file may use before only games with violations keep theirs
LOG_DEFAULTS = {"game_kb": 4096, "budget_mb": 4096}


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

    kind: str = ScheduleKind.ROUND_ROBIN.value
    #: adaptive: stop once this many games are scheduled and played (None: no budget)
    games: int | None = None
    #: adaptive: stop once each adjacent pair of the top ``top`` (and the next bot) is ordered
    #: with ``confidence`` by the table's P(>next) (None: no question)
    top: int | None = None
    confidence: float | None = None

    @property
    def adaptive(self) -> bool:
        return self.kind == ScheduleKind.ADAPTIVE


def check_schedule(c: Checker, value: Any, n_bots: int) -> ScheduleSpec:
    """``schedule``: ``round_robin`` (default), ``adaptive``, or ``{kind, games, until: {top, confidence}}``."""
    if value is None or isinstance(value, str):
        value = {"kind": value or ScheduleKind.ROUND_ROBIN.value}
    cfg = c.mapping(value, "schedule", SCHEDULE_KEYS)
    kind = cfg.get("kind", ScheduleKind.ROUND_ROBIN.value)
    if kind not in SCHEDULE_KINDS:
        close = difflib.get_close_matches(str(kind), SCHEDULE_KINDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise c.fail("schedule.kind", f"{show(kind)} is not allowed{hint} (allowed: {', '.join(SCHEDULE_KINDS)})")
    if kind == ScheduleKind.ROUND_ROBIN:
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
    return ScheduleSpec(kind=ScheduleKind.ADAPTIVE.value, games=games, top=top, confidence=confidence)


def check_executor(c: Checker, value: Any) -> str | None:
    """``executor``: ``local`` (default) or ``{dask: ADDRESS}`` (``tcp://host:8786`` or ``local:N``)."""
    if value in (None, "local"):
        return None
    if isinstance(value, dict):
        cfg = c.mapping(value, "executor", ("dask",))
        address = cfg.get("dask")
        if isinstance(address, str) and address.strip():
            return address.strip()
        raise c.fail("executor.dask", f"{show(address)} is not allowed (allowed: a scheduler address such as "
                                      f"tcp://10.0.0.1:8786, or local:N for N workers on this machine)")
    raise c.fail("executor", f"{show(value)} is not allowed (allowed: local, or {{dask: ADDRESS}})")


def check_limits(c: Checker, value: Any) -> dict[str, Any]:
    """``limits``: LIMIT_KEYS (``sandbox``: auto, bwrap or none; ``null`` switches a NULLABLE_LIMITS one off)."""
    limits = c.mapping(value, "limits", LIMIT_KEYS)
    out: dict[str, Any] = {}
    for key, val in limits.items():
        if key == "sandbox":
            if val in (None, SandboxMode.NONE, False):
                out[key] = None
            elif val == SandboxMode.AUTO:
                out[key] = SandboxMode.AUTO.value  # plain strings in a config (it is dumped to YAML and JSON)
            elif val == SandboxMode.BWRAP:
                if c.strict and shutil.which("bwrap") is None:
                    raise c.fail("limits.sandbox", "bwrap (bubblewrap) is not installed: install it "
                                                   "(apt-get install bubblewrap) or remove the key")
                out[key] = SandboxMode.BWRAP.value
            else:
                raise c.fail("limits.sandbox", f"{show(val)} is not allowed (allowed: {', '.join(SANDBOX_CHOICES)})")
        elif val is None and key in NULLABLE_LIMITS:
            out[key] = None  # no limit
        else:
            out[key] = c.integer(val, f"limits.{key}", 1)
    out.setdefault("sandbox", SandboxMode.AUTO.value)  # bubblewrap where it works here, else none with a warning
    return out


#: The largest schedule a league may have (games over all rounds): 100 million games take ~10 GB
#: of store before any log, and hours to plan and to rate.
MAX_GAMES = 100_000_000


def games_per_round(n_bots: int, sizes: Sequence[int]) -> int:
    """How many games one round has: every seat order of every table, sum over table sizes k of n! / (n - k)!."""
    return sum(math.perm(n_bots, k) for k in sizes)


def check_rounds(c: Checker, data: dict[str, Any], rounds: int | None, schedule: ScheduleSpec,
                 per_round: int) -> int:
    """``rounds`` (or ``--rounds``, which wins): round robin only, and at most MAX_GAMES games in all."""
    if schedule.adaptive and "rounds" in data:
        raise c.fail("rounds", "only used with the round-robin schedule (this league's schedule is adaptive: "
                               "its budget is schedule.games)")
    n_rounds = c.integer(data.get("rounds", 1), "rounds", 1)
    if rounds is not None and schedule.adaptive:
        raise c.fail("--rounds", "only used with the round-robin schedule (this league's schedule is adaptive: "
                                 "its budget is schedule.games)")
    if rounds is not None:
        n_rounds = c.integer(rounds, "--rounds", 1)
    if not schedule.adaptive and per_round * n_rounds > MAX_GAMES:
        raise c.fail("rounds" if rounds is None else "--rounds",
                     f"{n_rounds} rounds of {per_round:,} games make {per_round * n_rounds:,} games, more than "
                     f"the {MAX_GAMES:,} a league may hold (allowed: at most {max(1, MAX_GAMES // per_round):,} "
                     f"rounds with these bots and table sizes)")
    return n_rounds


def check_time(c: Checker, value: Any) -> dict[str, int]:
    """``time``: each of TIME_KEYS in milliseconds (its default when unset; a bank and jitter may be 0)."""
    time_cfg = c.mapping(value, "time", TIME_KEYS)
    return {k: c.integer(time_cfg.get(k, d), f"time.{k}", 0 if k in ("bank_ms", "jitter_ms") else 1)
            for k, d in TIME_KEYS.items()}


def check_policy(c: Checker, data: dict[str, Any]) -> tuple[str, int]:
    """``policy`` (forfeit, or strikes) and ``strikes`` (only with that policy): (policy, strikes or 0)."""
    policy = data.get("policy", "forfeit")
    if policy not in POLICIES:
        raise c.fail("policy", f"{show(policy)} is not allowed (allowed: {', '.join(POLICIES)})")
    if "strikes" in data and policy != "strikes":
        raise c.fail("strikes", "only used with 'policy: strikes' (the policy here is forfeit)")
    strikes = c.integer(data.get("strikes", DEFAULT_STRIKES), "strikes", 1) if policy == "strikes" else 0
    return policy, strikes


def check_rating(c: Checker, value: Any) -> RatingParams:
    """``rating``: TrueSkill's parameters, each its RATING_DEFAULTS value when unset."""
    rating_cfg = c.mapping(value, "rating", RATING_DEFAULTS)
    return RatingParams(
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


def check_workers(c: Checker, value: Any, override: int | None) -> int:
    """``workers`` (``auto`` or unset: this process's cores), or ``--workers`` when given."""
    n_workers = default_workers() if value in (None, "auto") else c.integer(value, "workers", 1)
    if override is not None:
        n_workers = c.integer(override, "--workers", 1)
    return n_workers


def check_logs(c: Checker, value: Any) -> dict[str, int]:
    """``logs``: game_kb (at least 1) and budget_mb, each its LOG_DEFAULTS value when unset."""
    logs_cfg = c.mapping(value, "logs", LOG_DEFAULTS)
    # budget_mb 0: only games with violations keep their logs, from the first game on
    return {k: c.integer(logs_cfg.get(k, d), f"logs.{k}", 1 if k == "game_kb" else 0) for k, d in LOG_DEFAULTS.items()}


def check_store(c: Checker, store: Any, base_dir: Path) -> str:
    """``store``: a file path relative to the config file's directory, made absolute."""
    if not isinstance(store, str) or not store.strip():
        raise c.fail("store", f"{show(store)} is not allowed (allowed: a file path, relative to the config "
                              f"file's directory)")
    # Relative to the config file, like the bots' paths: every command finds the same store from
    # any current directory (it used to be the current directory, and `cd leagues && harness
    # violations x.yaml` found nothing and advised a run that started a second, empty store).
    return str((base_dir / store).resolve())
