"""The request and session examples of protocol.md and docs/rules/dominoes.md are real states.

Each example names its game and seed; this test replays that game in the engine and checks that
the hand, the table, the offered actions (in canonical order) and the events the example shows are
exactly the engine's. An example that offers an action its hand cannot make fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.games import get_game

ROOT = Path(__file__).resolve().parents[1]


def json_blocks(text: str, after: str, count: int) -> list[dict]:
    """The first ``count`` ```json blocks of ``text`` after the heading ``after``, parsed."""
    rest = text[text.index(after):]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", rest, re.S)[:count]]


def crisps_seed_37_after_two_plays():
    """Protocol.md's game: Crisps, seed 37; seat 0 leads 5, seat 1 follows with 8."""
    game = get_game("crisps")
    state = game.new_state(2, 37, {})
    first_hand = state.observation(0)["hand"]
    first_legal = state.legal_actions()
    state.apply({"type": "play", "cards": ["5"]})
    state.apply({"type": "play", "cards": ["8"]})
    return state, first_hand, first_legal


def test_protocol_request_example_is_a_real_crisps_request():
    request = json_blocks((ROOT / "protocol.md").read_text(), "### request", 1)[0]
    state, _, _ = crisps_seed_37_after_two_plays()
    obs = state.observation(0)
    shown = {k: v for k, v in request["observation"].items() if k != "..."}
    assert shown == {k: obs[k] for k in shown}
    assert request["actions"] == state.legal_actions()
    assert request["events"] == [{k: v for k, v in e.items()} for e in state.events[-2:]]


def test_protocol_session_example_follows_the_same_game_in_canonical_order():
    text = (ROOT / "protocol.md").read_text()
    session = text[text.index("## A complete session"):text.index("## A minimal bot")]
    lines = [line[2:] for line in session.splitlines() if line.startswith(("> {", "< {"))]
    state, first_hand, first_legal = crisps_seed_37_after_two_plays()
    request1 = next(line for line in lines if '"type":"request","id":1' in line)
    assert f'"hand":{json.dumps(first_hand, separators=(",", ":"))}' in request1
    listed = [json.loads(m) for m in re.findall(r'\{"type":"play","cards":\[[^\]]*\]\}', request1)]
    # shortened with "...", but what is shown is the start and the end of the canonical list
    assert listed[:-1] == first_legal[:len(listed) - 1] and listed[-1] == first_legal[-1]
    answer1 = json.loads(next(line for line in lines if '"id":1,"index"' in line))
    assert first_legal[answer1["index"]] == {"type": "play", "cards": ["5"]}
    request3 = next(line for line in lines if '"type":"request","id":3' in line)
    actions3 = json.loads(re.search(r'"actions":(\[.*?\]),"events"', request3).group(1))
    assert actions3 == state.legal_actions()
    answer3 = json.loads(next(line for line in lines if '"id":3,"action"' in line))
    assert answer3["action"] in actions3


def test_dominoes_doc_observation_and_request_are_real():
    observation, request = json_blocks((ROOT / "docs/rules/dominoes.md").read_text(),
                                       "### Example: an observation and a request", 2)
    game = get_game("dominoes")
    state = game.new_state(3, 4, {})
    for text in ("6-6", "6-0 left", "6-1 right", "3-1 right"):
        # the lead and 6-0 are the only legal actions (the referee plays them, C2)
        state.apply(game.parse_action(text))
    assert observation == state.observation(0)
    shown = {k: v for k, v in request["observation"].items() if k != "..."}
    assert shown == {k: observation[k] for k in shown}
    assert request["actions"] == state.legal_actions()
    assert request["events"] == state.events
    assert state.legal_actions()[1] == {"type": "play", "tile": [4, 0], "end": "left"}
