"""Contest rules that the behaviour tests let slip, each pinned by its own small test (found by
tools/mutate.py: docs/testing.md "The mutation run" lists the mutant each test kills)."""

from __future__ import annotations

from pathlib import Path

from harness.contest.auth import TokenCache
from harness.contest.config import init_contest
from harness.contest.db import ContestDB

# a token and what a contest database of an earlier release keeps of it: scrypt with n=2^12, r=8,
# p=1 and 32 bytes out (docs/contest.md). Changing any of those makes every stored token invalid:
# a running contest would lock out each team at its next sign-in.
STORED_TOKEN = "tb1_" + "x" * 43
STORED_SALT = b"0123456789abcdef"
STORED_HASH = bytes.fromhex("8b2b2900535bfb951cd2d250fa4961e9ffc4093cc578c317c0533769bab00658")


def test_a_token_hashed_by_an_earlier_release_still_signs_its_team_in(tmp_path: Path) -> None:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    team = db.add_team("alpha", STORED_SALT, STORED_HASH)
    assert team == 1
    cache = TokenCache(db)
    assert cache.team_of(STORED_TOKEN) == team
    assert cache.team_of(STORED_TOKEN[:-1] + "y") is None
    db.close()
