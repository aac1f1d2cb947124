"""Each documented rule of the adaptive schedule and of the table's fit on its own
(docs/leagues.md "The adaptive schedule", harness/league/ratings_fit.py; docs/testing.md "Layers"),
pinned at the value where a near miss differs:

- a ``games`` budget that is a whole number of duplicate sets is played exactly (not one set
  short), one that is not stops at the last whole set;
- ``until`` asks whether the K-th is above the (K+1)-th, not only the top K among themselves;
- a newcomer's share of a round at tables of 3 and 4: as many sets as put half of the round's
  other bots at its tables, each opponent once;
- the cheap confidence gate's P(>next): Phi(d / sd) with Var(a - b) from the joint posterior
  (the correlation counts), pinned by a known value;
- the table's small-sample correction widens the intervals of a few sets: with every bot in
  every set, G sets give a variance (G/(G-1)) (t_{G-1} / 1.96)^2 times the uncorrected one.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from harness.games import ranking_from_keys
from harness.league.config import load_config
from harness.league.ratings_fit import fit_table
from harness.league.schedule_adaptive import AdaptiveSchedule, table_confidence, table_fit_answer
from harness.league.schedule_matchmaker import Matchmaker, SkillFit, adjacent_confidence
from harness.league.store import GameOutcome, LeagueStore

# -- the games budget ----------------------------------------------------------------------------------


def _league(tmp_path: Path, bots: int, players: int, games: int) -> Path:
    (tmp_path / "bot.py").write_text("print('fake')\n")
    lines = [f"  - {{name: s{i}, command: python3 bot.py s{i}}}" for i in range(bots)]
    path = tmp_path / "league.yaml"
    path.write_text(f"name: budget\ngame: dominoes\nplayers: {players}\nworkers: 1\n"
                    f"schedule: {{kind: adaptive, games: {games}}}\nstore: {tmp_path / 'league.sqlite'}\nbots:\n"
                    + "\n".join(lines) + "\n")
    return path


def _play_out(path: Path) -> tuple[int, int, str | None]:
    """Play the adaptive league to its stop, every game recorded as soon as it is chosen (bot sN
    has strength N). Returns (games scheduled, games recorded, stop reason); gives up after
    200 choices (a schedule that neither stops nor schedules is a failure, not a hang)."""
    cfg = load_config(path)
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        ids = store.register_versions(cfg.bots)
        schedule = AdaptiveSchedule(cfg, store, ids)
        labels = {row.id: row.name for row in store.versions()}
        recorded = 0
        for _ in range(200):
            games = schedule.next_games()
            if games is None:
                return schedule.scheduled, recorded, schedule.stop_reason
            for g in games:
                rng = random.Random(g.game_id)
                keys = [int(labels[v][1:]) + rng.random() * 6 for v in g.version_ids]
                result = GameOutcome(game_id=g.game_id, ranking=ranking_from_keys(keys), scores=keys, ended_by="rules")
                assert store.record_many([(g.seq, result)])
                schedule.recorded(g.seq, g.version_ids, result.ranking)
                recorded += 1
        return schedule.scheduled, recorded, "did not stop"


@pytest.mark.parametrize(("bots", "players", "games", "played"), [
    (4, 2, 6, 6),     # a round is 2 sets (4 games): the second round has room for one set, and plays it
    (6, 3, 18, 18),   # a round is 2 sets of 6 games: the second round plays one
    (4, 2, 7, 6),     # half a set is never scheduled
    (6, 3, 17, 12),
])
def test_a_games_budget_is_played_to_its_last_whole_set(tmp_path: Path, bots: int, players: int, games: int,
                                                         played: int) -> None:
    scheduled, recorded, reason = _play_out(_league(tmp_path, bots, players, games))
    assert (scheduled, recorded) == (played, played)
    assert reason == f"the budget of {games:,} games is played (schedule.games)"


# -- the until question ----------------------------------------------------------------------------------

def _fit(mu: list[float], precision: np.ndarray) -> SkillFit:
    return SkillFit(mu=np.array(mu, dtype=float), chol=np.linalg.cholesky(precision).T)


def test_until_asks_whether_the_kth_is_above_the_next_by_the_count_fit() -> None:
    """Top 2 of three versions: the first is far ahead, the 2nd and 3rd are close. The top 2
    among themselves are settled; the question is not, because the 2nd may be below the 3rd."""
    fit = _fit([10.0, 5.0, 4.9], np.eye(3) * 100.0)  # sd 0.1 each
    index = {101: 0, 102: 1, 103: 2}
    answer = table_confidence(fit, index, [103, 101, 102], top=2)
    assert answer.top == [101, 102] and answer.pair == (102, 103)
    assert answer.confidence == pytest.approx(0.5 + math.erf(0.1 / math.sqrt(0.02) / math.sqrt(2)) / 2, abs=1e-9)
    assert answer.confidence < 0.8
    # top 1: the 1st against the 2nd, settled
    one = table_confidence(fit, index, [101, 102, 103], top=1)
    assert one.pair == (101, 102) and one.confidence > 0.999
    # an inactive version is not the next one
    assert table_confidence(fit, index, [101, 102], top=1).pair == (101, 102)


class _TableFit:
    """A table fit as table_fit_answer reads it: the order and P(a above b)."""

    def __init__(self, order: list[int], p: dict[tuple[int, int], float]) -> None:
        self.order = order
        self.p = p

    def p_better(self, a: int, b: int) -> float:
        return self.p[(a, b)]


def test_until_asks_whether_the_kth_is_above_the_next_by_the_tables_fit() -> None:
    fit = _TableFit([7, 8, 9, 10], {(7, 8): 0.999, (8, 9): 0.97, (9, 10): 0.55})
    answer = table_fit_answer(fit, [7, 8, 9, 10], top=2)  # type: ignore[arg-type]
    assert answer.pair == (8, 9) and answer.confidence == 0.97 and answer.top == [7, 8]
    answer = table_fit_answer(fit, [7, 8, 9, 10], top=3)  # type: ignore[arg-type]
    assert answer.pair == (9, 10) and answer.confidence == 0.55 and answer.top == [7, 8, 9]
    # with 9 gone, the 2nd is compared with 10
    fit.p[(8, 10)] = 0.6
    assert table_fit_answer(fit, [7, 8, 10], top=2).pair == (8, 10)  # type: ignore[arg-type]
    # fewer than two versions: no question to answer
    lone = table_fit_answer(fit, [7], top=1)  # type: ignore[arg-type]
    assert lone.pair is None and lone.confidence == 0.0


# -- the cheap confidence gate's variance ------------------------------------------------------------------

def test_the_count_fits_p_next_uses_the_joint_posterior_variance_of_the_difference() -> None:
    """Precision [[2, 1], [1, 2]]: covariance [[2, -1], [-1, 2]] / 3, so Var(a - b) = 2 and
    with a difference of sqrt(2), P(a > b) = Phi(1) = 0.841345 (the variances alone would give
    Phi(1.22); a Cholesky factor used the wrong way round gives another value)."""
    fit = _fit([math.sqrt(2.0), 0.0], np.array([[2.0, 1.0], [1.0, 2.0]]))
    assert adjacent_confidence(fit, [0, 1]) == [pytest.approx(0.8413447460685429, abs=1e-12)]
    assert adjacent_confidence(fit, [1, 0]) == [pytest.approx(1 - 0.8413447460685429, abs=1e-12)]
    # three bots, any order: the same as the covariance computed directly
    precision = np.array([[3.0, -1.0, 0.5], [-1.0, 2.0, -0.4], [0.5, -0.4, 1.5]])
    fit = _fit([1.0, 0.2, -0.7], precision)
    cov = np.linalg.inv(precision)
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        want = [0.5 * (1 + math.erf((fit.mu[a] - fit.mu[b]) / math.sqrt(2 * (cov[a, a] + cov[b, b] - 2 * cov[a, b]))))
                for a, b in zip(order, order[1:])]
        assert adjacent_confidence(fit, order) == pytest.approx(want, abs=1e-12)


# -- a newcomer's share of a round ----------------------------------------------------------------------

@pytest.mark.parametrize(("size", "sets"), [(3, 5), (4, 3)])
def test_a_newcomer_plays_with_half_the_rounds_other_bots_at_tables_of_3_and_4(size: int, sets: int) -> None:
    """20 bots that played 12 rounds, then a newcomer: in the next round it sits at
    floor(0.5 x 20 / (size - 1)) sets (5 at tables of 3: 10 opponents; 3 at tables of 4: 9),
    each opponent once, and every other bot at one table at most."""
    mm = Matchmaker(7, [size])
    for v in range(20):
        mm.add_bot(v)
    for _ in range(12):
        mm.plan_round()
    mm.add_bot(99)
    round_ = mm.plan_round()
    mine = [s for s in round_ if 99 in s]
    assert len(mine) == sets, round_
    opponents = [v for s in mine for v in s if v != 99]
    assert len(opponents) == len(set(opponents)) == sets * (size - 1) <= 10
    seated = [v for s in round_ for v in s if v != 99]
    assert len(seated) == len(set(seated))  # nobody plays two sets in one round
    assert all(len(s) == size for s in round_)


def test_a_newcomer_plays_at_least_one_set_when_its_share_rounds_down_to_none() -> None:
    """A share of 0.1 of 15 bots is 1.5 opponents, under one table of 3's two: the newcomer still
    plays one set in the round (the budget's floor), and only one."""
    from harness.league.schedule_matchmaker import MatchParams

    mm = Matchmaker(7, [3], params=MatchParams(newcomer_share=0.1))
    for v in range(15):
        mm.add_bot(v)
    for _ in range(6):
        mm.plan_round()
    mm.add_bot(99)
    assert len([s for s in mm.plan_round() if 99 in s]) == 1


def test_rounds_on_one_fit_are_one_without_refit_growth_and_the_grids_span_with_it() -> None:
    """Refitting every round (refit_growth 0), each round has a fit of its own; with growth 1.0 the
    fit points are 8, 16, 32... rounds of visible results (2 rounds behind): at round 10 the
    rounds 10-17 all see the fit of 8 (the bench plans them as one block)."""
    from harness.league.schedule_matchmaker import MatchParams

    for growth, want in ((0.0, 1), (1.0, 8)):
        mm = Matchmaker(3, [2], params=MatchParams(refit_growth=growth))
        for v in range(6):
            mm.add_bot(v)
        for _ in range(10):
            mm.plan_round()
        assert mm.rounds == 10 and mm.rounds_on_this_fit() == want, growth


# -- the table's small-sample correction ---------------------------------------------------------------

#: Student's t 0.975 quantiles (any table): 3 and 39 degrees of freedom
T_3, T_39 = 3.182446305284263, 2.022690911734728


def _two_bot_sets(patterns: list[tuple[int, int]], copies: int) -> list[tuple[list[int], list[int], int]]:
    """Duplicate sets of bots 1 and 2 at 2 seats (both seat orders); a pattern says which seat
    won each of the set's two games; the list repeated ``copies`` times, each copy new sets."""
    games = []
    for c in range(copies):
        for s, (first, second) in enumerate(patterns):
            key = c * len(patterns) + s
            games.append(([1, 2], [0, 1] if first == 0 else [1, 0], key))
            games.append(([2, 1], [0, 1] if second == 0 else [1, 0], key))
    return games


def test_few_sets_widen_the_interval_by_students_t() -> None:
    """The same 4 sets, once and 10 times over (40 sets), both bots in every set, a prior too
    wide to matter. Without a correction the variance would scale as 1/10; the cluster
    variance's G/(G-1) and Student's t with G-1 degrees of freedom make 4 sets wider still:
    var(4) / var(40) = 10 x (4/3) / (40/39) x (t_3 / t_39)^2 = 32.18. Fewer sets, wider."""
    patterns = [(0, 1), (0, 0), (1, 0), (0, 1)]  # bot 1 wins 2, 1, 0 and 2 games of the sets: 5 of 8
    few = fit_table(_two_bot_sets(patterns, 1), sigma=1000.0)
    many = fit_table(_two_bot_sets(patterns, 10), sigma=1000.0)
    assert few.mu[1] - few.mu[2] == pytest.approx(many.mu[1] - many.mu[2], rel=1e-3)
    assert few.mu[1] > few.mu[2]
    ratio = (few.sigma[1] / many.sigma[1]) ** 2
    expected = 10 * (4 / 3) / (40 / 39) * (T_3 / T_39) ** 2
    assert ratio == pytest.approx(expected, rel=5e-3), (ratio, expected)
    assert ratio > 10 * (4 / 3) / (40 / 39)  # wider than without the t correction, not narrower


# -- who sits out, and the table sizes' turns ------------------------------------------------------------

def test_when_the_bots_do_not_divide_into_tables_the_most_played_sit_out() -> None:
    """7 bots at tables of 2: each round one sits out, always one of those with the most games
    scheduled so far (so nobody sits out twice before everyone has once)."""
    mm = Matchmaker(3, [2])
    for v in range(7):
        mm.add_bot(v)
    sat_out = []
    for _ in range(14):
        before = {v: int(mm.games[mm.index[v]]) for v in range(7)}
        seated = [v for s in mm.plan_round() for v in s]
        [out] = sorted(set(range(7)) - set(seated))
        assert before[out] == max(before.values()), (out, before)
        sat_out.append(out)
    assert sorted(sat_out[:7]) == list(range(7)) and sorted(sat_out[7:]) == list(range(7))


def test_the_table_sizes_take_turns_round_by_round() -> None:
    """Sizes (2, 3) with 6 bots: rounds alternate 3 sets of 2 and 2 sets of 3, so every bot plays
    both sizes equally."""
    mm = Matchmaker(5, [2, 3])
    for v in range(6):
        mm.add_bot(v)
    sizes = [{len(s) for s in mm.plan_round()} for _ in range(6)]
    assert sizes == [{2}, {3}, {2}, {3}, {2}, {3}]
    assert (mm.by_size[:6, 0] == 3 * 2).all() and (mm.by_size[:6, 1] == 3 * 6).all()
