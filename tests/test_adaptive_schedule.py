"""The adaptive schedule in a league store, driven by a fake runner that finishes games in a random order.

The fake runner keeps a window of games in flight and records them in an order drawn from its
own random stream, as workers finishing at their own pace would; "killing" it drops the
games in flight unrecorded. A game's result depends only on its id (a bot ``sN`` has strength N).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.games import ranking_from_keys
from harness.league.config import ConfigError, load_config
from harness.league.schedule_adaptive import AdaptiveSchedule
from harness.league.store import GameOutcome, LeagueStore


def write_config(dir_: Path, names: list[str], schedule: str = "{kind: adaptive}", players: str = "2",
                 extra: str = "") -> Path:
    (dir_ / "bot.py").write_text("print('fake')\n")
    lines = [f"  - {{name: {n}, command: python3 bot.py {n}}}" for n in names]
    path = dir_ / "league.yaml"
    path.write_text(f"name: fake\ngame: dominoes\nplayers: {players}\nworkers: 2\nschedule: {schedule}\n"
                    f"store: {dir_ / 'league.sqlite'}\nbots:\n" + "\n".join(lines) + "\n" + extra)
    return path


def outcome(game_id: str, labels: list[str]) -> GameOutcome:
    rng = random.Random(game_id)
    keys = [int(label.split("@")[0][1:]) + rng.random() * 6 for label in labels]
    return GameOutcome(game_id=game_id, ranking=ranking_from_keys(keys), scores=keys, ended_by="rules")


def drive(path: Path, *, games: int, order_seed: int, window: int = 12, kill_after: int | None = None,
          forever: bool = False) -> tuple[int, str | None]:
    """Play the adaptive league at ``path`` until it stops, ``games`` are recorded by this call, or
    ``kill_after`` are recorded (then stop dead, the games in flight lost). Returns (recorded, stop reason)."""
    cfg = load_config(path)
    store = LeagueStore(cfg.store)
    try:
        store.bind(cfg)
        ids = store.register_versions(cfg.bots)
        source = AdaptiveSchedule(cfg, store, ids, forever=forever)
        labels = {row.id: f"{row.name}@{row.version}" for row in store.versions()}
        queue = store.pending_games()  # left by a killed run: played first
        rng = random.Random(order_seed)
        done = 0
        while done < games:
            if len(queue) < window:
                more = source.next_games()
                if more:
                    queue += more
                elif more is None and not queue:
                    return done, source.stop_reason
            if not queue:
                continue
            g = queue.pop(rng.randrange(min(len(queue), window)))
            result = outcome(g.game_id, [labels[v] for v in g.version_ids])
            if store.record_many([(g.seq, result)]):
                source.recorded(g.seq, g.version_ids, result.ranking)
            else:
                source.dropped(g.seq)
            done += 1
            if kill_after is not None and done >= kill_after:
                return done, "killed"
        return done, None
    finally:
        store.close()


def games_in(path: Path) -> list[tuple[str, str, str]]:
    store = LeagueStore(load_config(path).store)
    try:
        return sorted((r[0], r[1], str(r[2])) for r in store.db.execute(
            "SELECT id, status, (SELECT group_concat(rank) FROM seats WHERE game_seq = seq) FROM games"))
    finally:
        store.close()


def test_killed_and_resumed_it_plays_exactly_the_games_of_an_uninterrupted_run(tmp_path: Path) -> None:
    names = [f"s{i}" for i in range(7)]
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    a = write_config(one, names, "{kind: adaptive, games: 300}", players="[2, 3]")
    b = write_config(two, names, "{kind: adaptive, games: 300}", players="[2, 3]")
    played, reason = drive(a, games=10_000, order_seed=1)
    assert played == 300 and reason is not None and "budget" in reason
    with LeagueStore(load_config(a).store) as sa, LeagueStore(load_config(b).store) as sb:
        sb.set_meta("deal_secret", sa.deal_secret() or "")  # one secret: the same game ids (they are keyed)
    # the other league is killed twice, its games finishing in other orders
    assert drive(b, games=10_000, order_seed=2, kill_after=77)[1] == "killed"
    assert drive(b, games=10_000, order_seed=3, kill_after=101)[1] == "killed"
    rest, reason_b = drive(b, games=10_000, order_seed=4)
    assert reason_b == reason
    assert games_in(a) == games_in(b)  # the same games, each played once, with the same results
    assert all(status == "done" for _, status, _ in games_in(b))
    store = LeagueStore(load_config(b).store)
    assert store.counts() == {"pending": 0, "done": 300, "dropped": 0}
    store.close()


def test_games_stay_balanced_and_every_seat_order_is_played(tmp_path: Path) -> None:
    path = write_config(tmp_path, [f"s{i}" for i in range(9)], "{kind: adaptive, games: 1200}", players="[2, 3]")
    drive(path, games=10_000, order_seed=5)
    store = LeagueStore(load_config(path).store)
    per_bot = {r[0]: r[1] for r in store.db.execute("SELECT version_id, count(*) FROM seats GROUP BY version_id")}
    assert max(per_bot.values()) <= 1.25 * min(per_bot.values())
    sets: dict[tuple[int, str], list[tuple[int, ...]]] = {}
    for seq, _gid, round_, _status, versions, _ranks in store.schedule_log(0):
        seed = store.db.execute("SELECT seed FROM games WHERE seq = ?", (seq,)).fetchone()[0]
        sets.setdefault((round_, str(seed)), []).append(tuple(versions))
    for orders in sets.values():  # one deal = one set, played in every seat order
        k = len(orders[0])
        assert len(orders) == {2: 2, 3: 6}[k] and len(set(orders)) == len(orders)
    store.close()


def test_until_stops_once_the_top_is_ordered(tmp_path: Path) -> None:
    names = ["s0", "s10", "s20", "s30", "s40"]
    path = write_config(tmp_path, names, "{kind: adaptive, until: {top: 2, confidence: 0.95}, games: 5000}")
    played, reason = drive(path, games=10_000, order_seed=6)
    assert reason is not None and reason.startswith("answered: the top 2"), reason
    assert played < 5000
    # it stopped on the table's own P(>next) (the whole table's fit, as `harness table` shows it)
    cfg = load_config(path)
    store = LeagueStore(cfg.store)
    store.bind(cfg)
    answer = AdaptiveSchedule(cfg, store, store.register_versions(cfg.bots)).table_answer()
    store.close()
    assert answer is not None and answer.confidence >= 0.95, answer


def test_a_new_bot_plays_first_and_a_retired_one_is_no_longer_chosen(tmp_path: Path) -> None:
    names = [f"s{i}" for i in range(8)]
    path = write_config(tmp_path, names)
    drive(path, games=400, order_seed=7)
    # the config changes between runs as it would while `harness run` plays (re-read between rounds)
    path.write_text(path.read_text().replace("  - {name: s3, command: python3 bot.py s3}\n", "")
                    + "  - {name: s9, command: python3 bot.py s9}\n")
    cfg = load_config(path)
    store = LeagueStore(cfg.store)
    store.bind(cfg)
    ids = store.register_versions(cfg.bots)
    source = AdaptiveSchedule(cfg, store, ids)
    s3 = next(r.id for r in store.versions() if r.name == "s3")
    s9 = ids[next(b.label for b in cfg.bots if b.name == "s9")]
    assert store.counts()["pending"] == 0 or all(s3 not in g.version_ids for g in store.pending_games())
    chosen = []
    for _ in range(6):
        got = source.next_games()
        assert got is not None
        chosen += got
        for g in got:
            result = outcome(g.game_id, ["s0@x" if v != s9 else "s9@x" for v in g.version_ids])
            store.record_many([(g.seq, result)])
            source.recorded(g.seq, g.version_ids, result.ranking)
    assert all(s3 not in g.version_ids for g in chosen)
    assert chosen[0].version_ids.count(s9) == 1, "the newcomer's sets come first"
    new_games = sum(s9 in g.version_ids for g in chosen)
    assert new_games >= len(chosen) / 3
    # the retired version keeps its games (and so its place in the table)
    assert store.db.execute("SELECT count(*) FROM seats WHERE version_id = ?", (s3,)).fetchone()[0] > 50
    store.close()


def test_a_retired_versions_pending_games_are_dropped(tmp_path: Path) -> None:
    """Its pending games are dropped and no longer count against the ``games`` budget: the
    schedule goes on to play the budget's games without them."""
    names = [f"s{i}" for i in range(6)]
    path = write_config(tmp_path, names, "{kind: adaptive, games: 40}")
    cfg = load_config(path)
    store = LeagueStore(cfg.store)
    store.bind(cfg)
    ids = store.register_versions(cfg.bots)
    source = AdaptiveSchedule(cfg, store, ids)
    queued = (source.next_games() or []) + (source.next_games() or [])
    s5 = ids[cfg.bots[5].label]
    assert any(s5 in g.version_ids for g in queued)
    lines = source.set_roster({k: v for k, v in ids.items() if v != s5})
    assert lines == [f"left: {cfg.bots[5].label} (its games and rating stay)"]
    left = store.pending_games()
    assert left and all(s5 not in g.version_ids for g in left)
    dropped = store.counts()["dropped"]
    assert dropped > 0
    labels = {row.id: f"{row.name}@{row.version}" for row in store.versions()}
    while True:  # the rest of the league, each game played as it is scheduled
        for g in store.pending_games():
            result = outcome(g.game_id, [labels[v] for v in g.version_ids])
            assert store.record_many([(g.seq, result)])
            source.recorded(g.seq, g.version_ids, result.ranking)
        if source.next_games() is None and not store.pending_games():
            break
    assert store.counts() == {"pending": 0, "done": 40, "dropped": dropped}
    assert "budget" in (source.stop_reason or "")
    store.close()


