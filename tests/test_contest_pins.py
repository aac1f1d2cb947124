"""Contest rules that the behaviour tests let slip, each pinned by its own small test (found by
tools/mutate.py: docs/testing.md "The mutation run" lists the mutant each test kills)."""

from __future__ import annotations

import io
import json
import random
import re
import time
import warnings
import zipfile
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", message=".*httpx.*")
from starlette.testclient import TestClient  # noqa: E402

from harness.contest.auth import TokenCache, add_team  # noqa: E402
from harness.contest.autopause import pause_reason  # noqa: E402
from harness.contest.backup import BackupError, backup_contest  # noqa: E402
from harness.contest.build_output import clean_output  # noqa: E402
from harness.contest.config import ContestConfigError, PausePolicy, init_contest, load_contest  # noqa: E402
from harness.contest.controls import close_uploads  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402
from harness.contest.server import create_app  # noqa: E402
from harness.contest.unpack import CHUNK, Caps, UnpackError, check_name, unpack_upload  # noqa: E402

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


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_a_member_exactly_at_the_ratio_or_of_one_chunk_is_taken_and_one_past_either_is_refused(tmp_path: Path) -> None:
    """The zip-bomb rule refuses a member that unpacks to *more than* ``ratio`` times its compressed
    size, and only past one 64 KB chunk (docs/contest.md)."""
    def compressed(data: bytes) -> int:
        return zipfile.ZipFile(io.BytesIO(_zip({"w.bin": data}))).getinfo("w.bin").compress_size

    # zeros of a length that is an exact multiple of what they compress to (zlib's output grows in
    # steps, so one is found within a few hundred bytes past the chunk)
    size = next(n for n in range(CHUNK + 1, CHUNK + 100_000) if n % compressed(b"\0" * n) == 0)
    ratio = size // compressed(b"\0" * size)
    upload = _zip({"bot.py": b"x = 1\n", "w.bin": b"\0" * size})
    big = 10 * size  # the whole archive's caps out of the way
    assert sorted(unpack_upload(upload, "bot.zip", "bot.py", tmp_path / "at", Caps(5, big, ratio))) == ["bot.py", "w.bin"]
    with pytest.raises(UnpackError, match=f"member 'w.bin' unpacks to .* more than {ratio - 1} times"):
        unpack_upload(upload, "bot.zip", "bot.py", tmp_path / "past", Caps(5, big, ratio - 1))
    # a member of one chunk of zeros is far past a ratio of 100 and still taken (1 KB of noise
    # beside it keeps the whole archive under 100 times its size)
    noise = random.Random(1).randbytes(1024)
    for n, taken in ((CHUNK, True), (CHUNK + 1, False)):
        upload = _zip({"bot.py": b"x = 1\n", "noise.bin": noise, "w.bin": b"\0" * n})
        if taken:
            assert len(unpack_upload(upload, "bot.zip", "bot.py", tmp_path / f"c{n}", Caps(5, big, 100))) == 3
        else:
            with pytest.raises(UnpackError, match="member 'w.bin' unpacks to .* more than 100 times"):
                unpack_upload(upload, "bot.zip", "bot.py", tmp_path / f"c{n}", Caps(5, big, 100))


def test_a_member_16_deep_with_255_character_names_is_taken_and_one_deeper_or_longer_is_refused() -> None:
    deep = "/".join(["d"] * 15 + ["bot.py"])
    assert len(check_name(deep)) == 16 and len(check_name("a" * 255)) == 1
    for name in ("d/" + deep, "a" * 256, "d/" + "a" * 256):
        with pytest.raises(UnpackError, match="nested too deep or has too long a name"):
            check_name(name)


def test_a_version_exactly_at_a_pause_rate_plays_on_and_one_over_it_is_paused() -> None:
    forfeits = PausePolicy(min_games=4, forfeit_rate=0.25, violation_rate=None)
    assert pause_reason(4, 1, 9, forfeits) is None  # 1 of 4: at the rate, not over it
    assert "forfeited 2 of its 4 ladder games (50%, more than the contest's 25%)" in str(pause_reason(4, 2, 0, forfeits))
    assert pause_reason(3, 3, 0, forfeits) is None  # too few games to judge
    violations = PausePolicy(min_games=4, forfeit_rate=None, violation_rate=0.5)
    assert pause_reason(4, 4, 2, violations) is None
    assert "3 violations in its 4 ladder games (0.75 a game" in str(pause_reason(4, 0, 3, violations))


def test_a_build_may_leave_exactly_its_files_and_bytes_and_not_one_more(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "lib").mkdir(parents=True)
    (out / "lib" / "a.bin").write_bytes(b"a" * 1024)
    (out / "b.bin").write_bytes(b"b" * 1024)
    assert clean_output(out, 3, 2048) == ""  # lib, lib/a.bin, b.bin: three entries, 2 KB
    assert clean_output(out, 2, 2048) == "it left more than 2 files and directories"
    assert clean_output(out, 3, 2047) == "it left more than 0 MB of files"


def _site(tmp_path: Path) -> TestClient:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    return TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1")


def _sign_in(client: TestClient, token: str) -> None:
    """Sign ``client`` in with ``token`` through the form, its double-submit cookie included."""
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/signin").text).group(1)  # type: ignore[union-attr]
    assert client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False).status_code == 303


