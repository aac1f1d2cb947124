"""The statistics computed from arrays, at any scale: clustered by the right duplicate sets, the
same numbers as a per-game reference, the delta method agreeing with the bootstrap it stands in
for, head to head checked by hand, and the report's index matrix bounded at many bots."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.league.queries import GameArrays
from harness.report import statistics
from harness.report.statistics import GameRow, bot_intervals, head_to_head, seat_bias

# -- a per-game reference: the statistics as first written, one Python object per game -------------


def _reference_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    chunks = []
    for done in range(0, resamples, 100):
        k = min(100, resamples - done)
        chunks.append(rng.poisson(1.0, size=(k, n)) if n > 2000 else rng.multinomial(n, np.full(n, 1 / n), size=k))
    return np.vstack(chunks).astype(np.float64)


def _reference_ci(num: np.ndarray, den: np.ndarray, resamples: int, seed: int) -> list[list[float | None]]:
    w = _reference_weights(num.shape[0], resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (w @ num) / (w @ den)
    out: list[list[float | None]] = []
    for column in boot.T:
        finite = column[np.isfinite(column)]
        out.append([float(x) for x in np.percentile(finite, [2.5, 97.5])] if finite.size else [None, None])
    return out


def _reference_sets(games: list[GameRow]) -> list[list[GameRow]]:
    sets: dict[Any, list[GameRow]] = {}
    for g in games:
        sets.setdefault((g.round, g.seed, frozenset(g.versions)), []).append(g)
    return list(sets.values())


def reference_bot_intervals(games: list[GameRow], resamples: int) -> dict[int, dict[str, Any]]:
    sets = _reference_sets(games)
    bots = sorted({v for g in games for v in g.versions})
    score, rank, count = (np.zeros((len(sets), len(bots))) for _ in range(3))
    for s, group in enumerate(sets):
        for g in group:
            for v, r, sc in zip(g.versions, g.ranks, g.scores):
                score[s, bots.index(v)] += sc
                rank[s, bots.index(v)] += r + 1
                count[s, bots.index(v)] += 1
    score_ci, rank_ci = _reference_ci(score, count, resamples, 0), _reference_ci(rank, count, resamples, 1)
    return {v: {"games": int(count[:, i].sum()), "mean_score": score[:, i].sum() / count[:, i].sum(),
                "mean_score_ci": score_ci[i], "mean_rank": rank[:, i].sum() / count[:, i].sum(),
                "mean_rank_ci": rank_ci[i]} for i, v in enumerate(bots)}


def reference_head_to_head(games: list[GameRow], resamples: int) -> list[dict[str, Any]]:
    acc: dict[tuple[int, int], dict[str, Any]] = {}
    for index, group in enumerate(_reference_sets(games)):
        for g in group:
            for i, j in itertools.permutations(range(g.players), 2):
                a, b = g.versions[i], g.versions[j]
                if a < b:
                    e = acc.setdefault((a, b), {"sets": {}, "wins": 0.0, "games": 0})
                    row = e["sets"].setdefault(index, [0.0, 0.0])
                    row[0] += g.scores[i] - g.scores[j]
                    row[1] += 1
                    e["wins"] += 1.0 if g.ranks[i] < g.ranks[j] else 0.5 if g.ranks[i] == g.ranks[j] else 0.0
                    e["games"] += 1
    out = []
    for (a, b), e in sorted(acc.items()):
        rows = np.array(list(e["sets"].values()))
        out.append({"a": a, "b": b, "games": e["games"], "a_won_share": e["wins"] / e["games"],
                    "score_diff": rows[:, 0].sum() / e["games"],
                    "score_diff_ci": _reference_ci(rows[:, :1], rows[:, 1:], resamples, 0)[0]})
    return out


def reference_seat_bias(games: list[GameRow], resamples: int) -> dict[int, list[dict[str, Any]]]:
    out = {}
    for size in sorted({g.players for g in games}):
        sets = _reference_sets([g for g in games if g.players == size])
        wins, count = np.zeros((len(sets), size)), np.zeros((len(sets), size))
        for s, group in enumerate(sets):
            for g in group:
                for seat, r in enumerate(g.ranks):
                    wins[s, seat] += r == 0
                    count[s, seat] += 1
        cis = _reference_ci(wins, count, resamples, 0)
        out[size] = [{"seat": seat, "games": int(count[:, seat].sum()),
                      "win_rate": wins[:, seat].sum() / count[:, seat].sum(), "win_rate_ci": cis[seat]}
                     for seat in range(size)]
    return out


def assert_same(x: Any, y: Any, tol: float = 1e-9) -> None:
    if isinstance(x, dict):
        assert sorted(x) == sorted(y)
        for k in x:
            assert_same(x[k], y[k], tol)
    elif isinstance(x, list):
        assert len(x) == len(y)
        for a, b in zip(x, y):
            assert_same(a, b, tol)
    elif x is None or y is None:
        assert x is None and y is None
    else:
        assert abs(x - y) <= tol * max(1.0, abs(x)), (x, y)


def mixed_league(rng: random.Random, bots: int, sets: int) -> list[GameRow]:
    """Duplicate sets at 2, 3 and 4 seats with shared places and fractional scores; deal seeds
    repeat across rounds, and some deals of a round seat two different combinations of bots (so
    a set is told apart only by its round, its seed and its versions together)."""
    games, seq = [], 0
    skill = [rng.gauss(0, 1) for _ in range(bots)]
    for s in range(sets):
        n = rng.choice((2, 3, 4))
        combo = rng.sample(range(1, bots + 1), n)
        luck = [rng.gauss(0, 1) for _ in range(n)]
        for order in itertools.permutations(combo):
            perf = [round(skill[b - 1] + luck[i] + rng.gauss(0, 1), 1) for i, b in enumerate(order)]
            ranks = tuple(sorted(perf, reverse=True).index(x) for x in perf)
            games.append(GameRow(seq, s // 20, s % 7, tuple(order), ranks,
                                 tuple(n - 1 - r + rng.choice((0.0, 0.5)) for r in ranks)))
            seq += 1
    return games


def test_the_array_statistics_are_the_per_game_reference_s_numbers():
    games = mixed_league(random.Random(2), 7, 150)
    # the grouping key matters: (round, seed) alone merges sets, and a seed alone more of them
    assert len({g.seed for g in games}) < len({(g.round, g.seed) for g in games}) < len(_reference_sets(games))
    assert_same(bot_intervals(games, resamples=300), reference_bot_intervals(games, 300))
    assert_same(head_to_head(games, resamples=200), reference_head_to_head(games, 200))
    assert_same(seat_bias(games, resamples=200), reference_seat_bias(games, 200))
    # the arrays of the same games (as a store query returns them) give the same numbers
    arrays = statistics.as_arrays(games)
    assert [t.versions.shape[1] for t in arrays] == [2, 3, 4]
    assert_same(bot_intervals(arrays, resamples=300), bot_intervals(games, resamples=300))


def test_head_to_head_shares_and_differences_on_an_explicit_league():
    games = [GameRow(0, 0, 1, (1, 2, 3), (0, 1, 2), (5.0, 3.0, 1.0)),   # set A
             GameRow(1, 0, 1, (3, 2, 1), (0, 0, 2), (4.0, 4.0, 0.0)),   # set A: 3 and 2 level
             GameRow(2, 0, 2, (1, 2), (1, 0), (0.0, 2.0)),              # set B
             GameRow(3, 0, 2, (2, 1), (1, 0), (1.0, 3.0))]              # set B
    pairs = head_to_head(games, method="delta")
    got = {(p["a"], p["b"]): (p["games"], p["a_won_share"], p["score_diff"]) for p in pairs}
    assert got == {(1, 2): (4, 0.5, -0.5), (1, 3): (2, 0.5, 0.0), (2, 3): (2, 0.75, 1.0)}
    # (1, 2): set sums of the difference -2 and 0 over 2 games each, so residuals -1 and +1:
    # the variance 2 / 4^2 and the interval -0.5 +- 1.96 sqrt(1/8)
    low, high = pairs[0]["score_diff_ci"]
    assert abs(low - (-0.5 - statistics.Z95 * math.sqrt(1 / 8))) < 1e-12
    assert abs(high - (-0.5 + statistics.Z95 * math.sqrt(1 / 8))) < 1e-12
    assert pairs[1]["score_diff_ci"] == [0.0, 0.0]  # one shared set: no spread to measure
    assert [(p["a"], p["b"]) for p in head_to_head(games, among=[2, 3])] == [(2, 3)]
    assert head_to_head(games, among=[1]) == []
    per_bot = bot_intervals(games, method="delta")
    assert per_bot[1]["games"] == 4 and per_bot[1]["mean_score"] == 2.0 and per_bot[1]["mean_rank"] == 1.75
    bias = seat_bias(games, method="delta")
    assert [s["win_rate"] for s in bias[3]] == [1.0, 0.5, 0.0] and [s["games"] for s in bias[2]] == [2, 2]
    with pytest.raises(ValueError, match="unknown interval method"):
        bot_intervals(games, method="jackknife")


def _repeated(rng: random.Random, sets: int, own_sets: bool) -> list[GameRow]:
    """Two bots, each set one deal played 6 times with the same outcome (its games as correlated
    as games can be); ``own_sets``: the same games, each given its own deal."""
    games = []
    for s in range(sets):
        first = rng.random() < 0.6
        for k in range(6):
            seed = 6 * s + k if own_sets else s
            ranks = (0, 1) if first else (1, 0)
            games.append(GameRow(len(games), 0, seed, (1, 2), ranks, (1.0 - ranks[0], 1.0 - ranks[1])))
    return games


def _width(ci: list[float | None]) -> float:
    assert ci[0] is not None and ci[1] is not None
    return ci[1] - ci[0]


def test_intervals_are_clustered_by_duplicate_set_not_by_game():
    """Six identical games per set are one observation, not six: the clustered interval is
    sqrt(6) times wider than if each game were its own set (exactly so for the delta method)."""
    grouped, alone = _repeated(random.Random(4), 150, False), _repeated(random.Random(4), 150, True)
    for method, tolerance in (("delta", 1e-9), ("bootstrap", 0.15)):
        ratio = (_width(bot_intervals(grouped, method=method)[1]["mean_score_ci"])
                 / _width(bot_intervals(alone, method=method)[1]["mean_score_ci"]))
        assert abs(ratio / math.sqrt(6) - 1) <= tolerance, (method, ratio)
        pair = (_width(head_to_head(grouped, method=method)[0]["score_diff_ci"])
                / _width(head_to_head(alone, method=method)[0]["score_diff_ci"]))
        assert abs(pair / math.sqrt(6) - 1) <= tolerance, (method, pair)
        seat = (_width(seat_bias(grouped, method=method)[2][0]["win_rate_ci"])
                / _width(seat_bias(alone, method=method)[2][0]["win_rate_ci"]))
        assert abs(seat / math.sqrt(6) - 1) <= tolerance, (method, seat)


def synthetic_arrays(games: int, bots: int, seed: int = 1) -> list[GameArrays]:
    """3-seat duplicate sets drawn from TrueSkill's model with a deal's luck per seat, as arrays."""
    orders = np.array(list(itertools.permutations(range(3))))
    rng = np.random.default_rng(seed)
    skill = rng.normal(25, 5, bots)
    n_sets = games // 6
    trio = np.argpartition(rng.random((n_sets, bots)), 3, axis=1)[:, :3]
    seat = trio[:, orders].reshape(-1, 3)
    set_of = np.repeat(np.arange(n_sets), 6)
    luck = rng.normal(0, 2.5, (n_sets, 3))
    perf = skill[seat] + luck[set_of] + rng.normal(0, 3.4, seat.shape)
    ranks = np.argsort(np.argsort(-perf, axis=1), axis=1)
    return [GameArrays(seat + 1, ranks, (2 - ranks) * 1.5, np.arange(len(seat)), set_of // 1000,
                       rng.integers(0, 2**53, n_sets)[set_of])]


def _agreement(boot: list[list[float | None]], delta: list[list[float | None]]) -> np.ndarray:
    """Per interval: the larger endpoint difference as a share of the delta interval's width."""
    return np.array([max(abs(b[0] - d[0]), abs(b[1] - d[1])) / (d[1] - d[0])  # type: ignore[operator]
                     for b, d in zip(boot, delta) if d[1] - d[0] > 0])  # type: ignore[operator]