@pytest.mark.parametrize("schedule, message", [
    ("{kind: adaptiv}", "schedule.kind: 'adaptiv' is not allowed (did you mean 'adaptive'?)"),
    ("{kind: adaptive, games: 0}", "schedule.games: 0 is not allowed (allowed: an integer >= 1)"),
    ("{kind: adaptive, until: {top: 3}}", "schedule.until.confidence: missing"),
    ("{kind: adaptive, until: {top: 9, confidence: 0.9}}", "schedule.until.top: 9 needs at least 10 bots"),
    ("{kind: adaptive, until: {top: 2, confidence: 1.5}}", "schedule.until.confidence: 1.5 is not allowed"),
    ("{kind: round_robin, games: 10}", "schedule.games: only used with 'kind: adaptive'"),
    ("{kind: adaptive, budget: 10}", "schedule.budget: unknown key"),
])
def test_a_broken_schedule_is_refused_in_one_line(tmp_path: Path, schedule: str, message: str) -> None:
    path = write_config(tmp_path, ["s1", "s2", "s3"], schedule)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_rounds_belong_to_the_round_robin(tmp_path: Path) -> None:
    path = write_config(tmp_path, ["s1", "s2", "s3"], extra="rounds: 3\n")
    with pytest.raises(ConfigError, match="rounds: only used with the round-robin schedule"):
        load_config(path)
    assert load_config(write_config(tmp_path, ["s1", "s2"], "adaptive")).schedule.adaptive
    assert not load_config(write_config(tmp_path, ["s1", "s2"], "round_robin")).schedule.adaptive


