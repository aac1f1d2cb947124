"""Fresh deals for every version (docs/security.md): a version is never dealt a deal an earlier
game dealt to another version, so what its author read in public replays tells it nothing.

The attack, end to end with real processes: a contest's round-robin ladder plays; a scraper
reads the seed of every finished game from the public replays (``/games/<id>``, signed out); the
team's next version carries them in a data file (tests/bots/attacker.py, ``oracle``) and, at its
first request of each game, looks for a known deal with its own hand at its seat. Before, deal
seeds hashed the teams' *names*: the new version replayed the earlier version's deals and named
every hidden hand.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path

from harness.contest.config import init_contest, load_contest
from harness.contest.db import ContestDB
from harness.contest.ladder import LADDER_STORE, play_ladder
from harness.league.config import load_config
from harness.league.runner import RunOptions, run_league
from harness.league.store import LeagueStore

warnings.filterwarnings("ignore", message=".*httpx.*")
from kit import attack_lines, checked_version  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from harness.contest.server import create_app  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ATTACKER = REPO / "tests" / "bots" / "attacker.py"
RANDOM = REPO / "bots" / "random_bot.py"


def _scrape_seeds(root: Path) -> dict[str, int]:
    """game id -> seed, from the public pages, signed out."""
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as public:
        ids = sorted(set(re.findall(r'href="/games/([ga]-[0-9a-f]+)"', public.get("/games").text)))
        seeds = {}
        for gid in ids:
            page = public.get(f"/games/{gid}")
            assert page.status_code == 200
            found = re.search(r'"seed":\s*(\d+)', page.text)
            if found:
                seeds[gid] = int(found.group(1))
    return seeds


def test_a_new_version_is_never_dealt_a_deal_its_author_saw_in_a_public_replay(tmp_path):
    from harness.contest.auth import add_team

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    text = (root / "contest.yaml").read_text().replace("ladder: adaptive", "ladder: round_robin")
    (root / "contest.yaml").write_text(text.replace("sandbox: auto", "sandbox: none"))
    db = ContestDB(root / "contest.sqlite")
    for team in ("alpha", "beta"):
        add_team(db, team)
    cfg = load_contest(root)
    random_bot = RANDOM.read_bytes()
    checked_version(cfg.root, db, "alpha", {"bot.py": random_bot})
    checked_version(cfg.root, db, "beta", {"bot.py": random_bot})
    assert play_ladder(cfg, db, should_stop=lambda: False, on_game=None, max_games=8, echo=lambda line: None) == 8
    seeds = _scrape_seeds(root)
    with LeagueStore(str(root / LADDER_STORE)) as store:
        done = {r[0]: r[1] for r in store.db.execute("SELECT id, seed FROM games WHERE status = 'done'")}
    assert set(seeds) <= set(done) and len(done) == 8
    known = sorted(set(seeds.values()) or set(done.values()))  # (every deal, were the seeds ever hidden)
    # beta's next version carries every public deal
    wrapper = ("import runpy, sys\nsys.argv = ['attacker.py', 'oracle', '--deals', 'deals.json']\n"
               "runpy.run_path('attacker.py', run_name='__main__')\n")
    checked_version(cfg.root, db, "beta", {"bot.py": wrapper.encode(), "attacker.py": ATTACKER.read_bytes(),
                              "deals.json": json.dumps(known).encode()})
    assert play_ladder(cfg, db, should_stop=lambda: False, on_game=None, max_games=8, echo=lambda line: None) == 8
    db.close()
    seen = attack_lines(root / "ladder.logs", "beta", "oracle")
    assert len(seen) == 8, seen
    assert [f["known"] for f in seen] == ["no"] * 8  # never a deal it had seen: no hidden hand to name


def _league(tmp_path: Path, deals: str, version: str) -> Path:
    path = tmp_path / "same.yaml"
    path.write_text(f"""name: same
game: crisps
rounds: 2
options: {{max_turns: 30}}
store: {tmp_path / 'same.sqlite'}
workers: 1
limits: {{sandbox: none}}
{deals}
bots:
  - {{name: a, command: python3 {RANDOM} --seed 1, version: v1}}
  - {{name: b, command: python3 {RANDOM} --seed 2, version: {version}}}
