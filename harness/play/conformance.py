"""Conformance games: a candidate bot in every seat in turn against reference opponents.

What `harness check-bot` and `harness submit` play before a bot may join a league: the games,
the candidate's start-up times and decision latencies read from the message log, and its
violations (the opponents' are only counted: a bot is never charged for another's fault).
Printing is the command line's; this module only plays and measures.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from harness.games import Game
from harness.play.limits import BotSpec
from harness.play.pool import BotPool
from harness.play.referee import GameRecord, RefereeConfig, play_game
from harness.play.violations import Violation, ViolationKind

#: Environment variable naming the directory of the reference bots (overrides the lookup).
BOTS_ENV = "TABLEBOTS_BOTS"
#: Where an installed wheel puts the reference bots, under its prefix (pyproject.toml's data-files).
_INSTALLED_BOTS = Path("share") / "tablebots" / "bots"


def reference_bots_dir() -> Path | None:
    """The directory of the reference bots (``random_bot.py``, ``<game>_greedy.py``), or ``None``.

    Looked up in order: ``$TABLEBOTS_BOTS``; ``bots/`` of the source tree the harness runs from
    (a checkout or an editable install); ``<prefix>/share/tablebots/bots`` where a wheel
    installs them (the virtual environment's, then the user's).
    """
    if os.environ.get(BOTS_ENV):
        return Path(os.environ[BOTS_ENV])
    candidates = [Path(__file__).resolve().parents[2] / "bots", Path(sys.prefix) / _INSTALLED_BOTS,
                  Path(sys.base_prefix) / _INSTALLED_BOTS]
    return next((d for d in candidates if (d / "random_bot.py").is_file()), None)


def reference_opponents(game: Game, bots_dir: Path | None = None) -> list[BotSpec]:
    """The random bot and, if present, the game's greedy bot, from ``bots_dir`` (default:
    :func:`reference_bots_dir`); empty if there are none."""
    bots_dir = bots_dir or reference_bots_dir()
    if bots_dir is None:
        return []
    specs = []
    random_bot = bots_dir / "random_bot.py"
    greedy = bots_dir / f"{game.name}_greedy.py"
    if random_bot.is_file():
        specs.append(BotSpec(name="random-py", command=("python3", str(random_bot))))
    if greedy.is_file():
        specs.append(BotSpec(name=f"{game.name}-greedy", command=("python3", str(greedy))))
    return specs


#: Called after each game: (game index from 0, the seats' specs, the candidate's seat, the record).
GameDone = Callable[[int, Sequence[BotSpec], int, GameRecord], None]


class SdkFallback(TypedDict):
    """An answer the Python SDK's fallback made: in which game, and the error it caught."""

    game_id: str
    error: str


@dataclass
class ConformanceResult:
    """What the conformance games measured of the candidate."""

    #: milliseconds from hello to ready, one per bot start
    startups_ms: list[float] = field(default_factory=list)
    #: milliseconds from each request to its answer
    latencies_ms: list[float] = field(default_factory=list)
    #: the candidate's violations, as the referee records them
    violations: list[Violation] = field(default_factory=list)
    #: how many violations the opponents committed
    opponent_violations: int = 0
    #: the deadline (``time_left_ms``) of each request the candidate let time out: a timeout is
    #: a decision that took at least that long, so latencies are counted with these
    timeouts_ms: list[float] = field(default_factory=list)
    #: answers the Python SDK's explicit fallback made (``"sdk_fallback"`` in the answer)
    fallbacks: list[SdkFallback] = field(default_factory=list)


def check_deals(n_games: int, seed: int | None = None, id_prefix: str = "g-") -> list[tuple[int, str, int]]:
    """(seed, game id, the candidate's first seat offset) of each of ``n_games`` conformance games.

    A bot must not be able to tell that it is being checked (and behave only then): the ids look
    like a league's (``id_prefix`` and 12 hex digits), the seeds are 53-bit hashes of a key, and
    the candidate's first seat is drawn too. The key is fresh random bytes, or with ``seed`` (a
    person re-running ``check-bot --seed``) derived from it, so the same games come back.
    """
    key = secrets.token_hex(32) if seed is None else f"check-bot:{seed}"

    def digest(*parts: object) -> bytes:
        return hashlib.sha256(json.dumps([key, *parts]).encode()).digest()
    offset = digest("seat")[0]
    return [(int.from_bytes(digest("deal", i)[:8], "big") % 2**53, id_prefix + digest("game", i).hex()[:12], offset)
            for i in range(n_games)]


