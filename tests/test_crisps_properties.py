"""Crisps properties over many random games (seeded loops, all option combinations).

40 cards always accounted for, every game ends, determinism, the generated plays equal a
brute-force enumeration, and no hidden information leaks: the removed cards, the blind deck
and the opponent's hand never reach an observation or the public events.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter

from harness.games import get_game
from harness.games.crisps.plays import LABELS, RANK_OF, RANKS, classify, key_ranks, lead_plays, may_follow

GAME = get_game("crisps")
GAMES = 1000
MAX_DECISIONS = 5000  # far above any real game (a deal cannot last forever: see docs/rules/crisps.md)


def options_for(seed: int) -> dict:
    """Every combination of the three rule options, in turn."""
    return {"faceup_draw": seed % 2 == 0, "jacks": (seed // 2) % 2 == 1, "auto_skip": (seed // 4) % 2 == 1}


def all_cards(snap: dict) -> Counter:
    every = snap["hands"][0] + snap["hands"][1] + snap["deck"] + snap["removed"] + snap["played"]
    if snap["offer"] is not None:
        every.append(snap["offer"])
    return Counter(every)


def full_deck(jacks: bool) -> Counter:
    return Counter({LABELS[jacks][r]: 4 for r in RANKS})


def shuffled_hidden(snap: dict, seat: int, rng: random.Random) -> dict:
    """The same snapshot with the opponent's hand, the removed cards and the deck re-dealt at random."""
    other = 1 - seat
    pool = snap["hands"][other] + snap["removed"] + snap["deck"]
    rng.shuffle(pool)
    n_hand, n_removed = len(snap["hands"][other]), len(snap["removed"])
    hands = list(snap["hands"])
    hands[other] = pool[:n_hand]
    return dict(snap, hands=hands, removed=pool[n_hand:n_hand + n_removed], deck=pool[n_hand + n_removed:])


def check_events_public(events: list[dict]) -> None:
    for e in events:
        if e["type"] == "take" and e["source"] == "blind":
            assert set(e) == {"type", "seat", "source"}, f"a blind take shows more than its seat: {e}"
        assert "hand" not in json.dumps(e).replace("hand_sizes", ""), f"an event shows a hand: {e}"


def play_random(seed: int, options: dict, probe: bool) -> tuple[list, object, int]:
    state = GAME.new_state(2, seed, options)
    chooser = random.Random(seed)
    actions = []
    seen = 0  # events checked public by earlier probes (each new one is checked once, all again at the end)
    while not state.is_terminal():
        assert state.sizes[state.current_player] > 0 or state.phase == "take"
        legal = state.legal_actions()
        if probe:
            seen = probe_state(state, chooser, seen if seen <= len(state.events) else 0)
        action = legal[chooser.randrange(len(legal))]
        state.apply(action)
        actions.append(action)
        assert len(actions) < MAX_DECISIONS, "game does not end"
    return actions, state, len(actions)


def probe_state(state, rng: random.Random, seen: int = 0) -> int:
    """Check the state's invariants seen by each seat, and its events from ``seen`` on; the events checked."""
    snap = state.to_json()
    assert all_cards(snap) == full_deck(snap["options"]["jacks"]), "40 cards not accounted for"
    for seat in (0, 1):
        obs = state.observation(seat)
        assert obs["hand"] == snap["hands"][seat]
        assert obs["hand_sizes"] == [len(h) for h in snap["hands"]]
        assert obs["deck"] == len(snap["deck"]) and obs["removed"] == 4
        assert sorted(obs) == sorted(state.observation(1 - seat))  # same fields for both seats
        twin = GAME.state_from_json(shuffled_hidden(snap, seat, rng))
        assert twin.observation(seat) == obs, "observation depends on hidden cards"
        if state.current_player == seat:
            assert twin.legal_actions() == state.legal_actions(), "legal actions depend on hidden cards"
    check_events_public(state.events[seen:])
    return len(state.events)


def test_random_games_conserve_cards_end_and_hide_information():
    lengths = []
    probes = 0
    for seed in range(GAMES):
        probe = seed % 10 == 0  # the expensive per-decision checks on every tenth game
        actions, state, n = play_random(seed, options_for(seed), probe)
        probes += n if probe else 0
        snap = state.to_json()
        assert all_cards(snap) == full_deck(snap["options"]["jacks"])
        result = state.result()
        assert result["ended_by"] == "rules" and max(result["scores"]) == 3
        assert result["ranking"] == [0, 1] if result["scores"][0] == 3 else [1, 0]
        assert state.events[-1] == {"type": "game_end", **result}
        check_events_public(state.events)
        lengths.append(n)
    assert probes > 1000
    assert max(lengths) < MAX_DECISIONS


