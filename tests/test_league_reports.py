"""Reports: actions recovered from a referee log, table text formats."""

from __future__ import annotations

from harness.report.tables import TableRow, format_table, replay_actions

A, B, C = {"type": "play", "n": 1}, {"type": "play", "n": 2}, {"type": "pass"}


def request(seat: int, rid: int, actions: list) -> dict:
    return {"type": "send", "seat": seat, "msg": {"type": "request", "id": rid, "actions": actions}}


def answer(seat: int, rid: int, **how) -> dict:
    return {"type": "recv", "seat": seat, "msg": {"type": "action", "id": rid, **how}}


def test_actions_by_index_by_value_forced_and_fallback() -> None:
    log = [
        {"type": "send", "seat": 0, "msg": {"type": "hello"}},
        {"type": "recv", "seat": 0, "msg": {"type": "ready", "name": "x"}},
        request(0, 1, [A, B]), answer(0, 1, index=1),                       # decision 0: B by index
        {"type": "event", "event": {"type": "play"}},
        {"type": "auto", "seat": 1, "action": C, "why": "only legal action"},  # decision 1
        request(0, 2, [A, B]), answer(0, 2, action=A),                      # decision 2: A by value
        request(1, 3, [A, C]), answer(1, 3, index=7),                       # decision 3: rejected...
        {"type": "violation", "seat": 1, "decision": 3, "kind": "illegal"},
        {"type": "auto", "seat": 1, "action": C, "why": "fallback after violation"},  # ...the fallback plays
    ]
    assert replay_actions(log) == [(0, B, "bot"), (1, C, "only legal action"), (0, A, "bot"),
                                   (1, C, "fallback after violation")]


def test_a_violation_of_another_seat_does_not_cancel_an_accepted_answer() -> None:
    log = [
        request(0, 1, [A, B]), answer(0, 1, index=0),          # decision 0, accepted
        {"type": "violation", "seat": 1, "decision": 1, "kind": "protocol"},  # seat 1 spoke unasked
        {"type": "auto", "seat": 1, "action": C, "why": "fallback after violation"},
    ]
    assert replay_actions(log) == [(0, A, "bot"), (1, C, "fallback after violation")]


def test_text_and_markdown_tables_align_and_mark_old_versions() -> None:
    rows = [TableRow(1, "greedy", "abc", True, 30.0, 1.5, 25.5, 10, 9, 1.1, 0),
            TableRow(2, "random-with-long-name", "def", False, 20.0, 1.0, 17.0, 10, 1, 1.9, 3)]
    text = format_table(rows).splitlines()
    assert len({len(line) for line in text[:2]}) == 1  # header and rule have the same width
    assert text[3].split()[:4] == ["2", "random-with-long-name", "def", "(old)"]
    assert text[0].index("mu-3sigma") < text[0].index("games")
    md = format_table(rows, "md").splitlines()
    assert md[2] == "| 1 | greedy | abc | 30.00 | +-2.94 | 25.50 | 10 | 9 | - | - | 1.10 | - | - | 0 |"
    rows[0].mean_score, rows[0].mean_score_ci, rows[0].mean_rank_ci, rows[0].p_better = 2.5, [2.0, 3.0], [1.0, 1.2], 0.97
    assert format_table(rows, "md").splitlines()[2] == (
        "| 1 | greedy | abc | 30.00 | +-2.94 | 25.50 | 10 | 9 | 2.50 | 2.00-3.00 | 1.10 | 1.00-1.20 | 0.97 | 0 |")
