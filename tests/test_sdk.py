"""harness.sdk (run over pipes, play in process) and the ISMCTS bots built on it."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.games import get_game
from harness.sdk import Decision, play_in_process, run
from harness.sdk.ismcts import IsmctsPolicy, search

ROOT = Path(__file__).resolve().parent.parent
RANDOM = f"python3 {ROOT / 'bots' / 'random_bot.py'} --seed 3"


def lines(*msgs) -> io.StringIO:
    return io.StringIO("".join(json.dumps(m) + "\n" for m in msgs))


def talk(policy, *msgs) -> tuple[list[dict], str]:
    out, err = io.StringIO(), io.StringIO()
    assert run(policy, name="t", stdin=lines(*msgs), stdout=out, stderr=err) == 0
    return [json.loads(x) for x in out.getvalue().splitlines()], err.getvalue()


HELLO = {"type": "hello", "protocol": 1, "game": "crisps", "options": {"jacks": False}, "seat": 0, "players": 2,
         "time": {"init_ms": 5000, "move_ms": 1000, "bank_ms": 0}}
ACTIONS = [{"type": "play", "cards": ["9"]}, {"type": "pass"}]


def request(i, events=()):
    return {"type": "request", "id": i, "seat": 0, "observation": {"seat": 0}, "actions": ACTIONS,
            "events": list(events), "time_left_ms": 700}


def test_run_answers_hello_and_requests_by_index_and_ignores_what_needs_no_answer():
    seen: list[Decision] = []

    def policy(d: Decision):
        seen.append(d)
        return {"type": "pass"}
    out, err = talk(policy, HELLO, {"type": "start", "game_id": "g1", "seat": 1, "players": 2},
                    request(5, [{"type": "deal"}]), request(7, [{"type": "play"}]),
                    {"type": "result", "ranking": [0, 1]}, {"type": "start", "game_id": "g2", "seat": 0, "players": 2},
                    request(9, [{"type": "deal"}]), {"type": "bye"}, request(11))
    assert out == [{"type": "ready", "name": "t"}, {"type": "action", "id": 5, "index": 1},
                   {"type": "action", "id": 7, "index": 1}, {"type": "action", "id": 9, "index": 1}]
    assert err == ""
    assert [d.events for d in seen] == [[{"type": "deal"}], [{"type": "deal"}, {"type": "play"}], [{"type": "deal"}]]
    assert seen[0].game == "crisps" and seen[0].options == {"jacks": False} and seen[0].time_left_ms == 700
    assert seen[0].seat == 0 and seen[0].players == 2


def test_by_default_a_raising_policy_ends_the_process_with_its_traceback():
    def policy(d: Decision):
        raise RuntimeError("boom in my policy")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(RuntimeError, match="boom in my policy"):
        run(policy, name="t", stdin=lines(HELLO, request(1)), stdout=out, stderr=err)
    assert out.getvalue().splitlines() == [json.dumps({"type": "ready", "name": "t"})]  # no made-up answer


@pytest.mark.parametrize("answer,sent", [(7, {"index": 7}), ({"type": "take"}, {"action": {"type": "take"}})])
def test_by_default_an_answer_not_offered_is_sent_as_it_is(answer, sent):
    out, err = talk(lambda d: answer, HELLO, request(1), {"type": "bye"})
    assert out[1] == {"type": "action", "id": 1, **sent} and err == ""


@pytest.mark.parametrize("answer", [RuntimeError("boom"), 7, {"type": "take"}])
def test_the_explicit_fallback_sends_the_first_action_and_says_so(answer):
    def policy(d: Decision):
        if isinstance(answer, Exception):
            raise answer
        return answer
    out, err = io.StringIO(), io.StringIO()
    run(policy, name="t", stdin=lines(HELLO, request(1), request(2), {"type": "bye"}), stdout=out, stderr=err,
        on_error="first")
    answers = [json.loads(x) for x in out.getvalue().splitlines()][1:]
    assert [(a["id"], a["index"]) for a in answers] == [(1, 0), (2, 0)]
    assert all(a["sdk_fallback"] for a in answers)
    assert "policy failed" in err.getvalue() and "Traceback" in err.getvalue()
    with pytest.raises(ValueError, match="on_error"):
        run(policy, on_error="ignore")


def test_play_in_process_raises_a_policy_bug_unless_the_fallback_is_chosen():
    from harness.sdk import NotOffered

    with pytest.raises(NotOffered):
        play_in_process("crisps", [lambda d: {"type": "take"}, lambda d: 0], seed=1)
    result = play_in_process("crisps", [lambda d: {"type": "take"}, lambda d: 0], seed=1, err=io.StringIO(),
                             on_error="first")
    assert len(result["ranking"]) == 2


SDK_BOT = """import sys
sys.path.insert(0, {root!r})
from harness.sdk import run

