"""The adaptive schedule's rebuild from arrays gives exactly the state of replaying every game.

The reference (:func:`rebuild_per_game`) is the rebuild as it was written first: the store's
schedule log replayed one game at a time through ``Matchmaker.note_set`` and ``record``. A
league is made to hold every kind of game a resume meets: a round robin's finished games (its
pending ones dropped when the league turned adaptive), adaptive games at tables of 2 and 3 with
shared places, games dropped when a bot retired during a run, games left pending by a killed
run, and a bot retired while no run was on (its pending games dropped by the rebuild). Both
rebuilds run on copies of that store; their states, what they write, and the rounds they choose
next must be the same.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_adaptive_schedule import write_config

from harness.games import ranking_from_keys
from harness.league import schedule_adaptive as adaptive
from harness.league.config import load_config
from harness.league.runner import plan_league
from harness.league.schedule_adaptive import AdaptiveSchedule
from harness.league.store import GameOutcome, LeagueStore
from harness.league.store_pending import PendingGame


def rebuild_per_game(self: AdaptiveSchedule, version_ids: dict[str, int]) -> None:
    """The reference: every game of the schedule log replayed in Python, one call per game."""
    store = self.store
    with store.transaction():
        start = store.get_meta(adaptive.FROM_KEY)
        if start is None:
            start = str(store.last_seq())
            store.set_meta(adaptive.FROM_KEY, start)
        store.db.execute(f"UPDATE games SET status = 'dropped' WHERE status = 'pending' AND id NOT LIKE "
                         f"'{adaptive.ID_PREFIX}%'")
        store.set_meta("plan_fingerprint", "")
    self.start = int(start)
    for row in store.versions():
        self.labels[row.id] = f"{row.name}@{row.version}"
        self.names[row.id] = row.name
        self.mm.add_bot(row.id)
    self.mm.set_roster(sorted(version_ids.values()))
    for seq, game_id, round_, status, versions, ranks in store.schedule_log(0):
        if seq <= self.start or not game_id.startswith(adaptive.ID_PREFIX):
            if status == "done" and ranks is not None:
                self.mm.record(-1, versions, ranks)
            continue
        if status == "dropped":
            continue
        self.mm.note_set(round_, versions, games=1)
        self.scheduled += 1
        if status == "done" and ranks is not None:
            self.mm.record(round_, versions, ranks)
        else:
            self._track(seq, round_, versions)
    self._drop_games_of(set(self.mm.ids) - set(self.active))


class PerGame(AdaptiveSchedule):
    _rebuild = rebuild_per_game


def tied_outcome(game_id: str, strengths: list[int]) -> GameOutcome:
    """Keys of a few values only: shared places are common."""
    rng = random.Random(game_id)
    keys = [s // 3 + rng.randrange(3) for s in strengths]
    return GameOutcome(game_id=game_id, ranking=ranking_from_keys(keys), scores=keys, ended_by="rules")


def record(store: LeagueStore, schedule: AdaptiveSchedule | None, games: list[PendingGame],
           strength: dict[int, int]) -> None:
    for g in games:
        result = tied_outcome(g.game_id, [strength[v] for v in g.version_ids])
        if store.record_many([(g.seq, result)]):
            if schedule is not None:
                schedule.recorded(g.seq, g.version_ids, result.ranking)
        elif schedule is not None:
            schedule.dropped(g.seq)


def strengths(store: LeagueStore) -> dict[int, int]:
    return {r.id: int(r.name[1:]) for r in store.versions()}


def make_league(dir_: Path, first_id: int) -> Path:
    names = [f"s{i}" for i in range(9)]
    dir_.mkdir()
    path = write_config(dir_, names, "round_robin", players="[2, 3]")
    cfg = load_config(path)
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        store.register_versions(cfg.bots)
        with store.transaction():  # version ids from first_id on (above 2^16: the query's other path)
            store.db.execute("UPDATE versions SET id = id - 1 + ?", (first_id,))
        plan_league(cfg, store)
        record(store, None, store.pending_games()[:60], strengths(store))  # the rest is dropped below
    path.write_text(path.read_text().replace("schedule: round_robin", "schedule: {kind: adaptive}"))
    cfg = load_config(path)
    rng = random.Random(4)
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        ids = store.register_versions(cfg.bots)
        schedule = AdaptiveSchedule(cfg, store, ids)
        queue: list[PendingGame] = []
        for step in range(40):
            got = schedule.next_games()
            queue += got or []
            rng.shuffle(queue)
            if step < 36:  # then killed: the last rounds stay pending
                record(store, schedule, queue[:25], strengths(store))
                queue = queue[25:]
            if step == 15:  # s4 retires during the run: its pending games are dropped
                schedule.set_roster({k: v for k, v in ids.items() if not k.startswith("s4@")})
                queue = [g for g in queue if g.seq in schedule.round_of]
        s7 = ids[next(b.label for b in cfg.bots if b.name == "s7")]
        assert any(s7 in g.version_ids for g in queue), "the killed run leaves games of s7 pending"
    # s7 retires while no run is on
    path.write_text(path.read_text().replace("  - {name: s7, command: python3 bot.py s7}\n", ""))
    return path


def copy_league(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    path = dst / "league.yaml"
    path.write_text(path.read_text().replace(str(src), str(dst)))
    return path


def state(schedule: AdaptiveSchedule) -> dict[str, Any]:
    mm = schedule.mm
    n = len(mm.ids)
    by_round = {}
    for r, parts in mm._pending.items():
        counts = np.zeros((n, n))
        for winners, losers, weights in parts:
            np.add.at(counts, (winners, losers), weights)
        by_round[r] = counts.tolist()
    return {"ids": list(mm.ids), "active": list(mm.active), "games": mm.games[:n].tolist(), "by_size": mm.by_size[:n].tolist(),
            "rounds": mm.rounds, "results": mm.results, "wins": mm.wins[:n, :n].tolist(), "by_round": by_round,
            "seen": mm._seen_upto, "scheduled": schedule.scheduled, "start": schedule.start,
            "round_of": dict(schedule.round_of), "versions_of": {s: tuple(v) for s, v in schedule.versions_of.items()},
            "outstanding": dict(schedule.outstanding), "labels": dict(schedule.labels)}


@pytest.mark.parametrize("first_id", [1, 70_000])
def test_the_array_rebuild_equals_the_per_game_replay(tmp_path: Path, first_id: int) -> None:
    make_league(tmp_path / "league", first_id)
    chosen, states, stores = [], [], []
    for kind, maker in (("per_game", PerGame), ("arrays", AdaptiveSchedule)):
        path = copy_league(tmp_path / "league", tmp_path / kind)
        cfg = load_config(path)
        with LeagueStore(cfg.store) as store:
            store.bind(cfg)
            ids = store.register_versions(cfg.bots)
            schedule = maker(cfg, store, ids)
            states.append(state(schedule))
            pending = [g for g in store.pending_games() if g.seq in schedule.round_of]
            record(store, schedule, pending, strengths(store))
            rounds = []
            for _ in range(6):
                got = schedule.next_games() or []
                rounds.append([(g.seq, g.game_id, g.seed, g.round, g.version_ids) for g in got])
                record(store, schedule, got, strengths(store))
            chosen.append(rounds)
            stores.append(sorted(tuple(r) for r in store.db.execute("SELECT seq, id, status FROM games")))
    per_game, arrays = states
    assert per_game == arrays
    # the league has what the test is about
    assert per_game["start"] > 0 and -1 in per_game["by_round"]  # a round robin's results
    assert per_game["round_of"] and per_game["scheduled"] > 0  # games in flight
    statuses = {status for _, _, status in stores[0]}
    assert statuses == {"done", "dropped"}
    by_round = per_game["by_round"]
    assert any((np.asarray(m) % 1 == 0.5).any() for m in by_round.values())  # ties
    assert chosen[0] == chosen[1] and all(chosen[0])
    assert stores[0] == stores[1]