def test_the_delta_method_agrees_with_the_bootstrap_on_a_mid_size_league(monkeypatch):
    """5,000 sets of 40 bots (375 sets per bot): the two methods' intervals agree within 10% of
    their width at every bot and seat (the bootstrap's own noise at 2,000 resamples is ~2%), and
    for head-to-head pairs (~19 shared sets each) within 10% at the 95th percentile."""
    arrays = synthetic_arrays(30_000, 40)
    boot = bot_intervals(arrays, resamples=2000, method="bootstrap")
    delta = bot_intervals(arrays, method="delta")
    for key in ("mean_score_ci", "mean_rank_ci"):
        share = _agreement([boot[v][key] for v in boot], [delta[v][key] for v in boot])
        assert len(share) == 40 and share.max() < 0.10, (key, share.max())
    boot_seats = seat_bias(arrays, resamples=2000, method="bootstrap")[3]
    delta_seats = seat_bias(arrays, method="delta")[3]
    assert _agreement([s["win_rate_ci"] for s in boot_seats], [s["win_rate_ci"] for s in delta_seats]).max() < 0.10
    boot_pairs = head_to_head(arrays, resamples=2000, method="bootstrap")
    delta_pairs = head_to_head(arrays, method="delta")
    assert [(p["a"], p["b"], p["games"]) for p in boot_pairs] == [(p["a"], p["b"], p["games"]) for p in delta_pairs]
    share = _agreement([p["score_diff_ci"] for p in boot_pairs], [p["score_diff_ci"] for p in delta_pairs])
    assert len(share) > 700 and np.percentile(share, 95) < 0.10 and share.max() < 0.25
    # "auto" takes the bootstrap up to MAX_BOOTSTRAP_SETS sets and the delta method past it
    assert bot_intervals(arrays, resamples=2000, method="auto") == boot
    monkeypatch.setattr(statistics, "MAX_BOOTSTRAP_SETS", 4999)
    assert bot_intervals(arrays, method="auto") == delta
    assert head_to_head(arrays, method="auto", among=[1, 2, 3]) == [p for p in delta_pairs
                                                                    if p["a"] in (1, 2, 3) and p["b"] in (1, 2, 3)]


