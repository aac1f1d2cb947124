"""The fake players of the league tests (tests/test_league_runner.py and others): a bot named
``sN`` has strength N and the stronger bot wins, with a little seeded noise; no game is played.

They live here, not in a test module, because a league's workers are spawned processes that
import the module of the player they are handed: a test module's imports (the CLI, the ratings,
scipy) cost each worker about half a second of CPU, this module's a tenth.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from types import SimpleNamespace

from harness.games import ranking_from_keys
from harness.league.executors.base import GamePlayer


class FakePool:
    """Stands in for harness.play.pool.BotPool."""

    def __enter__(self) -> FakePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pass


def fake_pool(referee_config: object) -> FakePool:
    return FakePool()


def fake_play(game, options, seed, game_id, seats, pool, config):
    """A GameRecord-like result: strength from the bot name plus seeded noise."""
    rng = random.Random(game_id)
    keys = [int(s.name[1:]) + rng.random() * 1.5 for s in seats]
    violations = []
    if seats[0].name == "s0" and rng.random() < 0.3:
        violations.append({"game_id": game_id, "seed": seed, "decision": 4, "seat": 0, "bot": "s0",
                           "kind": "illegal", "detail": "index 9 not offered", "request": "{}", "received": "x",
                           "stderr_tail": "", "snapshot": {"a": 1}})
    return SimpleNamespace(game_id=game_id, ranking=ranking_from_keys(keys), scores=[round(k, 3) for k in keys],
                           ended_by="rules", forfeits=[], violations=violations,
                           log=[{"type": "event", "event": {"type": "fake"}}], decisions=5, seconds=0.001)


FAKE = GamePlayer(play=fake_play, make_pool=fake_pool)


def broken_play(game, options, seed, game_id, seats, pool, config):
    raise RuntimeError("engine bug")


def stuck_play(game, options, seed, game_id, seats, pool, config):  # type: ignore[no-untyped-def]
    """A game that never ends (a worker stuck in it): marks the file named by STUCK_MARK first."""
    Path(os.environ["STUCK_MARK"]).write_text(game_id)
    time.sleep(600)


def affinity_play(game, options, seed, game_id, seats, pool, config):  # type: ignore[no-untyped-def]
    """fake_play that first notes its worker's pid and cores in the file named by AFFINITY_LOG."""
    with open(os.environ["AFFINITY_LOG"], "a") as fh:
        fh.write(f"{os.getpid()} {','.join(map(str, sorted(os.sched_getaffinity(0))))}\n")
    return fake_play(game, options, seed, game_id, seats, pool, config)


#: the teams of tests/test_contest_collusion.py, weakest first
TEAMS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")


def colluding_play(game, options, seed, game_id, seats, pool, config):  # type: ignore[no-untyped-def]
    """Strength by team plus the deal's luck per seat and noise; beta gives alpha 2 points of
    performance whenever they share a table (beta feeding alpha)."""
    rng, luck = random.Random(game_id), random.Random(seed)
    names = [s.name for s in seats]
    keys = [TEAMS.index(n) * 0.4 + luck.gauss(0, 1) + rng.gauss(0, 1) for n in names]
    if "alpha" in names and "beta" in names:
        keys[names.index("alpha")] += 2
        keys[names.index("beta")] -= 2
    return SimpleNamespace(game_id=game_id, ranking=ranking_from_keys(keys), scores=[round(k, 3) for k in keys],
                           ended_by="rules", forfeits=[], violations=[], log=[{"type": "event", "event": {"type": "x"}}],
                           decisions=5, seconds=0.001)
