"""`harness serve`'s table kept up to date as games are recorded (harness.report.standing) equals
`harness table` from scratch: after games recorded in parts, duplicate sets split between
refreshes, games finishing out of schedule order, violations and a bot that joins later; on
both sides of the bootstrap/delta switch; and the live index shows the new games."""

from __future__ import annotations

import json
import random
from itertools import permutations
from pathlib import Path

import pytest

from harness.league import ratings_fit
from harness.league.config import LeagueConfig, load_config
from harness.league.store import GameOutcome, LeagueStore
from harness.report import statistics
from harness.report.live import LiveLeague
from harness.report.standing import Standing
from harness.report.tables import TableRow, league_table

#: the warm-started fit keeps the earlier fit's prior spread and data weight while one EM step
#: moves the spread less than 1% (harness.league.ratings_fit.Warm); from scratch the EM stops at
#: a change under 1% too, so the two answers lie within that band of the same fixed point. At
#: these sizes (tens of games a bot) that band moves mu by ~0.01 (1,000,000 games: 6e-5), sigma
#: by ~0.1% and P(>next) by ~0.003; the bounds are a few times those
MU_TOLERANCE, SIGMA_TOLERANCE, P_TOLERANCE = 0.05, 0.01, 0.02
#: the delta method's kept sums give sum (x - r n)^2 as Sxx - 2 r Sxn + r^2 Snn: exact but for
#: rounding, which the square root lifts to ~sqrt(1e-16 Sxx) / n (3e-8 here)
CI_TOLERANCE = 1e-6


def league(tmp_path: Path, bots: int) -> LeagueConfig:
    path = tmp_path / "s.yaml"
    lines = "".join(f"  - {{name: b{i:02d}, command: 'true'}}\n" for i in range(bots))
    path.write_text(f"name: s\ngame: epizodiak\nplayers: 3\nschedule: adaptive\nstore: {tmp_path / 's.sqlite'}\n"
                    f"bots:\n{lines}")
    return load_config(str(path), strict=False)


def plan_sets(store: LeagueStore, config: LeagueConfig, sets: int, rng: random.Random, first_round: int = 0
              ) -> list[tuple[int, list[int]]]:
    """``sets`` duplicate sets (3 bots, one deal in all 6 seat orders) pending: (seq, versions by seat)."""
    store.bind(config)
    ids = list(store.register_versions(config.bots).values())
    rows, seatings = [], []
    for s in range(sets):
        trio = rng.sample(ids, 3)
        deal = rng.randrange(1 << 50)
        for k, order in enumerate(permutations(trio)):
            rows.append((f"g-{first_round + s}-{k}-{deal}", first_round + s, 3, deal, json.dumps(list(order))))
            seatings.append(list(order))
    return list(zip(store.add_games(rows), seatings))


def record(store: LeagueStore, games: list[tuple[int, list[int]]], rng: random.Random) -> None:
    """Finish ``games``: ranked by skill (the version id) plus noise; every 17th with a violation."""
    outcomes = []
    for seq, seats in games:
        perf = [v * 0.8 + rng.gauss(0, 4) for v in seats]
        order = sorted(range(3), key=lambda s: -perf[s])
        ranks = [order.index(s) for s in range(3)]
        game_id = store.db.execute("SELECT id FROM games WHERE seq = ?", (seq,)).fetchone()[0]
        violations = [{"kind": "timeout", "detail": "late", "seat": 1, "decision": 0}] if seq % 17 == 0 else []
        forfeits = [2] if seq % 23 == 0 else []
        outcomes.append((seq, GameOutcome(game_id, ranks, [2 - r for r in ranks], "rules", forfeits, violations)))
    assert len(store.record_many(outcomes)) == len(games)