""")
    return path


def _seeds_by_version(path: Path) -> dict[str, set[int]]:
    with LeagueStore(load_config(path).store) as store:
        rows = store.db.execute("SELECT g.seed, v.version FROM games g JOIN seats s ON s.game_seq = g.seq "
                                "JOIN versions v ON v.id = s.version_id JOIN bots b ON b.id = v.bot_id "
                                "WHERE b.name = 'b'").fetchall()
    out: dict[str, set[int]] = {}
    for seed, version in rows:
        out.setdefault(version, set()).add(seed)
    return out


def test_a_league_compares_a_bots_versions_on_the_same_deals_only_when_its_config_asks(tmp_path):
    for deals, same in (("", False), ("deals: per_bot", True)):
        where = tmp_path / (deals.replace(": ", "-") or "default")
        where.mkdir()
        for version in ("v1", "v2"):
            assert not run_league(load_config(_league(where, deals, version)), progress=False).errors
        by_version = _seeds_by_version(where / "same.yaml")
        assert len(by_version["v1"]) == len(by_version["v2"]) == 2  # a duplicate set a round: one deal each
        assert (by_version["v1"] == by_version["v2"]) == same


def test_a_bad_deals_value_is_one_line_naming_the_key(tmp_path):
    import pytest

    from harness.league.config import ConfigError
    with pytest.raises(ConfigError) as err:
        load_config(_league(tmp_path, "deals: per_team", "v1"))
    assert str(err.value).count("\n") == 0 and "deals: 'per_team' is not allowed (allowed: per_version, per_bot)" in \
        str(err.value)


def test_an_old_store_keeps_its_played_deals_and_re_deals_a_new_versions_pending_games(tmp_path):
    """A store made when deals were per bot: what was played keeps its seeds (a duplicate set stays
    one deal), but the games planned then for a new version, on its predecessor's deals, are
    re-dealt before they are played."""
    from harness.league.runner import plan_league

    path = _league(tmp_path, "deals: per_bot", "v1")
    assert not run_league(load_config(path), progress=False, options=RunOptions(max_games=3)).errors
    path.write_text(path.read_text().replace("--seed 2, version: v1", "--seed 2, version: v2"))
    with LeagueStore(str(tmp_path / "same.sqlite")) as store:
        plan_league(load_config(path), store)  # b@v2's games, planned on b@v1's deals
        store.db.execute("DELETE FROM meta WHERE key = 'deal_rule'")  # as a store made before the rule
        before = [r[0] for r in store.db.execute("SELECT seed FROM games ORDER BY seq")]
    path.write_text(path.read_text().replace("deals: per_bot\n", ""))
    assert not run_league(load_config(path), progress=False).errors  # resumes, deals per version
    with LeagueStore(str(tmp_path / "same.sqlite")) as store:
        after = [r[0] for r in store.db.execute("SELECT seed FROM games ORDER BY seq")]
    # b@v1 played deal 0 whole and deal 1 half: both keep their seeds; its 4th game was dropped
    assert after[:3] == before[:3]
    by_version = _seeds_by_version(path)
    assert len(by_version["v2"]) == 2 and by_version["v2"].isdisjoint(by_version["v1"])
    assert before[4:] != after[4:]  # (they were b@v1's deals before)


def test_an_old_store_finishes_a_half_played_deal_on_its_seed_and_re_deals_the_rest(tmp_path):
    """A store made when deals were per bot, with the versions unchanged: the second seat order
    of a half-played deal keeps that deal's seed (the duplicate set stays one deal), while a
    deal nobody has played yet is dealt anew under the per-version rule."""
    path = _league(tmp_path, "deals: per_bot", "v1")
    assert not run_league(load_config(path), progress=False, options=RunOptions(max_games=1)).errors
    with LeagueStore(str(tmp_path / "same.sqlite")) as store:
        store.db.execute("DELETE FROM meta WHERE key = 'deal_rule'")  # as a store made before the rule
        before = [r[0] for r in store.db.execute("SELECT seed FROM games ORDER BY seq")]
    assert len(before) == 4 and before[0] == before[1] and before[2] == before[3]
    path.write_text(path.read_text().replace("deals: per_bot\n", ""))
    with LeagueStore(str(tmp_path / "same.sqlite")) as store:
        from harness.league.runner import plan_league
        plan_league(load_config(path), store)  # adopts the rule: re-deals what it may
        after = [r[0] for r in store.db.execute("SELECT seed FROM games ORDER BY seq")]
    # deal 0 half played: its second seat order keeps the seed; deal 1, never played, is re-dealt
    assert after[:2] == before[:2] and after[2] == after[3] != before[2]


def test_the_oracle_names_the_hidden_hands_when_it_is_dealt_a_known_deal(tmp_path):
    """The control: given the very deals it is dealt, the oracle does name the hidden hands."""
    path = _league(tmp_path, "", "v1")
    assert not run_league(load_config(path), progress=False).errors
    seeds = sorted(_seeds_by_version(path)["v1"])
    (tmp_path / "deals.json").write_text(json.dumps(seeds))
    shutil.copy(ATTACKER, tmp_path / "attacker.py")
    other = tmp_path / "other"
    other.mkdir()
    replay = _league(other, "", "v1").read_text().replace(
        f"python3 {RANDOM} --seed 2", f"python3 {tmp_path / 'attacker.py'} oracle --deals {tmp_path / 'deals.json'}")
    (other / "same.yaml").write_text(replay)
    with LeagueStore(str(other / "same.sqlite")) as store:  # the same secret: the same deals
        with LeagueStore(str(tmp_path / "same.sqlite")) as first:
            store.set_meta("deal_secret", first.deal_secret() or "")
    assert not run_league(load_config(other / "same.yaml"), progress=False).errors
    seen = attack_lines(other / "same.logs", "b", "oracle")
    # (a hand the first moves already changed, when the oracle is not first to move, is not found)
    assert len(seen) == 4 and sum(f["known"] == "yes" for f in seen) >= 2, seen