def _synthetic_store(tmp_path: Path, bots: int, sets: int) -> Path:
    """A league of ``bots`` bots written straight into its store: ``sets`` duplicate sets of 3."""
    from harness.league.config import load_config
    from harness.league.store import LeagueStore

    path = tmp_path / "many.yaml"
    path.write_text(f"name: many\ngame: epizodiak\nplayers: 3\nschedule: adaptive\nstore: {tmp_path / 'm.sqlite'}\n"
                    "bots:\n" + "".join(f"  - {{name: b{i:02d}, command: 'true'}}\n" for i in range(bots)))
    cfg = load_config(str(path), strict=False)
    rng = random.Random(3)
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        ids = store.register_versions(cfg.bots)
        version = [ids[b.label] for b in cfg.bots]
        seq = 0
        with store.transaction():
            for s in range(sets):
                trio = rng.sample(version, 3)
                for order in itertools.permutations(trio):
                    seq += 1
                    ranks = sorted(range(3), key=lambda i: -(order[i] + rng.gauss(0, 8)))
                    store.db.execute("INSERT INTO games (seq, id, round, players, seed, status, ended_by, decisions, "
                                     "seconds, finished_at, versions) VALUES (?, ?, 0, 3, ?, 'done', 'rules', 10, 0.01, "
                                     "'2026-11-24T00:00:00', ?)", (seq, f"g{seq}", s, json.dumps(list(order))))
                    for seat, v in enumerate(order):
                        rank = ranks.index(seat)
                        store.db.execute("INSERT INTO seats (game_seq, seat, version_id, rank, score, forfeited) "
                                         "VALUES (?, ?, ?, ?, ?, 0)", (seq, seat, v, rank, 2 - rank))
    return path