def assert_same_table(got: list[TableRow], want: list[TableRow], exact: bool) -> None:
    assert [(r.bot, r.version, r.games, r.wins, r.violations, r.current) for r in sorted(got, key=lambda r: r.bot)] == \
        [(r.bot, r.version, r.games, r.wins, r.violations, r.current) for r in sorted(want, key=lambda r: r.bot)]
    mine = {r.bot: r for r in got}
    mu, sigma, p = (0.0, 0.0, 0.0) if exact else (MU_TOLERANCE, SIGMA_TOLERANCE, P_TOLERANCE)
    for w in want:
        g = mine[w.bot]
        assert g.mu == pytest.approx(w.mu, abs=mu + 1e-9), w.bot
        assert g.sigma == pytest.approx(w.sigma, rel=sigma + 1e-9), w.bot
        assert g.mean_rank == pytest.approx(w.mean_rank), w.bot
        assert g.mean_score == pytest.approx(w.mean_score), w.bot
        for a, b in ((g.mean_score_ci, w.mean_score_ci), (g.mean_rank_ci, w.mean_rank_ci)):
            assert a == pytest.approx(b, abs=CI_TOLERANCE), w.bot  # the same intervals
        if w.p_better is not None and g.p_better is not None and not exact:
            # a neighbour can differ where two bots are level within the tolerance: compare by pair
            continue
        assert g.p_better == pytest.approx(w.p_better, abs=p + 1e-9), w.bot
    # the order is the fit's: a swap only between bots level within the tolerance
    for above, below in zip(got, got[1:]):
        assert above.mu >= below.mu - 2 * mu - 1e-9


def refresh_and_compare(standing: Standing, config: LeagueConfig, exact: bool) -> None:
    with LeagueStore(config.store, create=False) as store:
        standing.refresh(store, config.store)
        got = standing.rows(store, config)
        want = league_table(store, config)
        assert_same_table(got, want, exact)
        arrays = statistics.load_arrays(store)
        shown = [r for r in want[:6]]
        ids = {(v.name, v.version): v.id for v in store.versions()}
        among = [ids[(r.bot, r.version)] for r in shown]
    pairs = {(p["a"], p["b"]): p for p in standing.head_to_head(among)}
    for p in statistics.head_to_head(arrays, resamples=200, among=among):
        q = pairs.pop((p["a"], p["b"]))
        assert q["games"] == p["games"] and q["a_won_share"] == pytest.approx(p["a_won_share"])
        assert q["score_diff_ci"] == pytest.approx(p["score_diff_ci"], abs=CI_TOLERANCE)
    assert not pairs
    want_bias = statistics.seat_bias(arrays, resamples=200)
    got_bias = standing.seat_bias()
    assert set(got_bias) == set(want_bias)
    for size in want_bias:
        for a, b in zip(got_bias[size], want_bias[size]):
            assert a["games"] == b["games"] and a["win_rate_ci"] == pytest.approx(b["win_rate_ci"], abs=CI_TOLERANCE)


@pytest.mark.parametrize("delta", [False, True], ids=["bootstrap", "delta"])
def test_the_kept_table_equals_harness_table_from_scratch(tmp_path, monkeypatch, delta) -> None:
    if delta:  # the league is past the bootstrap's sets: the delta method's kept sums
        monkeypatch.setattr(statistics, "MAX_BOOTSTRAP_SETS", 20)
    config = league(tmp_path, 12)
    rng = random.Random(3)
    with LeagueStore(config.store) as store:
        games = plan_sets(store, config, 60, rng)
        record(store, games[:200], rng)
    standing = Standing(config.rating)
    refresh_and_compare(standing, config, exact=True)  # the first read is whole: the same fit
    assert standing.rebuilds == 1
    with LeagueStore(config.store) as store:
        # a set split between refreshes (200 is not a multiple of 6), games finishing out of
        # schedule order (later seqs first, holes below the last seq read filled afterwards)
        record(store, games[260:300], rng)
        record(store, games[200:215], rng)
    refresh_and_compare(standing, config, exact=False)
    with LeagueStore(config.store) as store:
        record(store, games[215:260], rng)
        record(store, games[300:], rng)
    refresh_and_compare(standing, config, exact=False)
    # a bot that joins later, in sets of its own
    bigger = league(tmp_path, 14)
    with LeagueStore(config.store) as store:
        more = plan_sets(store, bigger, 30, rng, first_round=1000)
        record(store, more, rng)
    refresh_and_compare(standing, bigger, exact=False)
    assert standing.rebuilds == 1, "every later refresh took only the new games"
    with LeagueStore(config.store, create=False) as store:
        assert not standing.refresh(store, config.store)  # nothing new: nothing done