def test_the_local_and_the_dask_executors_play_the_same_adaptive_league(tmp_path: Path) -> None:
    from league_fakes import FAKE

    from harness.league.runner import RunOptions, run_league

    names = [f"s{i}" for i in range(6)]
    summaries, stores = [], []
    for where, dask in (("local", None), ("dask", "local:2")):
        (tmp_path / where).mkdir()
        cfg = load_config(write_config(tmp_path / where, names, "{kind: adaptive, games: 150}", players="[2, 3]"))
        with LeagueStore(cfg.store) as store:  # one secret: the same (keyed) game ids and deals in both
            store.set_meta("deal_secret", "5" * 64)
        summaries.append(run_league(cfg, player=FAKE, progress=False, options=RunOptions(dask=dask)))
        stores.append(cfg.store)
    local, on_dask = summaries
    assert 140 <= local.played == on_dask.played <= 150 and not on_dask.errors
    assert local.finished == on_dask.finished == "the budget of 150 games is played (schedule.games)"
    rows = []
    for store_path in stores:
        with LeagueStore(store_path) as store:
            rows.append([tuple(r) for r in store.db.execute(
                "SELECT g.id, s.seat, s.version_id, s.rank FROM games g JOIN seats s ON s.game_seq = g.seq "
                "ORDER BY g.id, s.seat")])
    assert rows[0] == rows[1]


def test_a_round_robin_turned_adaptive_keeps_its_results_and_drops_its_pending_games(tmp_path: Path) -> None:
    from league_fakes import FAKE

    from harness.league.runner import RunOptions, run_league

    names = [f"s{i}" for i in range(4)]
    path = write_config(tmp_path, names, "round_robin", extra="rounds: 3\n")
    run_league(load_config(path), player=FAKE, progress=False, options=RunOptions(max_games=20))
    path.write_text(path.read_text().replace("schedule: round_robin", "schedule: {kind: adaptive, games: 40}")
                    .replace("rounds: 3\n", ""))
    summary = run_league(load_config(path), player=FAKE, progress=False)
    assert summary.played == 40 and summary.finished is not None
    with LeagueStore(load_config(path).store) as store:
        assert store.counts() == {"pending": 0, "done": 60, "dropped": 12 * 3 - 20}
    # and back: the round robin plans its games again; the adaptive ones stay as results
    path.write_text(path.read_text().replace("schedule: {kind: adaptive, games: 40}", "schedule: round_robin"))
    run_league(load_config(path), player=FAKE, progress=False)
    path.write_text(path.read_text().replace("schedule: round_robin", "schedule: {kind: adaptive, games: 20}"))
    again = run_league(load_config(path), player=FAKE, progress=False)
    assert again.played == 0 and again.finished is not None and "budget" in again.finished


def test_the_rounds_are_chosen_with_one_blas_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fits behind a round run with one BLAS thread (on cores the workers hold, OpenBLAS's
    threads waiting on each other made a 1,000-bot fit several times slower), and the limit is
    lifted after the choice (the harness's environment, which bots inherit, is not touched)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads() -> set[int]:
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    path = write_config(tmp_path, [f"s{i}" for i in range(6)])
    cfg = load_config(path)
    seen: list[set[int]] = []
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        schedule = AdaptiveSchedule(cfg, store, store.register_versions(cfg.bots))
        plan = schedule.mm.plan_round
        monkeypatch.setattr(schedule.mm, "plan_round", lambda: (seen.append(blas_threads()), plan())[1])
        with threadpool_limits(limits=2, user_api="blas"):  # as on any machine of 2 cores or more
            assert blas_threads() == {2}
            assert schedule.next_games()
            assert blas_threads() == {2}
    assert seen == [{1}]