def test_the_index_shows_the_head_to_head_of_the_table_s_first_bots_only(tmp_path):
    from harness.league.config import load_config
    from harness.league.store import LeagueStore
    from harness.report.html import H2H_SHOWN, ReportPages
    from harness.report.tables import league_table

    cfg = load_config(str(_synthetic_store(tmp_path, 26, 400)), strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        # the store's arrays give what the per-game rows give
        arrays, rows = statistics.load_arrays(store), statistics.load_games(store)
        assert_same(head_to_head(arrays, resamples=100), head_to_head(rows, resamples=100))
        assert_same(seat_bias(arrays, resamples=100), seat_bias(rows, resamples=100))
        table = [r.bot for r in league_table(store, cfg)]
        html = ReportPages(cfg, store).index()
    matrix = html[html.index('<table id="h2h">'):]
    matrix = matrix[:matrix.index("</table>")]
    header = re.findall(r"<th>([^<]*)</th>", matrix[:matrix.index("</thead>")])
    assert header[0] == "" and [h.split("@")[0] for h in header[1:]] == table[:H2H_SHOWN]  # the table's order
    assert matrix.count("<tr>") == H2H_SHOWN + 1
    assert f"The first {H2H_SHOWN} of 26 bots in the table's order" in html and "harness h2h" in html


def test_h2h_top_and_bot_narrow_the_matrix_to_the_table_s_first_bots_and_a_bot_s_opponents(tmp_path):
    from click.testing import CliRunner

    from harness.cli import cli
    from harness.league.config import load_config
    from harness.league.store import LeagueStore
    from harness.report.tables import league_table

    config = _synthetic_store(tmp_path, 12, 200)
    cfg = load_config(str(config), strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        order = [f"{r.bot}@{r.version}" for r in league_table(store, cfg)]
        everything = {(p["a"], p["b"]): p for p in head_to_head(statistics.load_arrays(store))}
        names = {r.id: f"{r.name}@{r.version}" for r in store.versions()}

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli, ["h2h", str(config), *args], terminal_width=400)
        assert result.exit_code == 0, result.output
        return result.output

    header = run("--top", "4").splitlines()[1].split()
    assert sorted(header) == sorted(order[:4])  # the table's first four, whatever their names
    last = order[-1].split("@")[0]
    assert sorted(run("--top", "3", "--bot", last).splitlines()[1].split()) == sorted(order[:3] + [order[-1]])
    lines = run("--bot", last).splitlines()[1:]
    mine = [(a, b) for (a, b) in everything if order[-1] in (names[a], names[b])]
    assert len(lines) == len(mine) > 0 and all(line.startswith(f"{order[-1]} vs ") for line in lines)
    a, b = mine[0]
    p = everything[(a, b)]
    other = names[b] if names[a] == order[-1] else names[a]
    share = p["a_won_share"] if names[a] == order[-1] else 1 - p["a_won_share"]
    line = next(x for x in lines if f" vs {other} " in x)
    assert f"{share:.2f} ({p['games']})" in line
    refused = CliRunner().invoke(cli, ["h2h", str(config), "--bot", "nobody"])
    assert refused.exit_code == 2 and "no bot named 'nobody'" in refused.output
