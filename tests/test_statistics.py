"""The statistics behind the table: intervals that cover the truth at their nominal rate when
games come in correlated duplicate sets, P(better), head-to-head and seat bias on known data."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli
from harness.report.statistics import GameRow, adjacent_better, bot_intervals, head_to_head, seat_bias

REPO = Path(__file__).resolve().parent.parent


def phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def duplicate_league(rng: random.Random, sets: int, skill: float, luck: float = 1.5) -> list[GameRow]:
    """Bots 1 and 2 play duplicate pairs: one deal, both seat orders. The deal's luck favours
    seat 0 in both games, so the two games of a set are correlated (one bot gets it each time)."""
    games = []
    for s in range(sets):
        u = rng.gauss(0, luck)
        for seq, (first, second) in enumerate(((1, 2), (2, 1))):
            perf = (skill if first == 1 else -skill) + u + rng.gauss(0, 1)
            one_wins = (perf > 0) == (first == 1)
            ranks = (0, 1) if one_wins == (first == 1) else (1, 0)
            games.append(GameRow(2 * s + seq, s, s, (first, second), ranks, tuple(1.0 - r for r in ranks)))
    return games


def test_intervals_over_duplicate_sets_cover_the_true_mean_at_their_nominal_rate():
    rng = random.Random(7)
    skill = 0.3
    # bot 1 wins a game when skill +- luck + noise > 0; over both seat orders its expected score is:
    truth = 0.5 * (phi(skill / math.sqrt(1 + 1.5 ** 2)) + phi(skill / math.sqrt(1 + 1.5 ** 2)))
    covered = 0
    reps = 150
    for r in range(reps):
        games = duplicate_league(rng, 60, skill)
        low, high = bot_intervals(games, resamples=300, seed=r)[1]["mean_score_ci"]
        covered += low <= truth <= high
    rate = covered / reps
    assert 0.88 <= rate <= 0.995, rate  # nominal 95%, within the binomial noise of 150 repetitions


def test_a_clearly_better_bot_is_better_with_high_probability_and_equals_are_not():
    rng = random.Random(3)
    games = duplicate_league(rng, 150, 1.0)
    assert adjacent_better(games, [1, 2], resamples=400)[0] > 0.99
    assert adjacent_better(games, [2, 1], resamples=400)[0] < 0.01
    equal = duplicate_league(rng, 150, 0.0)
    p = adjacent_better(equal, [1, 2], resamples=400)[0]
    assert 0.02 < p < 0.98
    pairs = head_to_head(games, resamples=200)
    assert len(pairs) == 1 and pairs[0]["games"] == 300 and pairs[0]["a_won_share"] > 0.6
    low, high = pairs[0]["score_diff_ci"]
    assert 0 < low <= pairs[0]["score_diff"] <= high


def test_seat_bias_sees_a_seat_that_always_wins():
    games = [GameRow(i, i, i, (i % 3, (i + 1) % 3, (i + 2) % 3), (0, 1, 1), (3.0, 0.0, 0.0)) for i in range(30)]
    bias = seat_bias(games, resamples=100)[3]
    assert [round(b["win_rate"], 2) for b in bias] == [1.0, 0.0, 0.0]
    assert bias[0]["win_rate_ci"] == [1.0, 1.0] and all(b["games"] == 30 for b in bias)


def test_table_h2h_and_seats_carry_the_intervals(tmp_path):
    config = tmp_path / "s.yaml"
    bots = REPO / "bots"
    config.write_text(f"name: s\ngame: crisps\nrounds: 6\nworkers: 1\nbots:\n"
                      f"  - {{name: greedy, command: {sys.executable} {bots}/crisps_greedy.py}}\n"
                      f"  - {{name: random, command: {sys.executable} {bots}/random_bot.py}}\n")
    assert CliRunner().invoke(cli, ["run", str(config), "--quiet"]).exit_code == 0
    out = CliRunner().invoke(cli, ["table", str(config), "--format", "json", "--seats"])
    data = json.loads(out.output)
    top, bottom = data["table"]
    assert top["bot"] == "greedy" and len(top["mu_ci"]) == 2 and top["mu_ci"][0] < top["mu"] < top["mu_ci"][1]
    for key in ("mean_score_ci", "mean_rank_ci"):
        low, high = top[key]
        assert low <= top[key.removesuffix("_ci")] <= high
    assert top["p_better"] > 0.9 and bottom["p_better"] is None
    assert [s["seat"] for s in data["seats"]["2"]] == [0, 1]
    h2h = json.loads(CliRunner().invoke(cli, ["h2h", str(config), "--format", "json"]).output)["pairs"]
    assert len(h2h) == 1 and h2h[0]["games"] == 12
    text = CliRunner().invoke(cli, ["table", str(config), "--seats"]).output
    assert "P(>next)" in text and "seat bias, 2 players" in text


def test_the_order_free_fit_ignores_order_and_ranks_by_strength():
    from harness.league.ratings_fit import fit_ratings

    rng = random.Random(5)
    games = []
    for _ in range(600):
        seats = rng.sample(range(4), 3)
        perf = [s + rng.gauss(0, 2) for s in seats]
        order = sorted(range(3), key=lambda i: -perf[i])
        ranks = [order.index(i) for i in range(3)]
        games.append((seats, ranks))
    games.append(([0, 1], [0, 0]))  # a shared place counts half each way
    fit = fit_ratings(games, mu=25, sigma=25 / 3, beta=25 / 6)
    again = fit_ratings(list(reversed(games)), mu=25, sigma=25 / 3, beta=25 / 6)
    assert all(abs(fit[v][0] - again[v][0]) < 1e-9 and abs(fit[v][1] - again[v][1]) < 1e-9 for v in fit)
    assert sorted(fit, key=lambda v: -fit[v][0]) == [3, 2, 1, 0]
    assert all(0 < fit[v][1] < 25 / 3 for v in fit)  # evidence narrows the prior
    assert fit_ratings([], mu=25, sigma=8, beta=4) == {}