def _served(tmp_path: Path, seed: int) -> tuple[LeagueConfig, list[tuple[int, list[int]]], random.Random, LiveLeague]:
    """A league of 8 bots with 20 sets planned and 60 games recorded, served live."""
    config = league(tmp_path, 8)
    rng = random.Random(seed)
    with LeagueStore(config.store) as store:
        games = plan_sets(store, config, 20, rng)
        record(store, games[:60], rng)
    return config, games, rng, LiveLeague(config)


def test_the_live_index_and_status_show_new_games(tmp_path) -> None:
    config, games, rng, live = _served(tmp_path, 4)
    status, page, _ = live.index()
    assert status == 200 and 'id="games-done">60<' in page
    with LeagueStore(config.store) as store:
        record(store, games[60:90], rng)
    status, page, _ = live.index()
    assert status == 200 and 'id="games-done">90<' in page
    # the render's own write (the rating history's cache) is a commit too: the next state is the
    # same page, made at once from the kept table
    again = live.index()[1]
    assert again.count('id="games-done">90<') == 1
    state = json.loads(live.status()[1])
    assert f'data-generation="{state["generation"]}"' in again  # the page does not fetch itself again
    assert state["done"] == 90 and state["rendered"] == state["generation"] and len(state["latest"]) == 20
    with LeagueStore(config.store, create=False) as store:
        want = league_table(store, config)
    for row in want:  # each row's games as harness table counts them
        assert f'data-bot="{row.bot}"' in page
    assert live._standing is not None and live._standing.rebuilds == 1


def test_packed_keys_round_trip_and_a_column_too_wide_is_refused() -> None:
    """The kept sums and the live fit number sets and pairs by keys packed from two columns
    (ratings_live.pack): each key gives its two columns back, and a column that does not fit
    is a ValueError (the table is then read afresh), never a key that collides with another."""
    import numpy as np

    from harness.league.ratings_live import pack, unpack

    rng = np.random.default_rng(3)
    high, low = rng.integers(0, 1 << 39, 1000), rng.integers(0, 1 << 24, 1000)
    keys = pack(high, low, 24, "a set")
    assert (unpack(keys, 24)[0] == high).all() and (unpack(keys, 24)[1] == low).all()
    assert len(set(keys.tolist())) == len(set(zip(high.tolist(), low.tolist())))
    for wide_high, wide_low in ((high, low + (1 << 24)), (high + (1 << 39), low), (high, low - (1 << 30))):
        with pytest.raises(ValueError, match="a set too large to pack"):
            pack(wide_high, wide_low, 24, "a set")


def test_a_fit_made_again_after_the_page_is_a_new_state_of_the_index(tmp_path, monkeypatch) -> None:
    """A refresh's fit may leave its test of the noises' spread until its page is shown
    (Standing.after_page, run after each render): when that test finds a spread to fit, the
    table is fitted again, every step, and the index's state changes, so the page's poll
    fetches the new table; when it holds, or none was due, nothing changes."""
    config, games, rng, live = _served(tmp_path, 5)
    assert live.index()[0] == 200
    standing = live._standing
    assert standing is not None and standing.state is not None
    asked: list[bool] = []
    real_fit = standing.state.fit.fit
    monkeypatch.setattr(standing.state.fit, "fit", lambda defer_test=False: (asked.append(defer_test),
                                                                              real_fit(defer_test))[1])
    with LeagueStore(config.store) as store:
        record(store, games[60:61], rng)
        assert standing.refresh(store, config.store)
    assert asked == [True]  # a refresh leaves the test to after its page
    before, fitted = json.loads(live.status()[1])["generation"], standing.state.fitted
    live._after_render()  # no test due: the same state
    assert standing.refits == 0 and json.loads(live.status()[1])["generation"] == before
    fit = standing.state.fit
    quick: list[int] = []
    real_quick = ratings_fit._quick_fit
    monkeypatch.setattr(ratings_fit, "_quick_fit", lambda *a, **k: (quick.append(1), real_quick(*a, **k))[1])
    fit.noise_test = (lambda: False, 0.0, fit.games)  # a test left by the fit, that finds a spread to fit
    assert standing.after_page() is True  # (what live._after_render runs)
    assert standing.refits == 1 and standing.state.fitted is not fitted
    assert quick == []  # the fit made again was one of every step, not a quick one
    assert json.loads(live.status()[1])["generation"] != before
    assert live.index()[0] == 200
    fit.noise_test = (lambda: True, 0.0, fit.games)  # one that holds: nothing to do
    assert not standing.after_page() and standing.refits == 1
    fit.noise_test = (lambda: False, 0.0, fit.games)  # serve runs the test after each render
    live._after_render()
    assert standing.refits == 2


