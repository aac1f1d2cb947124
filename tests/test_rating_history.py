"""The rating history (harness.report.history): the same values as fitting every prefix from
scratch, a cache in the store that is never reused once stale (games finishing out of schedule
order, a dropped game played later with a lower seq), and `harness serve`'s index following new
games with it."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from harness.league.config import LeagueConfig, load_config
from harness.league.ratings_fit import fit_ratings
from harness.league.store import GameOutcome, LeagueStore
from harness.report import history
from harness.report.history import marks, rating_history
from harness.report.html import HISTORY_SHOWN, ReportPages
from harness.report.live import LiveLeague

HARNESS = str(Path(sys.executable).parent / "harness")
SKILL = [30.0, 27.0, 25.0, 23.0, 20.0, 18.0]


def league(tmp_path: Path, bots: int = 6) -> LeagueConfig:
    path = tmp_path / "h.yaml"
    lines = "".join(f"  - {{name: b{i}, command: 'true'}}\n" for i in range(bots))
    path.write_text(f"name: h\ngame: epizodiak\nplayers: 3\nschedule: adaptive\nstore: {tmp_path / 'h.sqlite'}\n"
                    f"bots:\n{lines}")
    return load_config(str(path), strict=False)


def plan(store: LeagueStore, config: LeagueConfig, games: int, seed: int = 1) -> list[tuple[int, list[int]]]:
    """``games`` pending 3-seat games between random bots: their (seq, version ids by seat)."""
    store.bind(config)
    ids = list(store.register_versions(config.bots).values())
    rng = random.Random(seed)
    seatings = [rng.sample(ids, 3) for _ in range(games)]
    rows = [(f"g-{seed}-{i}", i, 3, i, json.dumps(s)) for i, s in enumerate(seatings)]
    return list(zip(store.add_games(rows), seatings))


def record(store: LeagueStore, games: list[tuple[int, list[int]]], rng: random.Random, upset: bool = False) -> None:
    """Finish ``games``: ranked by skill plus noise (``upset``: the weakest bot first, by far)."""
    outcomes = []
    for seq, seats in games:
        perf = [SKILL[(v - 1) % len(SKILL)] + rng.gauss(0, 4) for v in seats]
        if upset:
            perf = [-p for p in perf]
        order = sorted(range(3), key=lambda s: -perf[s])
        ranks = [order.index(s) for s in range(3)]
        game_id = store.db.execute("SELECT id FROM games WHERE seq = ?", (seq,)).fetchone()[0]
        outcomes.append((seq, GameOutcome(game_id, ranks, [2 - r for r in ranks], "rules")))
    assert len(store.record_many(outcomes)) == len(games)


def from_scratch(store: LeagueStore, config: LeagueConfig) -> dict[int, list[tuple[int, float]]]:
    """The history by definition: the fit of the first n finished games in seq order, for each mark."""
    rows = store.db.execute("SELECT s.game_seq, s.version_id, s.rank FROM seats s JOIN games g ON g.seq = s.game_seq "
                            "WHERE g.status = 'done' ORDER BY s.game_seq, s.seat").fetchall()
    games: dict[int, tuple[list[int], list[int]]] = {}
    for seq, version, rank in rows:
        games.setdefault(seq, ([], []))[0].append(version)
        games[seq][1].append(rank)
    ordered = [games[s] for s in sorted(games)]
    r = config.rating
    out: dict[int, list[tuple[int, float]]] = {}
    for n in marks(len(ordered)):
        for vid, (mu, _) in fit_ratings(ordered[:n], mu=r.mu, sigma=r.sigma, beta=r.beta).items():
            out.setdefault(vid, []).append((n, mu))
    return out


def assert_same(got: dict[int, list[tuple[int, float]]], want: dict[int, list[tuple[int, float]]]) -> None:
    assert set(got) == set(want)
    for vid in want:
        assert [n for n, _ in got[vid]] == [n for n, _ in want[vid]], vid
        assert max(abs(a[1] - b[1]) for a, b in zip(got[vid], want[vid])) < 1e-4, vid


def cached(store: LeagueStore) -> list[tuple[int, int, bool, bool]]:
    return [(r[0], r[1], r[2] is not None, r[3] is not None) for r in
            store.db.execute("SELECT games, last_seq, mu, totals FROM rating_history ORDER BY games")]


def count_fits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import harness.league.ratings_fit as ratings_fit

    calls: list[int] = []
    real = ratings_fit.fit_skills

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ratings_fit, "fit_skills", counting)
    return calls


def test_marks_stay_marks_as_the_league_grows() -> None:
    assert marks(0) == [] and marks(7) == [1, 2, 3, 4, 5, 6, 7] and marks(31) == [2, 4, 6, *range(8, 31, 2), 31]
    for total in range(1, 5000, 37):
        now = marks(total)
        assert len(now) <= history.POINTS + 1 and now[-1] == total
        for later in (total + 1, total * 2 + 1, total * 3 + 5):
            # a point of the bigger league that the smaller one had reached was a point then too:
            # fitted once, it is never fitted again
            assert {m for m in marks(later)[:-1] if m <= total} <= set(now)


def test_history_equals_the_fit_of_every_prefix_from_scratch_as_games_come_in(tmp_path, monkeypatch) -> None:
    config = league(tmp_path)
    rng = random.Random(5)
    with LeagueStore(config.store) as store:
        games = plan(store, config, 150)
        record(store, games[:40], rng)
        assert_same(rating_history(store, config.rating), from_scratch(store, config))
        assert cached(store)[-1][:2] == (40, games[39][0])  # settled: its totals kept
        fits = count_fits(monkeypatch)
        assert_same(rating_history(store, config.rating), from_scratch(store, config))
        assert fits == []  # nothing new: every point from the cache
        record(store, games[40:47], rng)
        assert_same(rating_history(store, config.rating), from_scratch(store, config))
        new_points = [m for m in marks(47) if m > 40]
        assert len(fits) == len(new_points)  # only the points past the cached totals were fitted
        record(store, games[47:], rng)
        assert_same(rating_history(store, config.rating), from_scratch(store, config))
        # the cache holds the chart's points and one set of totals, at the last game
        assert cached(store)[-1] == (150, games[-1][0], True, True)
        assert {n for n, *_ in cached(store)} == set(marks(150))
        assert sum(t for *_, t in cached(store)) == 1
        # other rating parameters: other fits, not these
        other = config.rating.__class__(mu=config.rating.mu, sigma=config.rating.sigma, beta=config.rating.beta * 2)
        assert_same(rating_history(store, config.rating), from_scratch(store, config))
        assert rating_history(store, other) != rating_history(store, config.rating)


def test_a_game_of_lower_seq_finishing_later_is_never_hidden_by_a_cached_prefix(tmp_path) -> None:
    config = league(tmp_path)
    rng = random.Random(9)
    with LeagueStore(config.store) as store:
        games = plan(store, config, 60)
        late = games[3]
        store.drop_pending([late[0]])  # dropped (a bot left the schedule), then planned again later
        record(store, games[:3] + games[4:], rng)
        stale = rating_history(store, config.rating)
        assert_same(stale, from_scratch(store, config))
        assert any(last >= late[0] for _, last, *_ in cached(store))  # prefixes past the dropped game are cached
        store.db.execute("UPDATE games SET status = 'pending' WHERE seq = ?", (late[0],))  # as a re-plan revives it
        record(store, [late], rng, upset=True)
        fresh = rating_history(store, config.rating)
        assert_same(fresh, from_scratch(store, config))
        # the test can fail: the stale prefixes, reused, would give other values
        moved = max(abs(a[1] - b[1]) for v in stale for a, b in zip(stale[v], fresh[v]) if a[0] == b[0])
        assert moved > 0.05
        # the points before the late game's seq stayed valid, the rest were fitted again and cached
        assert {n for n, *_ in cached(store)} == set(marks(60))


def test_ignoring_validity_would_reuse_a_stale_prefix(tmp_path, monkeypatch) -> None:
    """The check above is what keeps the values right: with it switched off, they are wrong."""
    config = league(tmp_path)
    rng = random.Random(9)
    with LeagueStore(config.store) as store:
        games = plan(store, config, 60)
        late = games[3]
        store.drop_pending([late[0]])
        record(store, games[:3] + games[4:], rng)
        rating_history(store, config.rating)
        store.db.execute("UPDATE games SET status = 'pending' WHERE seq = ?", (late[0],))
        record(store, [late], rng, upset=True)
        monkeypatch.setattr(history, "_valid_prefix", lambda store, entries, total: len(entries))
        wrong = rating_history(store, config.rating)
        want = from_scratch(store, config)
        assert max(abs(a[1] - b[1]) for v in want for a, b in zip(wrong[v], want[v])) > 0.05


def test_a_pending_game_of_lower_seq_keeps_later_prefixes_out_of_the_cache(tmp_path) -> None:
    config = league(tmp_path)
    rng = random.Random(11)
    with LeagueStore(config.store) as store:
        games = plan(store, config, 50)
        record(store, games[:10] + games[11:], rng)  # game 11 still playing (a slow worker)
        assert_same(rating_history(store, config.rating), from_scratch(store, config))
        assert all(last < games[10][0] for _, last, *_ in cached(store))  # only settled prefixes are kept
        assert cached(store)[-1][:2] == (10, games[9][0]) and cached(store)[-1][3]
        record(store, [games[10]], rng, upset=True)
        assert_same(rating_history(store, config.rating), from_scratch(store, config))


def test_a_busy_store_gives_the_history_without_caching_it(tmp_path) -> None:
    config = league(tmp_path)
    with LeagueStore(config.store) as store:
        record(store, plan(store, config, 30), random.Random(2))
        other = sqlite3.connect(config.store, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the store
        try:
            start = time.monotonic()
            assert_same(rating_history(store, config.rating), from_scratch(store, config))
            assert time.monotonic() - start < 10
            assert cached(store) == []
        finally:
            other.execute("ROLLBACK")
            other.close()
        rating_history(store, config.rating)
        assert cached(store)


def test_a_schema_2_store_gains_the_cache_when_opened(tmp_path) -> None:
    config = league(tmp_path)
    with LeagueStore(config.store) as store:
        record(store, plan(store, config, 20), random.Random(3))
    db = sqlite3.connect(config.store, isolation_level=None)
    db.execute("DROP TABLE rating_history")
    db.execute("PRAGMA user_version=2")
    db.close()
    with LeagueStore(config.store, create=False) as store:
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == 3
        assert_same(rating_history(store, config.rating), from_scratch(store, config))
        assert cached(store)


def test_the_index_draws_the_tables_first_bots_and_says_so(tmp_path) -> None:
    config = league(tmp_path, bots=14)
    with LeagueStore(config.store) as store:
        record(store, plan(store, config, 300), random.Random(4))
        html = ReportPages(config, store).index()
    svg = html[html.index('<svg id="history"'):html.index("</svg>")]
    assert svg.count("<polyline") == HISTORY_SHOWN
    note = re.search(r'id="history-note">([^<]*)<', html)
    assert note and note.group(1) == f"the first {HISTORY_SHOWN} of 14 bots in the table's order"
    standings = re.findall(r'<tr data-bot="([^"]+)">', html)
    legend = re.findall(r'font-size="12" fill="[^"]+">(b\d+)@', svg)
    assert set(legend) == set(standings[:HISTORY_SHOWN])


def test_the_live_index_shows_the_new_history_after_new_games(tmp_path) -> None:
    config = league(tmp_path)
    rng = random.Random(6)
    with LeagueStore(config.store) as store:
        games = plan(store, config, 120)
        record(store, games[:60], rng)
    live = LiveLeague(config)
    status, first, _ = live.index()
    assert status == 200 and "games played → 60<" in first
    with LeagueStore(config.store) as store:
        record(store, games[60:], rng)
    status, second, _ = live.index()
    assert status == 200 and "games played → 120<" in second
    with LeagueStore(config.store) as store:
        want = from_scratch(store, config)
    top = max(want, key=lambda v: want[v][-1][1])
    assert f"{want[top][-1][1]:.1f}</text>" in second


def test_harness_serve_follows_new_games_in_the_history(tmp_path) -> None:
    """Real processes: `harness serve` on a store another process keeps writing."""
    config = league(tmp_path)
    rng = random.Random(8)
    with LeagueStore(config.store) as store:
        games = plan(store, config, 200)
        record(store, games[:100], rng)
    serve = subprocess.Popen([HARNESS, "serve", config.path, "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", serve.stdout.readline() if serve.stdout else "")
        assert found
        url = found.group(0)

        def get(path: str) -> str:
            with urllib.request.urlopen(url + path, timeout=60) as response:
                return response.read().decode()

        def index_with(text: str) -> str:
            """The index once it shows ``text``: a load waits 2 s for a render of the league as it
            is, then gets the last one made (or says the first is being prepared) - on a loaded
            machine a render takes longer, so the page is asked for again, as its own refresh does."""
            deadline = time.monotonic() + 60
            page = get("index.html")
            while text not in page and time.monotonic() < deadline:
                time.sleep(0.2)
                page = get("index.html")
            return page

        assert "games played → 100<" in index_with("games played → 100<")
        with LeagueStore(config.store) as store:
            record(store, games[100:150], rng)
            want = from_scratch(store, config)
        page = index_with("games played → 150<")
        assert "games played → 150<" in page
        top = max(want, key=lambda v: want[v][-1][1])
        assert f"{want[top][-1][1]:.1f}</text>" in page
        assert json.loads(get("api/status"))["done"] == 150
        with LeagueStore(config.store) as store:
            assert cached(store)[-1][:2] == (150, games[149][0])  # the server kept what it fitted
    finally:
        serve.terminate()
        serve.wait(timeout=20)