def conformance_games(game: Game, candidate: BotSpec, players: int, seed: int | None, n_games: int,
                      options: dict[str, Any], config: RefereeConfig, opponents: Sequence[BotSpec],
                      on_game: GameDone | None = None, id_prefix: str = "g-") -> ConformanceResult:
    """Play ``n_games`` games of ``players`` seats, ``candidate`` in every seat in turn (from a
    drawn one) and ``opponents`` in turn in the others, on the deals of :func:`check_deals`
    (``seed`` None: fresh secret ones; ``id_prefix``: how the league's ids that the bot will play
    start)."""
    result = ConformanceResult()
    with BotPool(config) as pool:
        for i, (deal, game_id, offset) in enumerate(check_deals(n_games, seed, id_prefix)):
            mine = (offset + i) % players
            others = iter(opponents[(i + k) % len(opponents)] for k in range(players))
            seats = [candidate if s == mine else next(others) for s in range(players)]
            record = play_game(game, options, deal, game_id, seats, pool, config)
            for entry in record.log:
                if entry["type"] != "recv" or entry["seat"] != mine:
                    continue
                msg = entry.get("msg", {})
                (result.startups_ms if msg.get("type") == "ready" else result.latencies_ms).append(entry["ms"])
                if "sdk_fallback" in msg:
                    result.fallbacks.append({"game_id": record.game_id, "error": str(msg["sdk_fallback"])})
            mine_violations = [v for v in record.violations if v["seat"] == mine]
            result.timeouts_ms += [ms for ms in map(_request_deadline, mine_violations) if ms is not None]
            result.violations += mine_violations
            result.opponent_violations += sum(1 for v in record.violations if v["seat"] != mine)
            if on_game is not None:
                on_game(i, seats, mine, record)
    return result


def group_violations(violations: Sequence[Violation]) -> dict[tuple[str, str], list[Violation]]:
    """Violations grouped by kind and detail, the offered actions left out of the detail: the
    same mistake in every game is one finding, with a count."""
    groups: dict[tuple[str, str], list[Violation]] = {}
    for v in violations:
        same_mistake = re.sub(r" \((?:nearest offered|offered|legal): [^)]*\)$", "", v["detail"])
        groups.setdefault((v["kind"], same_mistake), []).append(v)
    return groups


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values`` (not empty)."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 1)) - 1))
    return ordered[k]


def _sent(violation: Violation) -> dict[str, Any]:
    """The message the referee had sent when ``violation`` happened ({} if none or unreadable)."""
    try:
        msg = json.loads(violation.get("request") or "{}")
    except ValueError:
        return {}
    return msg if isinstance(msg, dict) else {}


def _request_deadline(violation: Violation) -> float | None:
    """The ``time_left_ms`` of the request a timeout violation let pass; None for other violations."""
    if violation["kind"] != ViolationKind.TIMEOUT:
        return None
    msg = _sent(violation)
    if msg.get("type") != "request" or not isinstance(msg.get("time_left_ms"), (int, float)):
        return None
    return float(msg["time_left_ms"])


_FLUSH_HINT = ("did the bot flush its output? Flush after every line: print(..., flush=True), "
               "fflush(stdout), std::cout << std::endl, System.out.flush()")
_STDERR_HINT = "a line that is not JSON: write debug output to stderr, never to stdout"


def hint(violation: Violation, answered_any: bool) -> str | None:
    """A beginner's likely mistake behind ``violation``, or None. ``answered_any``: whether the
    bot ever answered a request (a bot that never did and times out most likely never flushed)."""
    kind, detail = violation["kind"], violation["detail"]
    if kind == ViolationKind.TIMEOUT and (_sent(violation).get("type") == "hello" or not answered_any):
        return _FLUSH_HINT
    if kind == ViolationKind.MALFORMED and detail.startswith(("not JSON", "not UTF-8")):
        return _STDERR_HINT
    if kind == ViolationKind.PROTOCOL and "not asked" in detail:
        return "output nobody asked for: " + _STDERR_HINT.split(": ", 1)[1]
    return None


def latency_line(latencies_ms: Sequence[float], timeouts_ms: Sequence[float], move_ms: int) -> str | None:
    """The candidate's decision latency, each timeout counted as a decision that took its deadline."""
    every = list(latencies_ms) + list(timeouts_ms)
    if not every:
        return None
    def show(ms: float) -> str:
        return f">={ms:.0f}" if ms in timeouts_ms and ms not in latencies_ms else f"{ms:.2f}"
    median, p99, worst = percentile(every, 0.5), percentile(every, 0.99), max(every)
    line = (f"decisions: {len(every)}, latency median {show(median)} ms, p99 {show(p99)} ms, max {show(worst)} ms "
            f"(move_ms {move_ms})")
    if timeouts_ms:
        line += f"; {len(timeouts_ms)} timed out (counted as taking their deadline)"
    return line