def test_the_server_makes_the_index_when_games_are_recorded_without_waiting_for_a_poll(tmp_path) -> None:
    """LiveLeague.watch (what harness serve runs): a thread asks the league's state and starts a
    render of a new one, so a page with new games is made without any page asking for it;
    stop_watching ends it (later games wait for a poll again)."""
    import time

    config, games, rng, live = _served(tmp_path, 6)
    assert live.index()[0] == 200
    live.watch(interval=0.02)
    try:
        with LeagueStore(config.store) as store:
            record(store, games[60:72], rng)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            made = live.renderer.last
            if made is not None and 'id="games-done">72<' in made[1]:
                break
            time.sleep(0.02)
        else:
            raise AssertionError("the index was not made from the store's change")
    finally:
        live.stop_watching()
    time.sleep(0.1)
    with LeagueStore(config.store) as store:
        record(store, games[72:78], rng)
    time.sleep(0.5)  # nothing asks: no render (the watch ended)
    made = live.renderer.last
    assert made is not None and 'id="games-done">72<' in made[1]
    assert 'id="games-done">78<' in live.index()[1]  # a page's request makes it


def test_given_games_totals_are_the_store_s_totals_for_every_game(tmp_path) -> None:
    """queries.seat_totals of given games (summed by SQLite per version, as a live refresh reads
    its new games) equals the whole store's totals when given every game, forfeits and
    violations included, and finds exactly the finished ones."""
    from harness.league import queries

    config = league(tmp_path, 8)
    rng = random.Random(7)
    with LeagueStore(config.store) as store:
        games = plan_sets(store, config, 12, rng)
        record(store, games[:60], rng)
        some, found = queries.seat_totals(store, [s for s, _ in games])  # 12 of them not finished
        whole, _ = queries.seat_totals(store)
        one_game = {}
        for seq, _ in games[:3]:  # one game's: a winner's rank sum 0, the others' wins 0
            one_game[seq] = queries.seat_totals(store, [seq])[0]
            rows = store.db.execute("SELECT version_id, rank, forfeited FROM seats WHERE game_seq = ?", (seq,))
            assert one_game[seq] == {v: [1, int(r == 0), r, int(f or 0), one_game[seq][v][4]] for v, r, f in rows}
    assert found == {s for s, _ in games[:60]}
    assert some == whole
    assert any(t[3] for t in whole.values()) and any(t[4] for t in whole.values())  # forfeits, violations


_ARENA_PROBE = """
import ctypes, random, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from test_live_standing import league, plan_sets, record
from harness.league.store import LeagueStore
from harness.report.live import LiveLeague
from harness.report.serve import make_server
config = league(Path({tmp!r}), 5)
rng = random.Random(3)
with LeagueStore(config.store) as store:
    games = plan_sets(store, config, 30, rng)
    record(store, games[:120], rng)
live = make_server(config, "127.0.0.1", 0).live if sys.argv[1] == "serve" else LiveLeague(config)
assert 'games-done">120<' in live.index()[1]
with LeagueStore(config.store) as store:
    record(store, games[120:150], rng)
assert 'games-done">150<' in live.index()[1]  # a quick fit: its second maximum on a thread too
sys.stderr.flush()
ctypes.CDLL(None).malloc_stats()
"""


@pytest.mark.parametrize("made_by", ["serve", "bare"])
def test_the_server_s_threads_allocate_from_one_malloc_arena(tmp_path, made_by) -> None:
    """`harness serve` makes its pages on threads; a thread's own glibc arena gave the fit's large
    arrays back to the system at each free, so every refresh faulted them in again
    (harness.report.arena). The server's process keeps one arena for every thread, the index's
    render and the fit's second maximum included; a LiveLeague made without the server (a
    library user, this test's control) keeps glibc's default, an arena per thread."""
    import subprocess
    import sys

    script = _ARENA_PROBE.format(tests=str(Path(__file__).parent), tmp=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script, made_by], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    arenas = [line for line in done.stderr.splitlines() if line.startswith("Arena ")]
    assert arenas == ["Arena 0:"] if made_by == "serve" else len(arenas) >= 2, done.stderr[-2000:]
