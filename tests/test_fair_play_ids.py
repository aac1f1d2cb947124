"""Opaque game ids and conformance checks that look like league games (docs/security.md).

Each attack is a real bot (tests/bots/attacker.py) in a real league or check:
- a bot recomputed its game id from the league's name, seed, round and the ``name@version``
  labels a leaderboard prints (every id of a round robin and of an adaptive league matched), so
  it knew its round, its opponents and their seats;
- a bot told a conformance check from a league game (ids ``check-00000N``, deals of seeds 1..n)
  and played legally only when checked: it passed the check, then broke every league game.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from kit import attack_lines

from harness.cli import cli
from harness.league.config import load_config
from harness.league.runner import run_league
from harness.league.store import LeagueStore

REPO = Path(__file__).resolve().parent.parent
ATTACKER = REPO / "tests" / "bots" / "attacker.py"
RANDOM = REPO / "bots" / "random_bot.py"
ID_RE = re.compile(r"^[ga]-[0-9a-f]{12}$")


@pytest.mark.parametrize("schedule", ["round_robin", "adaptive"])
def test_a_bot_cannot_recompute_its_game_id_from_public_facts(tmp_path, schedule):
    games = "rounds: 2" if schedule == "round_robin" else "schedule: {kind: adaptive, games: 4}"
    path = tmp_path / "fp.yaml"
    path.write_text(f"""name: fp
game: crisps
seed: 5
{games}
store: {tmp_path / 'fp.sqlite'}
workers: 1
options: {{max_turns: 30}}
limits: {{sandbox: none}}
bots:
  - {{name: random, command: python3 {RANDOM}, version: v1}}
  - {{name: spy, version: v1, command: [python3, {ATTACKER}, id-spy, --league, fp, --seed, "5",
      --labels, "random@v1,spy@v1", --rounds, "4"]}}
""")
    summary = run_league(load_config(path), progress=False)
    assert not summary.errors and summary.played == 4
    seen = attack_lines(tmp_path / "fp.logs", "spy", "id-spy")
    with LeagueStore(str(tmp_path / "fp.sqlite")) as store:
        ids = {r[0] for r in store.db.execute("SELECT id FROM games WHERE status = 'done'")}
    assert {f["game"] for f in seen} == ids and all(ID_RE.match(i) for i in ids)
    # every id it could compute from the league, its seed, the rounds and the labels is wrong
    assert [f["known"] for f in seen] == ["no"] * 4


def _cheat_command(workdir: Path) -> list[str]:
    """A bot that plays legally only where it believes it is being checked (as an upload: its
    own files in its own directory)."""
    shutil.copy(ATTACKER, workdir / "attacker.py")
    return ["python3", "attacker.py", "check-spy", "--seeds", "30", "--cheat"]


def test_check_bot_games_look_like_league_games_so_a_bot_that_behaves_only_when_checked_fails(tmp_path):
    command = " ".join(_cheat_command(tmp_path)).replace("attacker.py", str(tmp_path / "attacker.py"))
    logs = tmp_path / "stderr"
    result = CliRunner().invoke(cli, ["check-bot", "crisps", command, "--games", "4", "--sandbox", "none",
                                      "--stderr-dir", str(logs), "-o", "max_turns=30"])
    seen = attack_lines(logs, "you", "check-spy")
    assert len(seen) == 4 and all(ID_RE.match(f["game"]) for f in seen), (seen, result.output)
    assert [f["check"] for f in seen] == ["no"] * 4  # neither the id nor the deal gave the check away
    assert result.exit_code == 1 and "illegal" in result.output.lower(), result.output


def test_the_contests_build_check_is_not_told_apart_from_the_ladder(tmp_path):
    from harness.contest.build import check_upload
    from harness.contest.config import init_contest, load_contest

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    cfg = load_contest(root)
    workdir = tmp_path / "upload"
    workdir.mkdir()
    _cheat_command(workdir)
    (workdir / "bot.py").write_text("import runpy, sys\n"
                                    "sys.argv = ['attacker.py', 'check-spy', '--seeds', '30', '--cheat']\n"
                                    "runpy.run_path('attacker.py', run_name='__main__')\n")
    passed, log = check_upload(cfg, cfg.runtimes["python"], workdir, "cheater")
    # it cheats in every game it takes for a ladder game: the check sees what the ladder would
    assert not passed and "VIOLATION" in log, log


def test_check_bot_with_a_seed_plays_the_same_games_again_and_without_one_fresh_ones():
    from harness.play.conformance import check_deals

    assert check_deals(4, seed=3) == check_deals(4, seed=3)
    fresh = check_deals(4)
    assert fresh != check_deals(4) and all(ID_RE.match(gid) for _, gid, _ in fresh)
    assert {deal for deal, _, _ in fresh}.isdisjoint(range(1, 1000))
    assert all(gid.startswith("a-") for _, gid, _ in check_deals(2, id_prefix="a-"))