def _alpha_alone(tmp_path: Path) -> tuple[Path, str]:
    """A new Crisps contest with one team, alpha: its root and alpha's token."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    token = add_team(db, "alpha")
    db.close()
    return root, token


def _two_teams(tmp_path: Path) -> tuple[Path, ContestDB, int, int]:
    """A new Crisps contest with teams alpha and beta: its root, its database and their ids."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    add_team(db, "alpha")
    add_team(db, "beta")
    alpha, beta = (db.db.execute("SELECT id FROM teams WHERE name = ?", (n,)).fetchone()[0] for n in ("alpha", "beta"))
    return root, db, alpha, beta


def test_the_sign_in_forms_cookie_is_httponly_strict_and_scoped_to_the_form(tmp_path: Path) -> None:
    with _site(tmp_path) as client:
        cookie = client.get("/signin").headers["set-cookie"].lower()
    for part in ("httponly", "samesite=strict", "path=/signin", "max-age=3600"):
        assert part in cookie, cookie


def test_a_form_of_exactly_form_kb_is_read_and_one_byte_more_is_refused_unread(tmp_path: Path) -> None:
    with _site(tmp_path) as client:
        for size, status in ((16 * 1024, 403), (16 * 1024 + 1, 413)):  # 403: read, and no CSRF cookie
            body = b"token=" + b"a" * (size - 6)
            r = client.post("/signin", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
            assert r.status_code == status, (size, r.text)
        assert "a form is at most 16 KB (site.form_kb); nothing of it was read" in r.text


def test_a_backup_keeps_a_link_in_the_uploads_as_a_link_never_what_it_points_at(tmp_path: Path) -> None:
    """A build may leave a link in its directory; the backup (0700, the organizer's) must not copy
    whatever the link points at into itself."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    secret = tmp_path / "secret.txt"
    secret.write_text("not the contest's\n")
    (root / "submissions" / "1").mkdir(parents=True)
    (root / "submissions" / "1" / "link").symlink_to(secret)
    backup_contest(load_contest(root), tmp_path / "backup")
    copied = tmp_path / "backup" / "submissions" / "1" / "link"
    assert copied.is_symlink() and copied.readlink() == secret


def test_a_backup_goes_into_a_new_or_empty_directory_and_never_a_full_one(tmp_path: Path) -> None:
    """An organizer may make the backup's directory first (on a mounted disk, say): an empty one
    is taken and made private, one with anything in it is refused; a new one is made with its
    parents."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    made = tmp_path / "made"
    made.mkdir(mode=0o755)
    backup_contest(load_contest(root), made)
    assert (made / "contest.yaml").is_file() and (made.stat().st_mode & 0o777) == 0o700
    with pytest.raises(BackupError, match="exists and is not empty"):
        backup_contest(load_contest(root), made)
    backup_contest(load_contest(root), tmp_path / "new" / "disk" / "backup")  # its parents made too
    assert (tmp_path / "new" / "disk" / "backup" / "contest.yaml").is_file()


def test_challenges_take_a_per_hour_of_0_and_a_max_games_of_1_and_nothing_lower(tmp_path: Path) -> None:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    text = (root / "contest.yaml").read_text()
    (root / "contest.yaml").write_text(text + "challenges: {per_hour: 0, max_games: 1}\n")
    policy = load_contest(root).challenges
    assert (policy.per_hour, policy.max_games) == (0, 1)
    for bad in ("{per_hour: -1, max_games: 1}", "{per_hour: 0, max_games: 0}"):
        (root / "contest.yaml").write_text(text + f"challenges: {bad}\n")
        with pytest.raises(ContestConfigError, match="challenges"):
            load_contest(root)


def test_a_teams_page_says_in_one_sentence_that_the_organizer_closed_uploads(tmp_path: Path) -> None:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    token = add_team(db, "alpha")
    close_uploads(db, "organizer")
    db.close()
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        _sign_in(client, token)
        me = client.get("/me").text
    assert '<p class="notice" id="uploads-closed">Uploads closed by the organizer.</p>' in me


def test_a_new_contests_index_counts_no_games_played(tmp_path: Path) -> None:
    with _site(tmp_path) as client:
        page = client.get("/").text
    assert '<b id="games-done">0</b> games played' in page and "0 teams" in page


def test_the_organizer_reopens_uploads_for_the_hours_asked(tmp_path: Path) -> None:
    from test_contest_ops import _org_csrf, _signin

    from harness.contest.controls import new_organizer_token

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    org_token = new_organizer_token(db, "test")
    close_uploads(db, "test")
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as org:
        assert _signin(org, org_token).status_code == 303
        before = time.time()
        r = org.post("/organizer/act", data={"csrf": _org_csrf(org), "action": "reopen", "hours": "1.5"})
        assert r.status_code == 200, r.text
    until = float(db.get_meta("reopened_until", "0") or 0)
    assert before + 5400 <= until <= time.time() + 5400
    db.close()


@pytest.mark.parametrize("start", [0.0, 50.0, 59.5])
def test_sign_in_attempts_are_limited_in_any_minute_also_across_the_counters_window(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                                   start: float) -> None:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    clock = [6000.0 + start]  # a multiple of 60 plus start: the boundary falls inside the burst or not
    monkeypatch.setattr("harness.contest.db.time.time", lambda: clock[0])

    def burst(n: int, step: float) -> list[bool]:
        answers = []
        for _ in range(n):
            answers.append(db.hit("signin:1.2.3.4", 60, 10))
            clock[0] += step
        return answers

    assert burst(12, 0.1) == [True] * 10 + [False] * 2
    # a minute on from the first attempt the limit holds over the minute before: 12 attempts in it
    # (the refused ones count) leave room for none until they have slid out
    clock[0] = 6000.0 + start + 30.0
    assert burst(1, 0) == [False]
    clock[0] = 6000.0 + start + 121.0
    assert burst(10, 0.1) == [True] * 10
    assert db.hit("signin:5.6.7.8", 60, 10), "another address has its own count"


def test_the_rating_chart_spreads_its_points_over_the_whole_width_with_two_versions_or_more() -> None:
    """The chart's points run from x 80 (after the axis' labels) to x 580 of its 600-wide box, one
    step apart; a lone version sits in the middle; only rated versions that played are drawn."""
    from harness.contest.team_pages import _chart

    def version(label: str, rating: float | None, games: int = 3) -> dict[str, object]:
        return {"label": label, "rating": rating, "games": games}

    assert _chart([version("v1", None), version("v2", 5.0, games=0)]) is None
    one = _chart([version("v1", 4.0)])
    assert one is not None and [p["x"] for p in one["points"]] == [330]
    two = _chart([version("v1", 1.0), version("v2", None), version("v3", 3.0)])
    assert two is not None
    assert [(p["label"], p["x"], p["y"]) for p in two["points"]] == [("v1", 80.0, 110.0), ("v3", 580.0, 10.0)]
    assert two["path"] == "80.0,110.0 580.0,10.0"
    three = _chart([version("v1", 2.0), version("v2", 2.0), version("v3", 2.0)])
    assert three is not None and [p["x"] for p in three["points"]] == [80.0, 330.0, 580.0]
    assert {p["y"] for p in three["points"]} == {10.0}


def test_deploy_run_again_rewrites_its_files_and_leaves_contest_yaml_as_it_set_it(tmp_path: Path) -> None:
    """`harness contest deploy` is run again when the host or a port changes: the second run
    rewrites the files of the first in the same folder and finds contest.yaml already in line."""
    from harness.contest.deploy import DeployOptions, write_deploy

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    folder, changed = write_deploy(root, DeployOptions(server_name="old.example.edu"))
    assert changed and folder == root / "deploy"
    config = (root / "contest.yaml").read_text()
    again, changed = write_deploy(root, DeployOptions(server_name="new.example.edu", site_port=8123))
    assert again == folder and changed == []
    assert (root / "contest.yaml").read_text() == config
    nginx = [p for p in folder.iterdir() if p.name.endswith(".nginx.conf")]
    assert len(nginx) == 1
    text = nginx[0].read_text()
    assert "new.example.edu" in text and "127.0.0.1:8123" in text and "old.example.edu" not in text


def _documented_defaults(row: str) -> dict[str, float]:
    """``key (N)`` pairs of one row of docs/contest.md's contest.yaml table."""
    docs = (Path(__file__).resolve().parent.parent / "docs" / "contest.md").read_text(encoding="utf-8")
    line = next(t for t in docs.splitlines() if t.startswith(f"| `{row}` |"))
    return {k: float(v) for k, v in re.findall(r"`(\w+)`[^`(|]*\((\d+(?:\.\d+)?)", line.split("|")[2])}


def test_the_quotas_and_the_sites_limits_default_to_what_docs_contest_md_says(tmp_path: Path) -> None:
    """The quotas', the site's, the challenges', the build's and the pause's defaults:
    written by ``init`` and taken when contest.yaml leaves the section out alike; and the
    default file cap reaches the unpacker: 200 files taken, 201 refused."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    bare = tmp_path / "bare"
    init_contest(bare, "crisps")
    text = (bare / "contest.yaml").read_text()
    text = re.sub(r"^(quotas|site|challenges|build|pause):.*(\n[ #].*)*", "", text, flags=re.M)
    (bare / "contest.yaml").write_text(text)
    assert "quotas" not in text and "challenges" not in text and "uploads_per_hour" not in text
    assert not re.search(r"^(build|pause):", text, flags=re.M)
    quotas = _documented_defaults("quotas")
    site = _documented_defaults("site")
    challenges = _documented_defaults("challenges")
    build = _documented_defaults("build")
    pause = _documented_defaults("pause")
    assert build == {"seconds": 120, "memory_mb": 2048}
    assert set(pause) == {"min_games", "forfeit_rate", "violation_rate"}
    assert set(quotas) == {"uploads_per_hour", "active_versions", "upload_kb", "unpacked_kb", "files", "ratio",
                           "signins_per_minute"}
    assert set(site) == {"header_seconds", "body_seconds", "form_kb", "connections_per_address"}
    assert set(challenges) == {"per_hour", "max_games"}
    for where in (root, bare):
        cfg = load_contest(where)
        assert {k: getattr(cfg.quotas, k) for k in quotas} == quotas, where
        assert {k: getattr(cfg.site, k) for k in site} == site, where
        assert {k: getattr(cfg.challenges, k) for k in challenges} == challenges, where
        assert {k: getattr(cfg, f"build_{k}") for k in build} == build, where
        assert {k: getattr(cfg.pause, k) for k in pause} == pause, where
    q = load_contest(bare).quotas
    caps = Caps(files=q.files, unpacked_bytes=q.unpacked_kb * 1024, ratio=q.ratio)
    files = {"bot.py": b"print(1)\n", **{f"data/{i}.txt": b"x" for i in range(199)}}
    assert len(unpack_upload(_zip(files), "bot.zip", "bot.py", tmp_path / "taken", caps)) == 200
    with pytest.raises(UnpackError, match="200"):
        unpack_upload(_zip({**files, "data/last.txt": b"x"}), "bot.zip", "bot.py", tmp_path / "refused", caps)


def test_a_flood_of_sign_in_attempts_keeps_at_most_limit_plus_one_times_a_key(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The sign-in limit keeps each attempt's time, but no more of them than its answer needs
    (``limit + 1`` a key): an address flooding the form cannot grow the database; the times past
    the window go too."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    clock = [6000.0]
    monkeypatch.setattr("harness.contest.db.time.time", lambda: clock[0])

    def kept(key: str) -> int:
        return int(db.db.execute("SELECT count(*) FROM attempts WHERE key = ?", (key,)).fetchone()[0])

    answers = []
    for _ in range(50):
        answers.append(db.hit("signin:1.2.3.4", 60, 10))
        clock[0] += 0.01
    assert answers == [True] * 10 + [False] * 40
    assert kept("signin:1.2.3.4") == 11
    clock[0] += 61
    assert db.hit("signin:1.2.3.4", 60, 10) and kept("signin:1.2.3.4") == 1
    db.close()


def test_a_contest_with_no_organizer_token_yet_lets_no_organizer_token_in(tmp_path: Path) -> None:
    """Before any organizer token is made (a contest set up by hand), a well-formed ``tbo_`` token
    is checked against nothing and refused: no organizer session."""
    from test_contest_ops import _signin, _site

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    assert db.db.execute("SELECT count(*) FROM organizer").fetchone()[0] == 0
    db.close()
    with _site(root) as org:
        r = _signin(org, "tbo_" + "x" * 43)
        assert r.status_code == 401 and "contest_organizer=" not in r.headers.get("set-cookie", "")
        assert org.get("/organizer").status_code == 403


def test_a_build_that_left_links_is_told_the_first_five_of_them_and_they_are_gone(tmp_path: Path) -> None:
    """An unsandboxed build's links and FIFOs are removed; the build fails naming the first five
    (sorted), so that a build log stays short however many it made."""
    import os

    out = tmp_path / "out"
    out.mkdir()
    (out / "bot.py").write_text("print(1)\n")
    for i in range(7):
        (out / f"l{i}").symlink_to("/")
    os.mkfifo(out / "fifo")
    assert clean_output(out, 100, 1 << 20) == "it left links or special files (removed): fifo, l0, l1, l2, l3"
    assert sorted(p.name for p in out.iterdir()) == ["bot.py"]


def test_a_team_without_a_current_version_cannot_ask_a_challenge(tmp_path: Path) -> None:
    """A challenge plays the asking team's current version: a team that has none is told to
    upload one first, and nothing is recorded."""
    from harness.contest.challenges import ChallengeRefused, request_challenge

    root, db, alpha, beta = _two_teams(tmp_path)
    cfg = load_contest(root)
    sid, _ = db.admit_submission(beta, "python", "bot.py", 10, per_hour=10, in_progress=10)
    db.activate(sid)  # the opponent has one: only the asking team's is missing
    with pytest.raises(ChallengeRefused, match="you have no current version yet"):
        request_challenge(cfg, db, alpha, ["beta"], 2)
    assert db.db.execute("SELECT count(*) FROM challenges").fetchone()[0] == 0
    db.close()


def test_a_contest_that_played_no_game_has_no_game_log_to_keep(tmp_path: Path) -> None:
    """`harness contest status` before the ladder's first game: no logs file yet, so nothing kept,
    in use or due to be dropped."""
    from harness.contest.retention import due

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    cfg = load_contest(root)
    assert due(root / "ladder.sqlite", cfg.retention) == {"logs": 0, "in_use": 0, "expired": 0, "oldest": None}


@pytest.mark.parametrize("value", ["[3, 20]", "{per_hour: 3, max_gamez: 20}"])
def test_challenges_that_are_not_a_mapping_of_their_two_keys_are_refused(tmp_path: Path, value: str) -> None:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    text = (root / "contest.yaml").read_text()
    (root / "contest.yaml").write_text(re.sub(r"^challenges:.*$", f"challenges: {value}", text, flags=re.M))
    with pytest.raises(ContestConfigError, match="challenges"):
        load_contest(root)


def test_the_challenge_api_reads_a_form_of_four_fields_and_refuses_a_fifth(tmp_path: Path) -> None:
    """`POST /api/challenges` parses at most 4 form fields (what the request needs is 2): four reach
    the challenge's own checks, a fifth is refused by the form parser before anything is read, so a
    flood of fields costs the site nothing."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    token = add_team(db, "alpha")
    add_team(db, "beta")
    db.close()
    auth = {"Authorization": f"Bearer {token}"}
    four = {"opponents": "beta", "games": "2", "x1": "1", "x2": "2"}
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        taken = client.post("/api/challenges", data=four, headers=auth)
        assert taken.status_code == 400 and "you have no current version yet" in taken.text, taken.text
        refused = client.post("/api/challenges", data={**four, "x3": "3"}, headers=auth)
        assert refused.status_code == 400 and "Maximum number of fields is 4" in refused.text, refused.text


def test_a_violation_that_does_not_exist_is_not_found_by_the_api_nor_the_pages(tmp_path: Path) -> None:
    """A team asking a violation's seat file by an id that names none gets 404 "no such
    violation" (not a server error, and not 403, which would say the id exists elsewhere)."""
    root, token = _alpha_alone(tmp_path)
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        api = client.get("/api/violations/4242", headers={"Authorization": f"Bearer {token}"})
        assert api.status_code == 404 and "no such violation" in api.text, api.text
        _sign_in(client, token)
        page = client.get("/me/violations/4242/download")
        assert page.status_code == 404 and "no such violation" in page.text


def test_an_upload_may_declare_its_quota_plus_16_kb_of_framing_and_not_a_byte_more(tmp_path: Path) -> None:
    """Both layers that read an upload's Content-Length (the request guard before any route, and
    the upload route itself) take `quotas.upload_kb` plus 16 KB of multipart framing, and refuse
    the next byte with 413 (docs/security.md); a length that is missing or not a number is 411."""
    from types import SimpleNamespace

    from harness.contest.guard import RequestGuard
    from harness.contest.site import ContestSite, Refused

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    site = ContestSite(load_contest(root), start_worker=False)
    try:
        most = site.cfg.quotas.upload_kb * 1024 + 16 * 1024
        guard = RequestGuard(lambda *a: None, site.cfg.site, site.upload_cap)  # type: ignore[arg-type]
        assert guard.body_limit("/me/upload")[0] == guard.body_limit("/api/submissions")[0] == most

        def declared(length: str | None) -> int | None:
            headers = {} if length is None else {"content-length": length}
            try:
                site.check_length(SimpleNamespace(headers=headers))  # type: ignore[arg-type]
            except Refused as exc:
                return exc.status
            return None

        assert declared(str(most)) is None
        assert declared(str(most + 1)) == 413
        assert declared(None) == declared("12x") == 411
    finally:
        site.db.close()


def test_the_ladder_plays_once_the_roster_fills_a_table_of_the_contest(tmp_path: Path) -> None:
    """The ladder's league is written for the current roster only once it fills one of the
    contest's table sizes: none for one team (or two, at tables of 3 and 4), tables of 3 alone
    for three teams, and 3 and 4 from the fourth team on."""
    from kit import checked_version, set_keys

    from harness.contest.ladder import write_ladder_config

    root = tmp_path / "contest"
    init_contest(root, "dominoes")
    set_keys(root, players="[3, 4]")
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    sizes = []
    for team in ("alpha", "beta", "gamma", "delta"):
        add_team(db, team)
        checked_version(root, db, team, {"bot.py": b"print('a bot')\n"})
        league = write_ladder_config(cfg, db, rounds=2)
        sizes.append(None if league is None else (list(league.table_sizes), len(league.bots)))
    db.close()
    assert sizes == [None, None, ([3], 3), ([3, 4], 4)]


@pytest.mark.parametrize("extra", [0, 1])
def test_a_builds_output_stream_is_kept_up_to_its_cap_and_one_byte_more_kills_the_build(extra: int) -> None:
    """The sandboxed build's output (a tar on a pipe) is read up to ``cap`` bytes: exactly the cap
    is kept whole; one byte more calls ``over`` (which kills the build), keeps nothing, and says
    why in one line."""
    import os

    from harness.contest.build_output import OutputReader

    cap = 3 * 1024 * 1024 + 7  # over several reads of a chunk
    read_end, write_end = os.pipe()
    killed: list[bool] = []
    reader = OutputReader(read_end, cap, lambda: killed.append(True))
    payload = bytes(range(256)) * (cap // 256) + b"x" * (cap % 256 + extra)
    with os.fdopen(write_end, "wb") as out:
        out.write(payload)
    data = reader.join()
    if extra:
        assert killed == [True] and data == b""
        assert reader.problem == "it left more than 3 MB of files (the build's output cap)"
    else:
        assert killed == [] and data == payload and reader.problem == ""


@pytest.mark.parametrize("rate", ["-0.1", "often", "true", "[0.1]"])
def test_a_pause_rate_that_is_not_a_number_of_zero_or_more_is_refused_in_one_line(tmp_path: Path, rate: str) -> None:
    """`pause.forfeit_rate` and `pause.violation_rate` take a number >= 0 or null
    (docs/contest.md): a negative one, a word, a boolean or a list is refused with one line
    naming the key, never taken and never a crash."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    text = re.sub(r"^pause:.*$", "", (root / "contest.yaml").read_text(), flags=re.M)
    for key in ("forfeit_rate", "violation_rate"):
        (root / "contest.yaml").write_text(text + f"pause: {{{key}: {rate}}}\n")
        with pytest.raises(ContestConfigError, match=f"pause.{key}: .* is not allowed"):
            load_contest(root)
    (root / "contest.yaml").write_text(text + "pause: {forfeit_rate: 0, violation_rate: null}\n")
    policy = load_contest(root).pause
    assert policy.forfeit_rate == 0.0 and policy.violation_rate is None


def test_an_upload_over_the_hourly_quota_is_told_the_minutes_until_the_next(tmp_path: Path) -> None:
    """With the quota used by an upload just made, the next is allowed in 60 minutes (whole
    minutes plus one, counted from the oldest upload of the hour), and nothing is recorded."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    add_team(db, "alpha")
    team = db.team_by_name("alpha")
    assert team is not None
    first, why = db.admit_submission(team.id, "python", "bot.py", 10, per_hour=1, in_progress=10)
    assert first is not None and why is None
    second, why = db.admit_submission(team.id, "python", "bot.py", 10, per_hour=1, in_progress=10)
    assert second is None
    assert why == "upload quota reached: 1 uploads per hour per team; the next is allowed in 60 min"
    # an upload 2995 s old: the next in 600-605 s, said as 11 min (10 whole minutes and the rest)
    db.db.execute("UPDATE submissions SET created_at = created_at - 2995")
    assert db.admit_submission(team.id, "python", "bot.py", 10, per_hour=1, in_progress=10)[1] == (
        "upload quota reached: 1 uploads per hour per team; the next is allowed in 11 min")
    assert db.db.execute("SELECT count(*) FROM submissions").fetchone()[0] == 1
    db.close()


@pytest.mark.parametrize("ladder, prefix", [("adaptive", "a-"), ("round_robin", "g-")])
def test_the_check_games_take_the_ids_of_the_ladders_games(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           ladder: str, prefix: str) -> None:
    """An upload cannot tell its conformance games from the ladder's by their ids: the check
    draws them with the prefix the ladder's schedule gives its own ("a-" adaptive, "g-" round
    robin)."""
    import harness.play.conformance as conformance
    from harness.contest.build import check_upload

    class Drawn(Exception):
        pass

    def drawn(*args: object, id_prefix: str = "", **kwargs: object) -> None:
        raise Drawn(id_prefix)

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    text = (root / "contest.yaml").read_text()
    (root / "contest.yaml").write_text(re.sub(r"^ladder: .*$", f"ladder: {ladder}", text, flags=re.M))
    cfg = load_contest(root)
    monkeypatch.setattr(conformance, "conformance_games", drawn)
    with pytest.raises(Drawn) as info:
        check_upload(cfg, cfg.runtimes["python"], tmp_path, "alpha")
    assert info.value.args == (prefix,)


def test_an_uploads_file_name_is_kept_as_its_last_200_characters(tmp_path: Path) -> None:
    """A file name of any length is recorded cut to its last 200 characters (what decides how the
    upload is read, its extension, is at the end)."""
    root, token = _alpha_alone(tmp_path)
    name = "x" * 294 + "bot.py"
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        r = client.post("/api/submissions", headers={"Authorization": f"Bearer {token}"}, data={"runtime": "python"},
                        files={"file": (name, b"print('a bot')\n")})
        assert r.status_code == 201, r.text
    db = ContestDB(root / "contest.sqlite")
    assert [row[0] for row in db.db.execute("SELECT filename FROM submissions")] == [name[-200:]]
    db.close()


def test_status_says_how_many_logs_the_passes_dropped_and_when_the_last_ran(tmp_path: Path) -> None:
    """`harness contest status` adds up what each retention pass dropped (past their time, over
    the disk budget) and says when the last pass ran; "never" before the first."""
    import time as clock

    from harness.contest.retention import Pruned
    from harness.contest.status import contest_status, format_status, record_pruned

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    assert any("(last: never)" in line for line in format_status(contest_status(cfg, db)))
    record = record_pruned(db)
    record(Pruned(expired=3, over_budget=0))
    record(Pruned(expired=1, over_budget=2))
    status = contest_status(cfg, db)
    assert status["dropped"]["expired"] == 4 and status["dropped"]["over_budget"] == 2
    assert abs(status["dropped"]["at"] - clock.time()) < 600
    line = next(x for x in format_status(status) if "dropped so far" in x)
    assert "dropped so far 4 past their time and 2 over the disk budget (last: " in line and "never" not in line
    db.close()


def test_the_leaderboard_lists_the_fitted_versions_in_the_fits_order_then_the_others(tmp_path: Path) -> None:
    """The board's order is the fit's (its rank, whatever the versions' conservative ratings);
    a version the fit has not seen yet (new since the last fit) comes after every fitted one,
    even with a higher rating, and carries no P(>next)."""
    from kit import checked_version

    from harness.contest.db_ops import write_fit
    from harness.contest.ladder import leaderboard_rows

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    sid = {}
    for team in ("alpha", "beta", "gamma"):
        add_team(db, team)
        sid[team] = checked_version(root, db, team, {"bot.py": b"print('a bot')\n"})
    # (submission, mu, sigma, fit_rank, p_better, noisy, widened, noise): alpha rates higher, beta ranks first
    write_fit(db, [(sid["beta"], 20.0, 8.0, 1, 0.7, 0, None, None), (sid["alpha"], 30.0, 5.0, 2, None, 0, None, None)],
              games=10)
    rows = leaderboard_rows(db)
    db.close()
    assert [(r["team"], r["rank"], r["fitted"]) for r in rows] == [("beta", 1, True), ("alpha", 2, True),
                                                                   ("gamma", 3, False)]
    assert rows[2]["rating"] > rows[0]["rating"] and rows[0]["p_better"] == 0.7 and rows[2]["p_better"] is None


def test_the_head_to_head_matrix_is_made_once_per_ttl_and_again_for_other_teams(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matrix reads every pair's games: pages reuse it for MATRIX_TTL seconds, then it is made
    again; another set of teams (or another ladder) gets its own."""
    from types import SimpleNamespace

    from harness.contest import h2h

    made: list[tuple[str, ...]] = []
    now = [1000.0]
    monkeypatch.setattr(h2h, "h2h_matrix", lambda reader, teams: made.append(tuple(teams)) or {"n": len(made)})
    monkeypatch.setattr(h2h, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(h2h, "_CACHE", {})
    reader = SimpleNamespace(path="/a/ladder.sqlite")
    first = h2h.cached_matrix(reader, ["alpha", "beta"])  # type: ignore[arg-type]
    now[0] += h2h.MATRIX_TTL - 0.5
    assert h2h.cached_matrix(reader, ["alpha", "beta"]) is first and len(made) == 1  # type: ignore[arg-type]
    assert h2h.cached_matrix(reader, ["alpha", "gamma"]) is not first and len(made) == 2  # type: ignore[arg-type]
    now[0] += 1.0
    assert h2h.cached_matrix(reader, ["alpha", "beta"]) == {"n": 3}  # type: ignore[arg-type]


def test_the_client_says_in_one_plain_line_why_it_cannot_read_the_file_to_upload(tmp_path: Path) -> None:
    """`harness contest submit` of a file that is missing or unreadable: the file and the
    system's reason, one line, before anything is sent."""
    from harness.contest.client import Client, ClientError

    client = Client("http://127.0.0.1:9", "tbt_" + "x" * 43)  # nothing listens: nothing must be sent
    with pytest.raises(ClientError) as info:
        client.submit(tmp_path / "missing.py", "python")
    assert str(info.value) == f"{tmp_path / 'missing.py'}: cannot read it: No such file or directory"
    with pytest.raises(ClientError) as info:
        client.submit(tmp_path, "python")
    assert str(info.value) == f"{tmp_path}: cannot read it: Is a directory"


def test_a_team_page_shows_a_version_that_has_not_played_with_no_games_and_no_rating(tmp_path: Path) -> None:
    """A current version before its first ladder game: 0 games, 0 wins, and no mu, sigma or rating
    (not the prior's), on the team's public page."""
    from kit import checked_version

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    add_team(db, "alpha")
    checked_version(root, db, "alpha", {"bot.py": b"print('a bot')\n"})
    db.close()
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        page = client.get("/teams/alpha").text
    table = re.search(r'<table id="team-versions">.*?<tbody>(.*?)</tbody>', page, re.S).group(1)  # type: ignore[union-attr]
    cells = re.findall(r'<td class="num">([^<]*)</td>', table)
    assert cells == ["0", "0", "\u2013", "\u2013", "\u2013"], cells  # fmt(None): an en dash


def test_a_body_message_without_more_body_is_the_whole_body() -> None:
    """ASGI's `more_body` defaults to False: a server that leaves it out has sent the whole body
    in that message, so the guard takes the body as done (no deadline on what follows, no
    "Connection: close" on the answer), as it does for `more_body: False`; `True` waits on."""
    import asyncio

    from harness.contest.guard import _Body

    async def done_after(*messages: dict) -> bool:  # type: ignore[type-arg]
        queue = list(messages)

        async def receive() -> dict:  # type: ignore[type-arg]
            return queue.pop(0)

        body = _Body(receive, 1000, "a form", 5, done=False)
        for _ in messages:
            await body.receive()
        return body.done

    assert asyncio.run(done_after({"type": "http.request", "body": b"a=1"}))
    assert asyncio.run(done_after({"type": "http.request", "body": b"a=1", "more_body": False}))
    assert not asyncio.run(done_after({"type": "http.request", "body": b"a=", "more_body": True}))
    assert asyncio.run(done_after({"type": "http.request", "body": b"a=", "more_body": True},
                                  {"type": "http.request", "body": b"1"}))


def test_a_build_log_is_kept_whole_up_to_64_kb_and_past_that_as_its_two_ends() -> None:
    """A build's log (what a participant reads of its compiler's output) is kept whole up to 64 KB
    (65,536 characters); a longer one as its first and last 32 KB with the count of the
    characters cut between them."""
    from harness.contest.build import _cap

    whole = "".join(f"{i:07d}\n" for i in range(8192))  # 65,536 characters
    assert _cap(whole) == whole
    longer = whole + "tail\n"
    kept = _cap(longer)
    assert kept == longer[:32768] + "\n[... 5 characters cut ...]\n" + longer[-32768:]
    assert len(kept) < len(longer) + 40


def test_pausing_a_failing_version_says_so_once_and_returns_it(tmp_path: Path) -> None:
    """`pause_failing` pauses each current version over a rate, says so in one line per version
    (what `harness contest run` prints) and returns the versions it paused now: a version
    within the rates, or already paused, is neither."""
    from kit import checked_version

    from harness.contest.autopause import pause_failing

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    sid = {}
    for team in ("alpha", "beta"):
        add_team(db, team)
        sid[team] = checked_version(root, db, team, {"bot.py": b"print('a bot')\n"})
    # (submission, version, games, wins, rank_sum, forfeits, violations): alpha forfeits 5 of 20
    db.add_results([(sid["alpha"], 1, 20, 5, 20, 5, 0), (sid["beta"], 2, 20, 15, 5, 0, 0)], {})
    lines: list[str] = []
    assert pause_failing(db, cfg.pause, lines.append) == [sid["alpha"]]
    assert lines == [f"paused alpha's version s{sid['alpha']}: it forfeited 5 of its 20 ladder games (25%, more "
                     f"than the contest's 10%)"]
    assert pause_failing(db, cfg.pause, lines.append) == [] and len(lines) == 1  # already paused
    db.close()


@pytest.mark.parametrize("executor", ["[dask]", "{dask: 'tcp://127.0.0.1:8786', workers: 2}", "remote"])
def test_a_contest_executor_other_than_local_or_one_dask_address_is_refused(tmp_path: Path, executor: str) -> None:
    """contest.yaml's `executor` is `local` or `{dask: ADDRESS}` and nothing else: a list, a
    mapping with another key, or another word is refused in one line."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    text = re.sub(r"^executor:.*$", "", (root / "contest.yaml").read_text(), flags=re.M)
    (root / "contest.yaml").write_text(text + f"executor: {executor}\n")
    with pytest.raises(ContestConfigError, match="executor: expected local, or {dask: ADDRESS}"):
        load_contest(root)
    (root / "contest.yaml").write_text(text + "executor: {dask: 'tcp://127.0.0.1:8786'}\n")
    assert load_contest(root)


@pytest.mark.parametrize("passes", [[(3, 0)], [(0, 2)], [(0, 0), (1, 1)]])
def test_each_retention_pass_that_dropped_logs_is_recorded_and_an_empty_one_is_not(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, passes: list[tuple[int, int]]) -> None:
    """The Pruner hands `record` (status's counters) every pass that dropped logs past their time
    or over the budget, either alone, and no pass that dropped nothing."""
    import threading

    from harness.contest import retention
    from harness.contest.config import LogRetention

    results = [retention.Pruned(*p) for p in passes]
    ran = threading.Event()

    def prune(store_path: Path, keep: object) -> retention.Pruned:
        if len(results) == 1:
            ran.set()
        return results.pop(0) if results else retention.Pruned()

    monkeypatch.setattr(retention, "prune_logs", prune)
    recorded: list[retention.Pruned] = []
    pruner = retention.Pruner(tmp_path / "ladder.sqlite", LogRetention(), recorded.append, every=0.01)
    pruner.start()
    assert ran.wait(10)
    pruner.stop()
    assert recorded == [p for p in map(lambda q: retention.Pruned(*q), passes) if p.expired or p.over_budget]


def test_the_head_to_head_of_two_teams_before_any_ladder_game_says_none(tmp_path: Path) -> None:
    """Before the ladder's store exists, two teams' head to head counts no game together."""
    root, db, _, _ = _two_teams(tmp_path)
    db.close()
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        page = client.get("/h2h?a=alpha&b=beta").text
    assert re.search(r'id="h2h-summary">0 games together \(all versions\): alpha finished ahead in 0,\s*beta in 0, '
                     r'level in 0\.', page), page[-2000:]


def test_a_challenges_tally_counts_wins_losses_and_level_games_apart(tmp_path: Path) -> None:
    """The challenger's tally against each opponent: ahead, behind and level are three counts
    (a level game, a tie in the ranking, is neither a win nor a loss)."""
    from harness.contest import db_ops
    from harness.contest.challenges import challenges_of, request_challenge

    root, db, alpha, beta = _two_teams(tmp_path)
    cfg = load_contest(root)
    for team in (alpha, beta):
        sid, _ = db.admit_submission(team, "python", "bot.py", 10, per_hour=10, in_progress=10)
        db.activate(sid)
    cid = request_challenge(cfg, db, alpha, ["beta"], 3)
    for n, (teams, ranking) in enumerate([(["alpha", "beta"], [0, 1]), (["beta", "alpha"], [0, 1]),
                                          (["alpha", "beta"], [0, 0])]):
        db_ops.record_challenge_game(db, db_ops.ChallengeGame(cid, n, json.dumps(teams), json.dumps(ranking),
                                                              "[0, 0]", "[]"), n == 2)
    [mine] = challenges_of(db, alpha)
    assert mine["versus"] == {"beta": [1, 1, 1]} and mine["status"] == "done"
    assert [g["won"] for g in mine["results"]] == [True, False, True]
    db.close()


def test_a_version_that_does_not_exist_is_not_found_for_a_signed_in_team(tmp_path: Path) -> None:
    """A signed-in team asking for a version id nobody has gets 404, not a crash or a 403."""
    root, token = _alpha_alone(tmp_path)
    with TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1") as client:
        _sign_in(client, token)
        missing = client.get("/me/submissions/4242")
    assert missing.status_code == 404 and "no version 4242" in missing.text
