"""A match: bot A against bot B on duplicate sets, stopped by a sequential test.

A match is a small league underneath, so it inherits everything a league has: persistent bot
processes in parallel workers, the store, resume after Ctrl-C or ``kill -9``, violations and
replays. Its bots are exactly one table: A, B and the fixed opponents that fill a 3- or
4-seat table; a round of that league is one duplicate set (one deal, every seat order: 2, 6 or
24 games). The config is written as a YAML file beside its store (``runs/match-<id>.yaml``), so
``harness violations`` and ``harness replay`` work on a match as on any league; the id hashes
the game, options, seed and commands, so running the same match again resumes it.

While the runner plays, each finished game is added to its set; complete sets go to the test
in schedule order (:class:`MatchState`), and once the test accepts H0 or H1 the runner
dispatches no more games: the local workers skip the games queued ahead, Dask cancels the
batches not finished, the games being played finish and are recorded. What finishes after the
deciding set is reported apart; the games never played are marked dropped in the store, so the
match's league shows nothing left to play.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.league import queries
from harness.league.config import LeagueConfig, load_config
from harness.league.store import GameOutcome, LeagueStore

__all__ = ["MatchSpec", "MatchState", "match_config", "set_score"]


@dataclass(frozen=True)
class MatchSpec:
    """What defines a match (its id hashes all of it)."""

    game: str
    a: str
    b: str
    opponents: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    @property
    def players(self) -> int:
        return 2 + len(self.opponents)

    @property
    def set_size(self) -> int:
        return math.factorial(self.players)

    @property
    def match_id(self) -> str:
        text = json.dumps([self.game, self.a, self.b, list(self.opponents), self.options, self.seed], sort_keys=True)
        return "match-" + hashlib.sha256(text.encode()).hexdigest()[:10]


def _absolute(command: str) -> str:
    """The command with every word that names an existing path made absolute (the config lives in runs/)."""
    words = shlex.split(command)
    return shlex.join(os.path.abspath(w) if (os.sep in w or os.path.exists(w)) and os.path.exists(w) else w
                      for w in words)


def match_config(spec: MatchSpec, *, games: int, directory: Path, workers: int | None,
                 time: dict[str, int], sandbox: str | None = None) -> LeagueConfig:
    """Write the match's league config (``<directory>/<match id>.yaml``) and load it."""
    directory.mkdir(parents=True, exist_ok=True)
    bots = [{"name": "A", "command": _absolute(spec.a)}, {"name": "B", "command": _absolute(spec.b)}]
    bots += [{"name": f"opponent{i + 1}", "command": _absolute(c)} for i, c in enumerate(spec.opponents)]
    data: dict[str, Any] = {"name": spec.match_id, "game": spec.game, "options": spec.options,
                            "players": spec.players, "rounds": max(1, math.ceil(games / spec.set_size)),
                            "seed": spec.seed, "time": time, "bots": bots, "store": f"{spec.match_id}.sqlite"}
    if workers is not None:
        data["workers"] = workers
    if sandbox is not None:
        data["limits"] = {"sandbox": sandbox}
    path = directory / f"{spec.match_id}.yaml"
    header = (f"# harness match {spec.game}: A = {spec.a!r}, B = {spec.b!r}"
              + (f", opponents {list(spec.opponents)!r}" if spec.opponents else "") + "\n"
              "# Written by `harness match`; run the same match command to resume it.\n")
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))
    return load_config(path)


def set_score(games: Sequence[tuple[list[int], list[int]]], a: int, b: int) -> float:
    """A's mean score against B over a set's games, each given as (version ids by seat, ranks by seat)."""
    total = 0.0
    for versions, ranks in games:
        ra, rb = ranks[versions.index(a)], ranks[versions.index(b)]
        total += 1.0 if ra < rb else 0.5 if ra == rb else 0.0
    return total / len(games)


