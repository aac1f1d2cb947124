"""The collusion report (harness/report/collusion.py, `harness collusion`): simulated leagues with
a colluding pair and without, and the command on a real league of real bots."""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli
from harness.report import collusion
from harness.report.collusion import analyse, store_sets

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from collusion import league as simulated  # noqa: E402

RANDOM = REPO / "bots" / "random_bot.py"


def test_a_feeding_pair_is_flagged_and_an_honest_league_is_not():
    honest, _ = simulated(random.Random(11), 8, 600, "honest", 0.0)
    assert not any(f.flagged for f in analyse(honest))
    for mode in ("feed", "joint"):
        sets, _ = simulated(random.Random(11), 8, 600, mode, 4.0)
        found = analyse(sets)
        assert [{f.a, f.b} for f in found if f.flagged] == [{0, 1}], [(f.a, f.b, f.z) for f in found[:3]]
        top = found[0]
        assert abs(top.z[mode]) == max(abs(v) for v in top.z.values())  # the statistic of what they did
        if mode == "feed":  # bot 1 feeds bot 0: a's gain minus b's, with a the lower id
            assert top.z["feed"] > 0


def test_sets_are_grouped_by_round_deal_and_versions():
    rows = [(1, 0, 9, 1, 0), (1, 0, 9, 2, 1), (1, 0, 9, 3, 2), (2, 0, 9, 2, 0), (2, 0, 9, 1, 1), (2, 0, 9, 3, 2),
            (3, 1, 9, 1, 0), (3, 1, 9, 2, 1), (3, 1, 9, 3, 2)]
    sets = sorted(store_sets(rows), key=len)
    assert [len(s) for s in sets] == [1, 2] and sets[1][1] == [(2, 0), (1, 1), (3, 2)]


def test_harness_collusion_reads_a_real_league(tmp_path):
    path = tmp_path / "c.yaml"
    bots = "\n".join(f"  - {{name: r{i}, command: python3 {RANDOM} --seed {i}}}" for i in range(4))
    path.write_text(f"name: c\ngame: dominoes\nplayers: 3\nrounds: 3\nworkers: 2\nlimits: {{sandbox: none}}\n"
                    f"store: {tmp_path / 'c.sqlite'}\nbots:\n{bots}\n")
    runner = CliRunner()
    assert runner.invoke(cli, ["run", str(path), "--no-progress"]).exit_code == 0
    result = runner.invoke(cli, ["collusion", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("12 duplicate sets, 6 pairs with at least 5 shared sets") and lines[0].endswith(": 0")
    assert len(lines) == 7 and all(" & " in line and "6 sets" in line for line in lines[1:])
    missing = runner.invoke(cli, ["collusion", str(tmp_path / "nope.yaml")])
    assert missing.exit_code != 0 and "Traceback" not in missing.output



def test_harness_collusion_on_a_two_seat_league_says_why_there_is_nothing_to_judge(tmp_path):
    path = tmp_path / "two.yaml"
    bots = "\n".join(f"  - {{name: r{i}, command: python3 {RANDOM} --seed {i}}}" for i in range(3))
    path.write_text(f"name: two\ngame: crisps\nrounds: 3\nworkers: 1\nlimits: {{sandbox: none}}\n"
                    f"store: {tmp_path / 'two.sqlite'}\nbots:\n{bots}\n")
    runner = CliRunner()
    assert runner.invoke(cli, ["run", str(path), "--no-progress"]).exit_code == 0
    result = runner.invoke(cli, ["collusion", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "9 duplicate sets, 0 of them at tables of 3 or more: no pair has the 5 shared sets at such tables the "
        "report needs (collusion shows against a third seat)"]


def _small_league(rng: random.Random, rounds: int, feed: float = 0.0) -> list:
    """Every table of 3 of 4 bots ``rounds`` times, each a duplicate set of its 6 seat orders;
    bot 1 hands ``feed`` points of performance to bot 0 where they share a table."""
    skill = rng.sample([20.0, 23.3, 26.7, 30.0], 4)
    sets = []
    for _ in range(rounds):
        for table in itertools.combinations(range(4), 3):
            luck = [rng.gauss(0, 3) for _ in table]
            games = []
            for order in itertools.permutations(table):
                perf = {v: skill[v] + luck[s] + rng.gauss(0, 25 / 6) for s, v in enumerate(order)}
                if 0 in order and 1 in order:
                    perf[0] += feed
                    perf[1] -= feed
                ranked = sorted(order, key=lambda v: -perf[v])
                games.append([(v, ranked.index(v) + 1) for v in order])
            sets.append(games)
    return sets


def test_a_league_of_four_bots_is_not_flagged_for_the_few_games_its_baselines_rest_on():
    # With 4 bots a pair's expectation against a third seat rests on the one table without its
    # partner (3 sets here): judged as if exact, 127 of 1,000 such honest leagues had a pair flagged
    # (alpha is 0.001: this seed's 300 leagues have one, the 66th)
    rng = random.Random(5)
    flagged = [i for i in range(300) if any(f.flagged for f in analyse(_small_league(rng, 3)))]
    assert flagged == [65]


def test_a_feeding_pair_among_four_bots_is_still_flagged_with_enough_rounds():
    found = analyse(_small_league(random.Random(8), 12, feed=4.0))
    assert [{f.a, f.b} for f in found if f.flagged] == [{0, 1}], [(f.a, f.b, f.z) for f in found[:3]]


def test_a_second_look_at_a_pair_of_four_bots_judges_it_as_the_first_did():
    # With 4 bots, a suspect's shared tables enter none of its own baselines: set apart, only its
    # neighbours lose theirs, and its z-scores must stay the first look's. Shrunk toward the spread
    # of the pairs left (itself alone), they did not: 14 of 10,000 leagues of real random bots
    # were flagged at alpha 0.001, 7 of them on the second look alone.
    rng = random.Random(3)
    for _ in range(200):
        sets = _small_league(rng, 3)
        looked, spread = collusion._judged(sets, set(), 0.001)
        first = {(f.a, f.b): f for f in looked}
        for (a, b), f in first.items():
            [again] = [g for g in collusion._judged(sets, {(a, b)}, 0.001, spread)[0] if (g.a, g.b) == (a, b)]
            assert again.sets == f.sets and again.z == f.z, (a, b)
