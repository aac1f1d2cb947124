"""The collusion report (harness/report/collusion.py, `harness collusion`): simulated leagues with
a colluding pair and without, and the command on a real league of real bots."""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli
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


COLLUDER = REPO / "tests" / "bots" / "colluder.py"
GREEDY = REPO / "bots" / "dominoes_greedy.py"


def _handshakes(where: Path, jitter: int, games: int) -> list[bool]:
    """A timing-channel pair (tests/bots/colluder.py: each sleeps 80 ms x its seat + 1 once, the
    other reads the seat from its gaps) and a greedy third seat at 3-seat Dominoes, seats
    rotating; whether each colluder read its partner's seat right, game by game."""
    from harness.games import get_game
    from harness.play.limits import BotSpec, ResourceLimits, TimeControls
    from harness.play.referee import BotPool, RefereeConfig, play_game

    log = where / f"read-{jitter}.txt"
    log.touch()
    log.chmod(0o666)  # (as root, the bots run as an unprivileged uid of their own)
    specs = {"greedy": BotSpec(name="greedy", command=("python3", str(GREEDY))),
             "take": BotSpec(name="take", command=("python3", str(COLLUDER), "--mode", "take", "--log", str(log))),
             "feed": BotSpec(name="feed", command=("python3", str(COLLUDER), "--mode", "feed", "--log", str(log)))}
    config = RefereeConfig(time=TimeControls(move_ms=2000, jitter_ms=jitter), limits=ResourceLimits(sandbox=None))
    orders = {}
    with BotPool(config) as pool:
        for g in range(games):
            order = orders[f"g-{g}"] = [["greedy", "take", "feed"], ["take", "feed", "greedy"], ["feed", "greedy", "take"]][g % 3]
            record = play_game(get_game("dominoes"), {"max_turns": 15}, g + 1, f"g-{g}", [specs[n] for n in order], pool, config)
            assert not record.violations
    right = []  # (the pool's bye came after every result: each read is in the log)
    for line in log.read_text().splitlines():
        game_id, seat, partner, _ = line.split()
        order = orders[game_id]
        right.append(partner == str(order.index({"take": "feed", "feed": "take"}[order[int(seat)]])))
    return right


def test_a_timing_channel_pair_finds_its_partner_and_jitter_ms_blinds_it(tmp_path):
    """The attack: two bots recognise each other through the time they take (a sleep costs only
    their own time). Without jitter they read each other's seat; with time.jitter_ms they cannot."""
    with tempfile.TemporaryDirectory(dir="/tmp") as where:  # (pytest's tmp_path is root's alone)
        Path(where).chmod(0o777)
        plain = _handshakes(Path(where), 0, 6)
        jittered = _handshakes(Path(where), 400, 6)
    print(f"partner read right: {sum(plain)} of {len(plain)} without jitter, {sum(jittered)} of {len(jittered)} at 400 ms")
    assert len(plain) == len(jittered) == 12
    assert sum(plain) >= 8, plain  # the channel works: most games' partners found
    assert sum(jittered) <= 3, jittered  # 400 ms of jitter a request drowns an 80 ms symbol