@dataclass
class MatchState:
    """The sequential test's bookkeeping, fed game by game in any order.

    The test reads complete sets **in schedule order** (round 0, 1, ...): a set that completes
    before an earlier one waits for it. The verdict is therefore a function of the plan and the
    results alone, the same live and on resume, and it is frozen at the set that decided:
    ``scores`` and ``games`` stop there. Games that finish afterwards (those already in flight
    when the test decided, or sets that completed before the deciding one was reached) are
    counted apart in ``late_scores`` and ``late_games``: reporting them is honest, but adding
    them would recompute the verdict on a sample whose size depended on the data, and could
    turn a decision into "none" (measured: 22-39% of decisions with 1-8 late sets).
    """

    config: LeagueConfig
    set_size: int
    verdict: Callable[[list[float]], str]
    scores: list[float] = field(default_factory=list)  # the sets the test read, up to the deciding one
    games: int = 0  # the games of those sets
    decided: bool = False
    decided_round: int | None = None
    late_scores: list[float] = field(default_factory=list)  # complete sets after the decision
    late_games: int = 0  # every game after the decision's set (complete sets or not)
    waiting: dict[int, float] = field(default_factory=dict)  # complete sets behind an unfinished earlier one
    _next_round: int = 0
    _open: dict[int, list[tuple[list[int], list[int]]]] = field(default_factory=dict)
    _ids: tuple[int, int] | None = None

    def ids(self, store: LeagueStore) -> tuple[int, int]:
        if self._ids is None:
            labels = {r.label: r.id for r in store.versions()}
            self._ids = (labels[self.config.bots[0].label], labels[self.config.bots[1].label])
        return self._ids

    def load(self, store: LeagueStore) -> None:
        """The sets already played (a resumed match), in schedule order."""
        for seq, round_ in queries.finished_rounds(store):
            seats = store.game_seats(seq)
            # a finished game's seats all have a rank
            self._add(store, round_, [s.version_id for s in seats], [s.rank for s in seats if s.rank is not None])

    def on_game(self, store: LeagueStore, seq: int, outcome: GameOutcome) -> None:
        # the seating from the games row (planned, so visible to this reader while the runner's
        # transaction recording the game is still open; its seat rows are not)
        round_, versions = queries.scheduled_seating(store, seq)
        self._add(store, round_, versions, list(outcome.ranking))

    def _add(self, store: LeagueStore, round_: int, versions: list[int], ranks: list[int]) -> None:
        a, b = self.ids(store)
        if a not in versions or b not in versions:
            return  # a game of an older version of A or B
        self.add_game(round_, versions, ranks, a, b)

    def add_game(self, round_: int, versions: list[int], ranks: list[int], a: int, b: int) -> None:
        """One finished game of A (version ``a``) and B (``b``) in set ``round_``."""
        if self.decided and round_ > (self.decided_round or 0):
            self.late_games += 1
        group = self._open.setdefault(round_, [])
        group.append((versions, ranks))
        if len(group) < self.set_size:
            return
        score = set_score(self._open.pop(round_), a, b)
        if self.decided:
            self.late_scores.append(score)
            return
        self.waiting[round_] = score
        while not self.decided and self._next_round in self.waiting:
            self.scores.append(self.waiting.pop(self._next_round))
            self.games += self.set_size
            if self.verdict(self.scores) != "none":
                self.decided, self.decided_round = True, self._next_round
            self._next_round += 1
        if self.decided:  # what completed beyond the deciding set, and the games begun there
            self.late_scores += [self.waiting.pop(r) for r in sorted(self.waiting)]
            self.late_games = self.set_size * len(self.late_scores) + sum(
                len(g) for r, g in self._open.items() if r > (self.decided_round or 0))

    @property
    def waiting_games(self) -> int:
        """Games not (yet) read by the test: complete sets behind an unfinished one, and unfinished sets."""
        return self.set_size * len(self.waiting) + sum(len(g) for g in self._open.values())
