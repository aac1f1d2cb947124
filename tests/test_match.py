"""`harness match` and its statistics: the SPRT against hand-computed values, H1 for greedy
against random, never H1 for a bot against itself, resume from the store."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.report.sprt import SprtParams, elo_from_score, expected_score, llr, llr_bounds, match_summary, parse_sprt

REPO = Path(__file__).resolve().parent.parent
GREEDY = f"{sys.executable} {REPO / 'bots' / 'crisps_greedy.py'}"
RANDOM = f"{sys.executable} {REPO / 'bots' / 'random_bot.py'}"


def test_elo_and_expected_score_are_inverse_and_match_the_logistic_table():
    assert expected_score(0) == 0.5
    assert expected_score(400) == pytest.approx(10 / 11)  # 400 Elo: 10 to 1
    assert elo_from_score(0.75) == pytest.approx(190.8485, abs=1e-3)  # the textbook 75% = +191 Elo
    for elo in (-300, -10, 0, 35, 250):
        assert elo_from_score(expected_score(elo)) == pytest.approx(elo)


def test_llr_and_bounds_by_hand():
    lower, upper = llr_bounds(SprtParams(alpha=0.05, beta=0.05))
    assert lower == pytest.approx(math.log(0.05 / 0.95)) and upper == pytest.approx(math.log(0.95 / 0.05))
    assert upper == pytest.approx(2.944, abs=1e-3)
    # 100 sets, half 0.75 and half 0.45 (mean 0.6): the exact multinomial GSPRT (its computation
    # is checked against hand values and fishtest's formula in tests/test_sprt_exact.py)
    scores = [0.75] * 50 + [0.45] * 50
    assert llr(scores, SprtParams(elo0=0, elo1=10)) == pytest.approx(2.8366, abs=1e-3)  # not yet 2.944
    assert match_summary(scores, 200, SprtParams(), 2)["verdict"] == "none"
    scores = [0.75] * 60 + [0.45] * 60  # the LLR grows with the sets at a fixed distribution: 120/100 of it
    assert llr(scores, SprtParams(elo0=0, elo1=10)) == pytest.approx(2.8366 * 1.2, abs=2e-3)
    assert llr([1.0, 1.0], SprtParams()) < llr_bounds(SprtParams())[1]  # two sets never decide
    assert llr([0.5] * 40, SprtParams()) < 0  # identical results: evidence for H0
    summary = match_summary(scores, 240, SprtParams(), 2)
    assert summary["verdict"] == "H1" and summary["elo"] == pytest.approx(elo_from_score(0.6))
    low, high = summary["elo_ci"]
    assert low < summary["elo"] < high and summary["los"] > 0.99
    assert summary["set_scores"] == {"0.45": 60, "0.75": 60}


def test_parse_sprt_names_the_fault():
    assert parse_sprt("elo0=0,elo1=5") == SprtParams(elo0=0, elo1=5)
    for bad, words in (("elo0=5,elo1=0", "greater"), ("alpha=2", "error rates"), ("x=1", "KEY=VALUE"),
                       ("elo1=ten", "not a number")):
        with pytest.raises(ValueError, match=words):
            parse_sprt(bad)


def test_match_accepts_h1_for_greedy_against_random_and_resumes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["match", "crisps", "--bot", GREEDY, "--bot", RANDOM, "--games", "300", "--workers", "2",
            "--format", "json"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["verdict"] == "H1" and result["elo_ci"][0] > 0 and result["llr"] >= result["llr_bounds"][1]
    assert result["games"] < 300  # it stopped early
    assert set(result) >= {"verdict", "games", "elo", "elo_ci", "los", "llr", "llr_bounds"}
    again = json.loads(CliRunner().invoke(cli, args).output)  # stored: decided already, nothing replayed
    assert again["verdict"] == "H1" and again["games"] == result["games"]
    assert (tmp_path / "runs" / (result["match"]["id"] + ".yaml")).exists()


def test_a_bot_against_itself_never_accepts_h1(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for seed in (1, 2):
        out = CliRunner().invoke(cli, ["match", "crisps", "--bot", RANDOM, "--bot", RANDOM, "--games", "120",
                                       "--seed", str(seed), "--format", "json", "--dir", f"runs-self-{seed}"])
        assert out.exit_code == 0, out.output
        assert json.loads(out.output)["verdict"] != "H1"


def test_match_needs_opponents_to_fill_the_table():
    out = CliRunner().invoke(cli, ["match", "epizodiak", "--bot", RANDOM, "--bot", RANDOM])
    assert out.exit_code == 2 and "--opponent" in out.output


def _state_deciding_at(decide_after: int):
    """A MatchState of a 2-player match whose test decides once ``decide_after`` sets are read."""
    from harness.league.match import MatchState

    return MatchState(config=None, set_size=2,  # type: ignore[arg-type]
                      verdict=lambda scores: "H1" if len(scores) >= decide_after else "none")


def test_the_verdict_is_frozen_at_the_deciding_set_and_later_games_are_counted_apart():
    state = _state_deciding_at(3)
    a, b = 1, 2
    win = ([a, b], [0, 1]), ([b, a], [1, 0])  # A ahead in both seat orders: set score 1
    loss = ([a, b], [1, 0]), ([b, a], [0, 1])
    # set 1 completes before set 0 (another worker was faster): it waits for set 0
    for versions, ranks in win:
        state.add_game(1, list(versions), list(ranks), a, b)
    assert state.scores == [] and state.waiting == {1: 1.0} and state.waiting_games == 2
    state.add_game(0, *map(list, win[0]), a, b)
    assert state.scores == [] and state.waiting_games == 3
    state.add_game(0, *map(list, win[1]), a, b)
    assert state.scores == [1.0, 1.0] and not state.decided
    # set 3 completes, then set 2 decides: set 3 is late, not read by the test
    for versions, ranks in loss:
        state.add_game(3, list(versions), list(ranks), a, b)
    state.add_game(4, *map(list, loss[0]), a, b)  # half of set 4 in flight
    for versions, ranks in win:
        state.add_game(2, list(versions), list(ranks), a, b)
    assert state.decided and state.decided_round == 2
    assert state.scores == [1.0, 1.0, 1.0] and state.games == 6
    assert state.late_scores == [0.0] and state.late_games == 3
    state.add_game(4, *map(list, loss[1]), a, b)  # the game in flight finishes: late, the verdict stays
    state.add_game(5, *map(list, loss[0]), a, b)
    assert state.scores == [1.0, 1.0, 1.0] and state.games == 6
    assert state.late_scores == [0.0, 0.0] and state.late_games == 5


def test_a_decided_match_reports_the_deciding_set_and_leaves_nothing_to_play(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["match", "crisps", "--bot", GREEDY, "--bot", RANDOM, "--games", "400", "--workers", "2"]
    out = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["verdict"] == "H1" and result["llr"] >= result["llr_bounds"][1]
    assert result["games"] == 2 * result["sets"]  # the counts at the deciding set, not after it
    assert set(result["violations"]) == {"A", "B"} and result["violations"]["B"]["violations"] == 0
    assert "after_decision" in result
    text = CliRunner().invoke(cli, args).output
    assert "reached the upper bound" in text and " in (" not in text
    assert "violations (all games played): A 0, B 0" in text
    table = CliRunner().invoke(cli, ["table", result["match"]["config"]]).output
    assert "still to play" not in table  # the decided match's league does not invite `harness run`


def test_the_llr_is_fishtest_s_exact_formula():
    """fishtest's LLR_logistic (the exact multinomial GSPRT on pentanomial counts, implemented
    in bench/ratings.py from its published formula) and the LLR here agree at two seats, near
    the hypotheses and far from them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_ratings", REPO / "bench" / "ratings.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    params = SprtParams(elo0=0, elo1=10)
    # pentanomial counts (0, 1/4, 1/2, 3/4, 1) of 100-400 sets, from an even match to a clear one
    for counts in ((5, 20, 50, 20, 5), (4, 18, 50, 22, 6), (3, 15, 48, 26, 8), (10, 22, 36, 22, 10),
                   (8, 40, 104, 44, 12), (2, 10, 30, 40, 18), (0, 0, 0, 0, 10)):
        scores = [i / 4 for i, c in enumerate(counts) for _ in range(c)]
        assert llr(scores, params) == pytest.approx(bench.fishtest_llr(scores, params), rel=1e-6), counts