def policy(d):
    if len(d.events) > 3:
        {bug}
    return 0

run(policy, name="buggy"{extra})
"""


@pytest.mark.parametrize("bug,kind", [("raise KeyError('no such card')", "crash"),
                                      ("return {'type': 'take'}", "illegal")])
def test_check_bot_shows_a_buggy_sdk_bot_as_the_violation_it_is(tmp_path, bug, kind):
    bot = tmp_path / "buggy.py"
    bot.write_text(SDK_BOT.format(root=str(ROOT), bug=bug, extra=""))
    out = CliRunner().invoke(cli, ["check-bot", "crisps", f"python3 {bot}", "--games", "2", "--opponent", RANDOM])
    assert out.exit_code == 1, out.output
    assert f"{kind}" in out.output and "no violations" not in out.output
    if kind == "crash":
        assert "KeyError: 'no such card'" in out.output  # the traceback's last line, from the stderr tail


def test_check_bot_reports_the_sdk_fallback_the_author_chose(tmp_path):
    bot = tmp_path / "fallback.py"
    bot.write_text(SDK_BOT.format(root=str(ROOT), bug="raise KeyError('no such card')", extra=', on_error="first"'))
    out = CliRunner().invoke(cli, ["check-bot", "crisps", f"python3 {bot}", "--games", "2", "--opponent", RANDOM])
    assert out.exit_code == 0, out.output
    assert "answer(s) were the Python SDK's fallback (on_error='first')" in out.output
    assert "KeyError: 'no such card'" in out.output and "but see the fallback answers above" in out.output


def test_unreadable_lines_go_to_stderr():
    bad = io.StringIO("not json\n" + json.dumps(request(2)) + "\n")
    out2, err2 = io.StringIO(), io.StringIO()
    run(lambda d: 1, stdin=bad, stdout=out2, stderr=err2)
    assert json.loads(out2.getvalue()) == {"type": "action", "id": 2, "index": 1}
    assert "unreadable line" in err2.getvalue()


@pytest.mark.parametrize("game_name,players", [("crisps", 2), ("dominoes", 3), ("epizodiak", 3)])
def test_play_in_process_plays_whole_games(game_name, players):
    rng = random.Random(1)
    asked = []

    def policy(d: Decision):
        asked.append(len(d.actions))
        assert d.observation["seat"] == d.seat
        return rng.randrange(len(d.actions))
    result = play_in_process(game_name, [policy] * players, seed=4)
    assert sorted(result["ranking"])[0] == 0 and len(result["ranking"]) == players
    assert asked and min(asked) >= 2  # single actions are applied without asking (ruling C2)


def winning_positions(game_name, players, limit):
    """States (and their winning actions) where one action ends the game with the mover first."""
    game = get_game(game_name)
    rng = random.Random(6)
    found = []
    for seed in range(200):
        state = game.new_state(players, seed, {"target": 30} if game_name == "dominoes" else {})
        while not state.is_terminal() and len(found) < limit:
            actions = state.legal_actions()
            mover = state.current_player
            wins = []
            for a in actions:
                trial = game.state_from_json(state.to_json())
                trial.apply(a)
                if trial.is_terminal() and trial.result()["ranking"][mover] == 0 and trial.result()["ranking"].count(0) == 1:
                    wins.append(a)
            if wins and len(wins) < len(actions) and len(actions) > 1:
                found.append((state, wins))
                break
            state.apply(rng.choice(actions))
        if len(found) >= limit:
            return found
    return found


@pytest.mark.parametrize("game_name", ["crisps", "dominoes"])
def test_ismcts_finds_the_winning_move(game_name):
    game = get_game(game_name)
    positions = winning_positions(game_name, 2, 4)
    assert len(positions) == 4
    for state, wins in positions:
        seat = state.current_player
        found = search(game, state.options, state.observation(seat), state.events, state.legal_actions(), 2,
                       random.Random(1), iterations=300)
        assert found.action in wins, (state.render(), found)
        assert found.iterations == 300


def test_ismcts_is_reproducible_and_stops_at_the_deadline():
    game = get_game("crisps")
    state = game.new_state(2, 3)
    seat = state.current_player
    args = (game, state.options, state.observation(seat), state.events, state.legal_actions(), 2)
    a = search(*args, random.Random(5), iterations=60)
    b = search(*args, random.Random(5), iterations=60)
    assert a == b
    late = search(*args, random.Random(5), deadline=0.0)  # a deadline already past: one iteration
    assert late.iterations == 1 and late.action in state.legal_actions()
    with pytest.raises(ValueError):
        search(*args, random.Random(5))


def test_ismcts_policy_budget_follows_time_left():
    policy = IsmctsPolicy(seed=1, budget_ms=1)
    state = get_game("dominoes").new_state(2, 3)
    seat = state.current_player
    d = Decision("dominoes", dict(state.options), seat, 2, state.observation(seat), state.legal_actions(),
                 state.events, 100)
    assert policy(d) in d.actions
    assert policy.last is not None and policy.last.iterations >= 1


@pytest.mark.parametrize("game_name", ["crisps", "dominoes", "epizodiak"])
def test_ismcts_bot_plays_real_games_under_the_referee(game_name, tmp_path):
    bot = f"python3 {ROOT / 'bots' / f'{game_name}_ismcts.py'} --iterations 8 --seed 1"
    options = {"crisps": "max_turns=2000", "dominoes": "target=25", "epizodiak": "mode=one_round"}[game_name]
    seats = ["--bot", bot] + ["--bot", RANDOM] * (2 if game_name == "epizodiak" else 1)
    result = CliRunner().invoke(cli, ["play", game_name, *seats, "--games", "2", "-o", options,
                                      "--stderr-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "violation" not in result.output.lower() and "FORFEIT" not in result.output


def test_ismcts_bot_help_and_bad_arguments(capsys):
    from harness.sdk.ismcts import bot_main
    with pytest.raises(SystemExit) as exc:
        bot_main("crisps", ["--help"])
    assert exc.value.code == 0 and "--iterations" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        bot_main("crisps", ["--iterations", "0"])
    assert exc.value.code == 2 and "--iterations" in capsys.readouterr().err


def test_the_sdk_starts_without_the_json_package_dataclasses_typing_or_traceback():
    """A bot on the SDK pays its imports at every start (a league may start one for every deal):
    importing harness.sdk brings none of these in."""
    import subprocess
    import sys

    code = ("import sys; before = set(sys.modules); import harness.sdk; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    new = set(got.stdout.split())
    assert "harness.sdk" in new
    assert not new & {"json", "dataclasses", "typing", "traceback", "re", "enum"}, sorted(new)


def test_a_decision_behaves_as_the_dataclass_it_was():
    d = Decision("crisps", {}, 1, 2, {"hand": ["2"]}, ACTIONS, [], 700, received=5.0)
    same = Decision(game="crisps", options={}, seat=1, players=2, observation={"hand": ["2"]}, actions=ACTIONS,
                    events=[], time_left_ms=700, received=5.0)
    assert d == same and d != Decision("crisps", {}, 0, 2, {}, ACTIONS, [], 700, received=5.0)
    assert repr(d).startswith("Decision(game='crisps', options={}, seat=1,") and "received=5.0" in repr(d)
    assert d.deadline(0.5, 50) == 5.0 + 0.3
    match d:
        case Decision(game, _, seat):
            assert (game, seat) == ("crisps", 1)
    with pytest.raises(TypeError):
        hash(d)
    assert Decision("crisps", {}, 1, 2, {}, ACTIONS, [], 700).received > 0  # now, when not given


@pytest.mark.parametrize("c_json", [True, False])
def test_run_reads_and_writes_json_as_the_json_package_does(monkeypatch, c_json):
    """Through _json's scanner and encoder, or the json package where an interpreter has no
    _json: the same lines out; a line that is no JSON (or has more after it) is reported and
    skipped."""
    import harness.sdk as sdk

    if not c_json:
        monkeypatch.setattr(sdk, "_scan", None)
        monkeypatch.setattr(sdk, "_encode", None)
    offered = [{"type": "play", "cards": ["Q", "10"], "note": 'd\u00e9j\u00e0 "vu"', "x": 1.5, "y": None, "z": True},
               {"type": "pass"}]
    req = {**request(4), "actions": offered}
    out, err = io.StringIO(), io.StringIO()
    src = io.StringIO(json.dumps({**HELLO}) + "\n" + "{not json\n" + '{"type": "start"} 3\n' + json.dumps(req) + "\n")
    assert run(lambda d: d.actions[0], name='n\u00e9"', stdin=src, stdout=out, stderr=err) == 0
    assert out.getvalue() == (json.dumps({"type": "ready", "name": 'n\u00e9"'}) + "\n"
                              + json.dumps({"type": "action", "id": 4, "index": 0}) + "\n")
    assert err.getvalue().count("unreadable line from the referee ignored") == 2, err.getvalue()
    sent: list[dict] = []

    def not_offered(d):
        sent.append(dict(offered[0], cards=["J"]))
        return sent[-1]

    out = io.StringIO()
    run(not_offered, stdin=io.StringIO(json.dumps(HELLO) + "\n" + json.dumps(req) + "\n"), stdout=out,
        stderr=io.StringIO())
    assert out.getvalue().splitlines()[1] == json.dumps({"type": "action", "id": 4, "action": sent[0]})