def test_same_seed_and_actions_give_the_same_game_and_snapshots_continue():
    for seed in range(200):
        options = options_for(seed)
        actions, final, _ = play_random(seed, options, probe=False)
        replay = GAME.new_state(2, seed, options)
        cut = random.Random(seed).randrange(len(actions))
        for a in actions[:cut]:
            replay.apply(a)
        restored = GAME.state_from_json(json.loads(json.dumps(replay.to_json())))
        assert restored.to_json() == replay.to_json()
        for a in actions[cut:]:
            restored.apply(a)
        assert restored.to_json() == final.to_json() and restored.events == final.events


def brute_force_plays(hand: list[int], table, jacks: bool) -> set:
    """Every distinct sub-multiset of the hand that is a play and may follow ``table``."""
    counts = Counter(hand)
    ranks = sorted(counts)
    found = set()
    for take in itertools.product(*(range(counts[r] + 1) for r in ranks)):
        cards = [r for r, k in zip(ranks, take) for _ in range(k)]
        if not cards:
            continue
        key = classify(cards, jacks)
        if isinstance(key, str):
            continue
        if table is None or may_follow(key, table) is None:
            found.add(key)
    return found


def test_generated_plays_equal_brute_force_enumeration():
    checked = 0
    for seed in range(24):
        options = options_for(seed)
        state = GAME.new_state(2, seed, options)
        chooser = random.Random(seed)
        while not state.is_terminal():
            legal = state.legal_actions()
            if state.phase == "play":
                seat = state.current_player
                hand = [r for r in RANKS for _ in range(state.hands[seat][r])]
                jacks = options["jacks"]
                expected = brute_force_plays(hand, state.table, jacks)
                rank_of = RANK_OF[jacks]
                got = [tuple(rank_of[c] for c in a["cards"]) for a in legal if a["type"] == "play"]
                assert len(got) == len(set(got))
                assert set(got) == {key_ranks(k) for k in expected}
                assert ({"type": "pass"} in legal) == (state.table is not None)
                checked += 1
            state.apply(legal[chooser.randrange(len(legal))])
    assert checked > 1500


def test_big_hands_full_of_runs_match_brute_force():
    for jacks in (False, True):
        for hand in ([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 5, 6, 7],            # 13 cards, one long run
                     [2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 11],            # runs of pairs
                     [r for r in RANKS for _ in range(2)]):                # two of every rank
            counts = [0] * 12
            for r in hand:
                counts[r] += 1
            plays = lead_plays(counts, jacks)
            assert len(plays) == len(set(plays))
            assert set(plays) == brute_force_plays(hand, None, jacks)


def _load_greedy():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "bots" / "crisps_greedy.py"
    spec = importlib.util.spec_from_file_location("crisps_greedy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_greedy_bot_plays_legal_actions_and_beats_random():
    greedy = _load_greedy()
    wins = 0
    games = 120
    for seed in range(games):
        options = options_for(seed)
        state = GAME.new_state(2, 50_000 + seed, options)
        me = seed % 2
        chooser = random.Random(seed)
        while not state.is_terminal():
            legal = state.legal_actions()
            if state.current_player == me:
                action = greedy.choose(state.observation(me), legal, options["jacks"])
                assert action in legal
            else:
                action = legal[chooser.randrange(len(legal))]
            state.apply(action)
        wins += state.result()["ranking"][me] == 0
    assert wins / games > 0.8, f"greedy won only {wins} of {games} games against random"


def test_greedy_bot_speaks_protocol_v1():
    import subprocess
    import sys
    from pathlib import Path
    state = GAME.new_state(2, 3, {})
    seat = state.current_player
    lines = [
        {"type": "hello", "protocol": 1, "game": "crisps", "options": GAME.default_options(), "seat": 0,
         "players": 2, "time": {"init_ms": 5000, "move_ms": 1000, "bank_ms": 0}},
        {"type": "start", "game_id": "g-1", "seat": seat, "players": 2},
        {"type": "request", "id": 7, "seat": seat, "observation": state.observation(seat),
         "actions": state.legal_actions(), "events": state.events, "time_left_ms": 1000},
        {"type": "result", "game_id": "g-1", "ranking": [0, 1], "scores": [3, 0], "ended_by": "rules"},
        {"type": "bye"},
    ]
    bot = Path(__file__).resolve().parent.parent / "bots" / "crisps_greedy.py"
    done = subprocess.run([sys.executable, str(bot)], input="".join(json.dumps(m) + "\n" for m in lines),
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(x) for x in done.stdout.splitlines()]
    assert replies[0]["type"] == "ready"
    assert replies[1]["type"] == "action" and replies[1]["id"] == 7
    assert replies[1]["action"] in state.legal_actions()
    assert len(replies) == 2