def test_a_match_keeps_the_id_an_earlier_release_gave_it() -> None:
    """A match's id names its config and its store (``runs/match-ID.yaml``, ``.sqlite``): the same
    match asked again, after an upgrade too, must find them, so the id of a given spec never
    changes (a hash of the spec, cut to 10 hex digits)."""
    from harness.league.match import MatchSpec

    assert MatchSpec("crisps", "a", "b").match_id == "match-f806b22958"
    assert MatchSpec("dominoes", "x", "y", ("z",), {"max_turns": 10}, 7).match_id == "match-5e470daa2c"


def test_a_match_plans_the_rounds_its_games_need_and_at_least_one(tmp_path: Path) -> None:
    """A round is one duplicate set (every seat order: 2 games at 2 seats, 6 at 3): ``games`` is
    rounded up to whole sets, and a match of fewer games than one set still plays one."""
    from harness.league.match import MatchSpec, match_config

    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("")
    a, b, c = (f"python3 {tmp_path / n}" for n in ("a.py", "b.py", "c.py"))
    two, three = MatchSpec("crisps", a, b), MatchSpec("dominoes", a, b, (c,))
    for spec, games, rounds in ((two, 1, 1), (two, 2, 1), (two, 3, 2), (three, 6, 1), (three, 7, 2)):
        cfg = match_config(spec, games=games, directory=tmp_path, workers=1, time={"move_ms": 1000})
        assert cfg.rounds == rounds, (spec.players, games)
