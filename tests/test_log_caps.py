"""Game logs cannot fill the organizer's disk: real leagues played by `harness run` with a bot
that bloats its logs (tests/bots/log_bloater.py).

- answers are logged as the protocol's fields only: unknown fields of up to 64 KiB per answer
  made 10 Crisps games 30.9 MB of logs (against 0.39 MB for honest bots); here 63 KiB made
  3-6 MB a game before;
- a game's log is cut at ``logs.game_kb``, marked, its violations kept, and `harness replay` and
  `harness violations` say so;
- past ``logs.budget_mb`` only games with violations keep their logs, and `harness run` reports
  the logs' size against the budget.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
from click.testing import CliRunner

from harness.cli import cli
from harness.games import get_game
from harness.league.config import load_config
from harness.league.logstore import logs_path
from harness.league.store import LeagueStore
from harness.report.replay_data import game_replay

REPO = Path(__file__).resolve().parent.parent
RANDOM = REPO / "bots" / "random_bot.py"
BLOATER = REPO / "tests" / "bots" / "log_bloater.py"


def league(tmp_path: Path, bloater_args: str, extra: str = "", rounds: int = 5) -> Path:
    path = tmp_path / "l.yaml"
    path.write_text(f"""name: l
store: {tmp_path / 'l.sqlite'}
workers: 1
game: crisps
rounds: {rounds}
{extra}bots:
  - {{name: random, command: python3 {RANDOM} --seed 1}}
  - {{name: bloater, command: python3 {BLOATER} {bloater_args}}}
""")
    return path


def harness(*args: str) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def logs(path: Path) -> list[tuple[int, list[dict] | None]]:
    with LeagueStore(load_config(path).store) as store:
        seqs = [r[0] for r in store.db.execute("SELECT seq FROM games WHERE status = 'done' ORDER BY seq")]
        return [(seq, store.game_log(seq)) for seq in seqs]


def test_63_kib_of_unknown_fields_per_answer_is_not_logged_and_the_games_count(tmp_path: Path) -> None:
    path = league(tmp_path, "--pad-kib 63")
    out = harness("run", path, "--quiet")
    assert "played 10 games" in out and "0 violations" in out, out
    games = logs(path)
    assert len(games) == 10
    # the logs are as small as honest games' (0.1-0.2 MB each before compression), not 3 MB a game
    sizes = [sum(len(orjson.dumps(e)) for e in log or []) for _, log in games]
    assert max(sizes) < 400_000, sizes
    assert logs_path(load_config(path).store).stat().st_size < 3 * 2**20
    answers = [e for _, log in games for e in log or []
               if e["type"] == "recv" and e["bot"] == "bloater" and e["msg"]["type"] == "action"]
    assert answers and all("pad" not in e["msg"] and e["dropped_fields"] == 1 for e in answers)
    table = harness("table", path, "--format", "json")
    rows = {r["bot"]: r for r in orjson.loads(table)["table"]}
    assert rows["bloater"]["games"] == 10 and rows["bloater"]["violations"] == 0
    assert re.search(r"logs: [\d.]+ MB of the 4096 MB budget \(logs.budget_mb\), 4096 KB at most a game", out), out


def test_a_game_log_past_its_cap_is_cut_and_marked_and_keeps_its_violations(tmp_path: Path) -> None:
    path = league(tmp_path, "--stderr-bytes 1000 --violate-in-seat -1", "logs: {game_kb: 16}\n", rounds=1)
    out = harness("run", path, "--quiet")
    assert "played 2 games" in out and "2 violations" in out, out
    for _, log in logs(path):
        assert log is not None
        kinds = [e["type"] for e in log]
        mark = log[kinds.index("truncated")]
        assert mark["cap_bytes"] == 16 * 1024 and mark["dropped_lines"] > 0
        kept = sum(len(orjson.dumps(e)) + 1 for e in log)
        violations = sum(len(orjson.dumps(e)) + 1 for e in log if e["type"] in ("violation", "forfeit"))
        assert kept - violations <= 16 * 1024
        assert "violation" in kinds[kinds.index("truncated"):]  # the violation came after the cut: kept
    with LeagueStore(load_config(path).store) as store:
        game_id = store.db.execute("SELECT id FROM games ORDER BY seq LIMIT 1").fetchone()[0]
        violation = store.db.execute("SELECT id FROM violations ORDER BY id LIMIT 1").fetchone()[0]
        row = store.game(game_id)
        data = game_replay(get_game("crisps"), {}, row, store.game_seats(row.seq), store.game_log(row.seq))
    # the replay pages (the report's and the contest site's) show where the log stops and why
    assert data["truncated"] and not data["complete"] and "log truncated" in data["error"]
    replay = harness("replay", path, game_id)
    assert "log truncated: this game's log passed its cap of 16 KB (logs.game_kb)" in replay
    shown = harness("violations", path, "--show", str(violation))
    assert "log truncated: this game's log passed its cap of 16 KB (logs.game_kb)" in shown


def test_past_the_logs_budget_only_games_with_violations_keep_their_logs(tmp_path: Path) -> None:
    path = league(tmp_path, "--violate-in-seat 0", "logs: {budget_mb: 0}\n", rounds=3)
    out = harness("run", path, "--progress")  # (not a terminal: a line every 10 s, and this notice once)
    assert out.count("logs: past their budget of 0 MB (logs.budget_mb): from now on only games with "
                     "violations keep their logs") == 1, out
    assert "played 6 games" in out, out
    with LeagueStore(load_config(path).store) as store:
        violated = {r[0] for r in store.db.execute("SELECT DISTINCT game_seq FROM violations")}
    kept = {seq for seq, log in logs(path) if log is not None}
    assert violated and kept == violated  # the games with violations, and only they, keep their logs
    assert (f"over budget: {6 - len(violated)} games without violations were recorded without their logs "
            f"(games with violations keep theirs") in out, out


def test_a_contests_logs_section_reaches_its_ladder_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    from harness.contest.config import ContestConfigError, init_contest, load_contest
    from harness.contest.ladder import league_data, write_config
    from harness.contest.rows import RosterEntry

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    with open(root / "contest.yaml", "a") as f:
        f.write("logs: {game_kb: 64, budget_mb: 0}\n")
    cfg = load_contest(root)
    roster = [RosterEntry("a", 1, "python"), RosterEntry("b", 2, "python")]
    for n in (1, 2):
        (cfg.submissions_dir / str(n)).mkdir(parents=True)
        (cfg.submissions_dir / str(n) / "bot.py").write_text("")
    ladder = write_config(root / "ladder.yaml", league_data(cfg, roster, name="ladder", rounds=1, store="ladder.sqlite"))
    assert ladder.logs == {"game_kb": 64, "budget_mb": 0}
    (root / "contest.yaml").write_text((root / "contest.yaml").read_text().replace("game_kb: 64", "game_kb: 0"))
    try:
        load_contest(root)
    except ContestConfigError as exc:
        assert str(exc).endswith("contest.yaml: logs.game_kb: 0 is not allowed (allowed: an integer >= 1)")
    else:
        raise AssertionError("logs.game_kb: 0 was taken")
