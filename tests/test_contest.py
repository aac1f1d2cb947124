"""The contest site through Starlette's TestClient: the API, sessions, CSRF, quotas, safe unpacking,
per-team authorization, and the organizer's commands. Every abuse is attacked and must be refused
with a clear message, keeping nothing."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import tarfile
import time
import warnings
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

warnings.filterwarnings("ignore", message=".*httpx.*")
from kit import checked_version  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from harness.cli import cli  # noqa: E402
from harness.contest.auth import add_team, renew_token  # noqa: E402
from harness.contest.config import ContestConfigError, init_contest, load_contest  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402
from harness.contest.server import create_app  # noqa: E402
from harness.contest.site import SESSION_COOKIE  # noqa: E402
from harness.contest.unpack import Caps, UnpackError, unpack_upload  # noqa: E402
from harness.league.config import BotEntry  # noqa: E402
from harness.league.store import GameOutcome, LeagueStore  # noqa: E402
from harness.play.limits import LIMIT_KEYS  # noqa: E402
from harness.play.sandbox import bwrap_userns  # noqa: E402
from harness.report.tables import TableRow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GOOD_BOT = (REPO / "bots" / "random_bot.py").read_bytes()


def _contest(tmp_path: Path, quotas: str = "") -> Path:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    if quotas:
        text = (root / "contest.yaml").read_text()
        for line in quotas.strip().splitlines():
            key = line.split(":")[0].strip()
            text = re.sub(rf"^  {key}: .*$", f"  {line.strip()}", text, flags=re.M)
        (root / "contest.yaml").write_text(text)
    return root


@pytest.fixture()
def contest(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = _contest(tmp_path, "uploads_per_hour: 3\nsignins_per_minute: 5\nupload_kb: 64\nfiles: 5\nunpacked_kb: 256")
    db = ContestDB(root / "contest.sqlite")
    tokens = {name: add_team(db, name) for name in ("alpha", "beta")}
    db.close()
    return root, tokens


def _client(root: Path, worker: bool = False) -> TestClient:
    return TestClient(create_app(root, start_worker=worker), base_url="http://127.0.0.1")


def _sign_in(client: TestClient, token: str) -> str:
    page = client.get("/signin")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/me"
    me = client.get("/me")
    return re.search(r'name="csrf" value="([^"]+)"', me.text).group(1)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _nothing_kept(root: Path) -> None:
    folder = root / "submissions"
    assert not folder.exists() or not any(folder.iterdir())
    db = ContestDB(root / "contest.sqlite")
    assert db.db.execute("SELECT count(*) FROM submissions").fetchone()[0] == 0
    db.close()


def _zip(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, target)
    return out.getvalue()


def _tgz(add) -> bytes:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as t:
        add(t)
    return out.getvalue()


# -- the organizer's commands ------------------------------------------------------------------------
def test_team_add_prints_the_token_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    root = tmp_path / "c"
    runner = CliRunner()
    assert runner.invoke(cli, ["contest", "init", str(root), "--game", "crisps"]).exit_code == 0
    result = runner.invoke(cli, ["contest", "team", "add", str(root), "alpha"])
    assert result.exit_code == 0
    token = result.output.strip().splitlines()[-1]
    assert re.fullmatch(r"tb1_[A-Za-z0-9_-]{40,}", token)
    stored = b"".join(p.read_bytes() for p in root.glob("contest.sqlite*"))
    assert token.encode() not in stored and token.split("_", 1)[1].encode() not in stored
    again = runner.invoke(cli, ["contest", "team", "add", str(root), "alpha"])
    assert again.exit_code != 0 and "exists already" in again.output
    bad = runner.invoke(cli, ["contest", "team", "add", str(root), "../x"])
    assert bad.exit_code != 0 and "not allowed as a team name" in bad.output
    assert "already exists" in runner.invoke(cli, ["contest", "init", str(root), "--game", "crisps"]).output
    with _client(root) as client:
        assert client.get("/api/submissions/1", headers=_bearer(token)).status_code == 404  # valid token
        assert client.get("/api/submissions/1", headers=_bearer(token[:-1] + "x")).status_code == 401


# -- the API and the build worker -----------------------------------------------------------------------
def _wait(client: TestClient, sid: int, token: str) -> dict:
    for _ in range(480):
        body = client.get(f"/api/submissions/{sid}", headers=_bearer(token)).json()
        if body["status"] in ("active", "failed"):
            return body
        time.sleep(0.25)
    raise AssertionError(f"submission {sid} still {body['status']}")


def test_api_upload_builds_checks_and_activates_and_a_broken_build_says_why(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root, worker=True) as client:
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                        files={"file": ("mybot.py", b"def broken(:\n")})
        assert r.status_code == 201 and set(r.json()) == {"id", "status"} and r.json()["status"] == "building"
        failed = _wait(client, r.json()["id"], tokens["alpha"])
        assert failed["status"] == "failed" and "SyntaxError" in failed["build_log"]
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                        files={"file": ("bot.zip", _zip({"bot.py": GOOD_BOT, "README": b"hi"}))})
        assert r.status_code == 201
        ok = _wait(client, r.json()["id"], tokens["alpha"])
        assert ok["status"] == "active" and "conformance passed" in ok["check_log"], ok
        # each conformance game on its line: numbered from 1 of the table's games, its seat and rank (1 = first)
        games = re.findall(r"^  game (\d+)/(\d+): seat (\d+) of 2, rank (\d+), ", ok["check_log"], flags=re.M)
        assert [int(g[0]) for g in games] == list(range(1, int(games[0][1]) + 1)), ok["check_log"]
        assert {int(g[2]) for g in games} == {0, 1} and all(int(g[3]) in (1, 2) for g in games), ok["check_log"]
        # another team may not read it, whatever it knows of the id
        assert client.get(f"/api/submissions/{ok['id']}", headers=_bearer(tokens["beta"])).status_code == 403
        assert client.get(f"/api/submissions/{ok['id']}").status_code == 401
        board = client.get("/api/leaderboard").json()
        assert [row["bot"] for row in board["table"]] == ["alpha"] and board["table"][0]["version"] == f"s{ok['id']}"


# -- sessions and CSRF ------------------------------------------------------------------------------------
def test_an_upload_without_a_content_length_is_refused_before_it_is_read(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest

    def chunked():  # type: ignore[no-untyped-def]  # a streamed body: Transfer-Encoding chunked, no length
        yield b"--x\r\nContent-Disposition: form-data; name=\"runtime\"\r\n\r\npython\r\n--x--\r\n"

    with _client(root) as client:
        r = client.post("/api/submissions", headers={**_bearer(tokens["alpha"]),
                                                     "Content-Type": "multipart/form-data; boundary=x"},
                        content=chunked())
        assert "content-length" not in r.request.headers
        assert r.status_code == 411 and "Content-Length" in r.json()["error"], r.text
    _nothing_kept(root)


def test_a_renewed_token_stops_working_on_a_running_site_even_once_verified(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest

    def post(client: TestClient, token: str) -> int:  # authenticated, then refused for its runtime: 400
        return client.post("/api/submissions", headers=_bearer(token), data={"runtime": "cobol"},
                           files={"file": ("bot.py", GOOD_BOT)}).status_code

    with _client(root) as client:
        assert post(client, tokens["alpha"]) == 400  # verified once: the site remembers it
        db = ContestDB(root / "contest.sqlite")
        new = renew_token(db, "alpha")  # as `harness contest team token` does, from another process
        db.close()
        assert post(client, tokens["alpha"]) == 401
        assert post(client, new) == 400 and post(client, tokens["beta"]) == 400


def test_session_cookie_is_httponly_samesite_and_the_token_never_in_a_url(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root) as client:
        page = client.get("/signin")
        assert 'method="post"' in page.text and "token" in page.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        r = client.post("/signin", data={"csrf": csrf, "token": tokens["alpha"]}, follow_redirects=False)
        cookie = r.headers["set-cookie"]
        assert SESSION_COOKIE in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert tokens["alpha"] not in r.headers["location"] and tokens["alpha"] not in cookie
        me = client.get("/me")
        assert "Team alpha" in me.text
        # signing out ends the session on the server: the old cookie, replayed, is no session
        old_cookie = client.cookies.get(SESSION_COOKIE)
        session_csrf = re.search(r'name="csrf" value="([^"]+)"', me.text).group(1)
        assert client.post("/signout", data={"csrf": session_csrf}, follow_redirects=False).status_code == 303
        replay = _client(root)
        replay.cookies.set(SESSION_COOKIE, old_cookie)
        assert replay.get("/me", follow_redirects=False).headers["location"] == "/signin"
        # the sign-in form without its CSRF token
        fresh = _client(root)
        r = fresh.post("/signin", data={"token": tokens["alpha"]}, follow_redirects=False)
        assert r.status_code == 403 and "CSRF" in r.text


def test_upload_form_without_csrf_or_with_another_sessions_csrf_is_refused(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root) as alpha, _client(root) as beta:
        alpha_csrf = _sign_in(alpha, tokens["alpha"])
        _sign_in(beta, tokens["beta"])
        files = {"file": ("bot.py", GOOD_BOT)}
        r = alpha.post("/me/upload", data={"runtime": "python"}, files=files, follow_redirects=False)
        assert r.status_code == 403 and "CSRF" in r.text
        r = beta.post("/me/upload", data={"runtime": "python", "csrf": alpha_csrf}, files=files, follow_redirects=False)
        assert r.status_code == 403 and "CSRF" in r.text
        _nothing_kept(root)
        # a made-up session cookie is no session: the sign-in page, and a form posted with it is refused
        forged = _client(root)
        forged.cookies.set(SESSION_COOKIE, "x" * 43)
        assert forged.get("/me", follow_redirects=False).headers["location"] == "/signin"
        r = forged.post("/me/upload", data={"runtime": "python", "csrf": alpha_csrf}, files=files, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/signin"
        _nothing_kept(root)
        r = alpha.post("/me/upload", data={"runtime": "python", "csrf": alpha_csrf}, files=files, follow_redirects=False)
        assert r.status_code == 303


def test_sign_in_attempts_are_limited_per_address(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root) as client:
        page = client.get("/signin")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        codes = [client.post("/signin", data={"csrf": csrf, "token": f"tb1_{'x' * 43}"}).status_code for _ in range(5)]
        assert codes == [401] * 5
        r = client.post("/signin", data={"csrf": csrf, "token": tokens["alpha"]})
        assert r.status_code == 429 and "too many sign-in attempts" in r.text
        r = client.get("/api/submissions/1", headers=_bearer(f"tb2_{'y' * 43}"))
        assert r.status_code == 429 and "too many sign-in attempts" in r.json()["error"]


# -- quotas -------------------------------------------------------------------------------------------------
def test_quotas_uploads_per_hour_size_and_versions_in_progress(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root) as client:
        big = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                          files={"file": ("bot.py", b"#" * (80 * 1024))})
        assert big.status_code == 413 and "at most 64 KB" in big.json()["error"]
        _nothing_kept(root)
        codes = []
        for _ in range(3):
            r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                            files={"file": ("bot.py", GOOD_BOT)})
            codes.append(r.status_code)
        # no worker: the first two stay in progress; the third is over the versions in progress
        assert codes[:2] == [201, 201] and codes[2] == 429
        db = ContestDB(root / "contest.sqlite")
        db.set_status(1, "failed")
        db.set_status(2, "failed")
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                        files={"file": ("bot.py", GOOD_BOT)})
        assert r.status_code == 201
        db.set_status(3, "failed")
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                        files={"file": ("bot.py", GOOD_BOT)})
        assert r.status_code == 429 and "3 uploads per hour" in r.json()["error"]
        # the wait is counted from the oldest upload of the hour: under an hour, in whole minutes
        wait = int(re.search(r"allowed in (\d+) min", r.json()["error"]).group(1))
        assert 1 <= wait <= 60, r.json()
        # nothing kept of the refused ones: three rows and three folders, the admitted uploads
        assert db.db.execute("SELECT count(*) FROM submissions").fetchone()[0] == 3
        assert sorted(p.name for p in (root / "submissions").iterdir()) == ["1", "2", "3"]
        # beta's quota is its own
        r = client.post("/api/submissions", headers=_bearer(tokens["beta"]), data={"runtime": "python"},
                        files={"file": ("bot.py", GOOD_BOT)})
        assert r.status_code == 201
        r = client.post("/api/submissions", headers=_bearer(tokens["beta"]), data={"runtime": "cobol"},
                        files={"file": ("bot.py", GOOD_BOT)})
        assert r.status_code == 400 and "choose a runtime" in r.json()["error"]
        db.set_meta("frozen", "1")
        r = client.post("/api/submissions", headers=_bearer(tokens["beta"]), data={"runtime": "python"},
                        files={"file": ("bot.py", GOOD_BOT)})
        assert r.status_code == 403 and "finals" in r.json()["error"]
        db.close()


def test_a_version_checked_after_a_newer_one_stays_aside_and_activating_twice_changes_nothing(contest) -> None:  # type: ignore[no-untyped-def]
    root, _ = contest
    db = ContestDB(root / "contest.sqlite")
    team = db.db.execute("SELECT id FROM teams WHERE name = 'alpha'").fetchone()[0]
    first, _ = db.admit_submission(team, "python", "bot.py", 10, per_hour=10, in_progress=10)
    second, _ = db.admit_submission(team, "python", "bot.py", 10, per_hour=10, in_progress=10)
    assert first is not None and second is not None

    def state() -> tuple[int, dict[int, str]]:
        current = db.db.execute("SELECT current_submission FROM teams WHERE id = ?", (team,)).fetchone()[0]
        return current, dict(db.db.execute("SELECT id, status FROM submissions").fetchall())

    db.activate(second)
    db.activate(first)  # its check finished after the newer version went live: it stays aside
    assert state() == (second, {first: "replaced", second: "active"})
    db.activate(second)  # a worker retrying the same activation
    assert state() == (second, {first: "replaced", second: "active"})
    db.close()


_NO_RUNTIMES = "runtimes: expected a mapping of runtime names to {entry, build, run}"


@pytest.mark.parametrize(("key", "value", "error"), [
    ("time", {"init_ms": 5000, "move_ms": 200, "bank_ms": 0}, None),  # no bank: every move within move_ms
    ("time", {"init_ms": 5000, "move_ms": 200, "bank_ms": -1}, "time.bank_ms: -1 is not allowed (allowed: an integer >= 0)"),
    ("time", {"init_ms": 5000, "move_ms": 0, "bank_ms": 0}, "time.move_ms: 0 is not allowed (allowed: an integer >= 1)"),
    ("executor", "local", None),
    ("executor", {"dask": "tcp://127.0.0.1:8786"}, None),
    ("executor", {"dask": "tcp://127.0.0.1:8786", "workers": 4}, "executor: expected local, or {dask: ADDRESS}"),
    ("executor", {}, "executor: expected local, or {dask: ADDRESS}"),
    ("runtimes", {}, _NO_RUNTIMES),
    ("runtimes", ["python"], _NO_RUNTIMES),
    # the limits are the league config's, checked by its own check (one validator) as the contest loads
    ("limits", {"memory_mb": 512, "sandbox": "none"}, None),
    ("limits", {"memory_mb": 0}, "limits.memory_mb: 0 is not allowed (allowed: an integer >= 1)"),
    ("limits", {"memory_gb": 1}, "allowed keys: " + ", ".join(LIMIT_KEYS)),
])
def test_contest_yaml_time_executor_and_runtimes_are_checked(tmp_path: Path, key: str, value: object,
                                                             error: str | None) -> None:
    import yaml

    root = tmp_path / "contest"
    init_contest(root, "crisps")
    data = yaml.safe_load((root / "contest.yaml").read_text())
    data[key] = value
    (root / "contest.yaml").write_text(yaml.safe_dump(data))
    if error is None:
        cfg = load_contest(root)
        assert cfg.time["bank_ms"] == (0 if key == "time" else 2000)
        assert cfg.executor == (value if key == "executor" and isinstance(value, dict) else None)
    else:
        with pytest.raises(ContestConfigError) as refused:
            load_contest(root)
        assert str(refused.value).endswith(error)


def test_a_build_over_its_time_is_stopped_and_says_so(tmp_path: Path) -> None:
    from harness.contest.build import build_upload
    from harness.contest.config import Runtime

    cfg = load_contest(_contest(tmp_path))
    cfg = dataclasses.replace(cfg, limits={**cfg.limits, "sandbox": "none"}, build_seconds=1)
    workdir = cfg.root / "submissions" / "1"
    workdir.mkdir(parents=True)
    (workdir / "bot.py").write_text("print('hi')\n")
    slow = Runtime("slow", "bot.py", ("sh", "-c", "echo compiling; exec sleep 60"), ("python3", "bot.py"))
    built, log = build_upload(cfg, slow, workdir)
    assert not built and "compiling" in log
    assert log.endswith("\nbuild stopped: it took more than 1 s (the contest's build.seconds)\n"), log


def test_a_build_log_over_the_cap_keeps_its_start_and_its_end(tmp_path: Path) -> None:
    from harness.contest.build import LOG_CAP, build_upload
    from harness.contest.config import Runtime

    cfg = load_contest(_contest(tmp_path))
    cfg = dataclasses.replace(cfg, limits={**cfg.limits, "sandbox": "none"})
    workdir = cfg.root / "submissions" / "1"
    workdir.mkdir(parents=True)
    (workdir / "bot.py").write_text("print('hi')\n")
    noisy = "printf HEAD; head -c 300000 /dev/zero | tr '\\0' x; printf TAIL; exit 1"
    built, log = build_upload(cfg, Runtime("noisy", "bot.py", ("sh", "-c", noisy), ("python3", "bot.py")), workdir)
    assert not built
    head, cut, tail = log.partition("\n[... ")
    assert cut and len(head) == LOG_CAP // 2 and head.startswith("$ sh -c printf HEAD;") and "HEADxxx" in head, head[:200]
    assert re.match(r"\d+ characters cut \.\.\.\]\n", tail) and "xxxTAIL" in tail, tail[:200]
    assert len(log) < LOG_CAP + 200


# -- hostile archives -----------------------------------------------------------------------------------------
def _symlink_tar(t: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("bot.py")
    info.type = tarfile.SYMTYPE
    info.linkname = "/etc/passwd"
    t.addfile(info)


def _hardlink_tar(t: tarfile.TarFile) -> None:
    data = GOOD_BOT
    info = tarfile.TarInfo("a.py")
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))
    link = tarfile.TarInfo("bot.py")
    link.type = tarfile.LNKTYPE
    link.linkname = "a.py"
    t.addfile(link)


def _device_tar(t: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("bot.py")
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3
    t.addfile(info)


def _dotdot_tar(t: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("../../evil.py")
    info.size = 3
    t.addfile(info, io.BytesIO(b"x=1"))


HOSTILE = {
    "zip with ..": (lambda: _zip({"bot.py": GOOD_BOT, "../../evil.py": b"x"}), "contains '..'"),
    "zip with an absolute path": (lambda: _zip({"bot.py": GOOD_BOT, "/tmp/evil.py": b"x"}), "absolute path"),
    "zip with a symlink": (lambda: _zip({}, {"bot.py": "/etc/passwd"}), "symbolic link"),
    "zip bomb": (lambda: _zip({"bot.py": GOOD_BOT, "pad": b"\0" * (4 * 1024 * 1024)}), "zip bomb"),
    "too many files": (lambda: _zip({"bot.py": GOOD_BOT, **{f"f{i}": b"x" for i in range(8)}}), "more than 5 files"),
    "tar.gz with ..": (lambda: _tgz(_dotdot_tar), "contains '..'"),
    "tar.gz with a symlink": (lambda: _tgz(_symlink_tar), "is a link"),
    "tar.gz with a hard link": (lambda: _tgz(_hardlink_tar), "is a link"),
    "tar.gz with a device": (lambda: _tgz(_device_tar), "device"),
    "archive without the entry file": (lambda: _zip({"src/bot.py": GOOD_BOT}), "no bot.py at the top level"),
    "zip with a file used as a directory": (lambda: _zip({"bot.py": GOOD_BOT, "lib": b"x", "lib/util.py": b"y"}),
                                            "lib/util.py is inside something that is not a directory"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_archives_are_refused_with_a_clear_message_and_nothing_kept(contest, case: str) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    make, expected = HOSTILE[case]
    data = make()
    with _client(root) as client:
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                        files={"file": ("bot.tar.gz" if data[:2] == b"\x1f\x8b" else "bot.zip", data)})
        assert r.status_code in (400, 413), r.text
        assert expected in r.json()["error"], r.json()
    _nothing_kept(root)
    assert not (root.parent / "evil.py").exists() and not Path("/tmp/evil.py").exists()


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_an_archive_exactly_at_the_file_and_size_caps_is_taken_and_one_more_is_refused(tmp_path: Path,
                                                                                      kind: str) -> None:
    def archive(members: dict[str, bytes]) -> bytes:
        if kind == "zip":
            return _zip(members)

        def add(t: tarfile.TarFile) -> None:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        return _tgz(add)

    caps = Caps(files=3, unpacked_bytes=3 * 1024, ratio=100)  # contest.yaml's unpacked_kb: 3
    at_caps = {"bot.py": b"#" * 1024, "a.py": b"a" * 1024, "b.py": b"b" * 1024}
    assert sorted(unpack_upload(archive(at_caps), f"bot.{kind}", "bot.py", tmp_path / "at", caps)) == \
        ["a.py", "b.py", "bot.py"]
    with pytest.raises(UnpackError, match="more than 3 files"):
        unpack_upload(archive({**at_caps, "c.py": b""}), f"bot.{kind}", "bot.py", tmp_path / "files", caps)
    with pytest.raises(UnpackError, match="more than 3 KB unpacked"):
        unpack_upload(archive({**at_caps, "b.py": b"b" * 1025}), f"bot.{kind}", "bot.py", tmp_path / "bytes", caps)
    assert not (tmp_path / "files").exists() and not (tmp_path / "bytes").exists()


def test_a_large_incompressible_member_within_the_caps_is_taken(tmp_path: Path) -> None:
    import random

    noise = random.Random(1).randbytes(200 * 1024)  # well over one 64 KB chunk, ratio about 1
    files = unpack_upload(_zip({"bot.py": GOOD_BOT, "weights.bin": noise}), "bot.zip", "bot.py", tmp_path / "up",
                          Caps(files=5, unpacked_bytes=10**6, ratio=100))
    assert sorted(files) == ["bot.py", "weights.bin"] and (tmp_path / "up" / "weights.bin").read_bytes() == noise


def test_members_sharing_directories_are_unpacked_in_place(tmp_path: Path) -> None:
    members = {"bot.py": GOOD_BOT, "lib/a.py": b"a = 1\n", "lib/b.py": b"b = 2\n", "lib/sub/c.py": b"c = 3\n"}
    files = unpack_upload(_zip(members), "bot.zip", "bot.py", tmp_path / "up", Caps(files=5, unpacked_bytes=10**6, ratio=100))
    assert sorted(files) == sorted(members)
    assert all((tmp_path / "up" / name).read_bytes() == data for name, data in members.items())
    # written 0644: nothing unpacked is executable, by anyone
    assert all((tmp_path / "up" / name).stat().st_mode & 0o111 == 0 for name in members)


def test_a_member_bigger_than_its_header_says_is_caught_while_extracting(tmp_path: Path) -> None:
    data = bytearray(_zip({"bot.py": b"\0" * 300_000}))
    # lie in the central directory and the local header: 300,000 bytes declared as 1,000
    real = (300_000).to_bytes(4, "little")
    assert data.count(real) == 2
    data = bytearray(bytes(data).replace(real, (1000).to_bytes(4, "little")))
    target = tmp_path / "up"
    with pytest.raises(UnpackError, match="bot.py"):
        unpack_upload(bytes(data), "bot.zip", "bot.py", target, Caps(files=10, unpacked_bytes=10**6, ratio=100))
    assert not target.exists()


# -- who sees what -------------------------------------------------------------------------------------------
def _ladder_with_a_violation(root: Path) -> None:
    """A ladder store: one finished game of alpha (seat 0) against beta (seat 1, who broke a rule),
    and one game still being played."""
    with LeagueStore(root / "ladder.sqlite") as store:
        ids = store.register_versions([BotEntry("alpha", ("x",), "/", "s1"), BotEntry("beta", ("x",), "/", "s2")])
        a, b = ids["alpha@s1"], ids["beta@s2"]
        store.plan_rows([[("g-done", 1, 2, 7, json.dumps([a, b])), ("g-live", 1, 2, 8, json.dumps([b, a]))]])
        seq = store.game("g-done").seq
        store.record(seq, GameOutcome("g-done", ranking=[0, 1], scores=[3, 0], ended_by="forfeit", forfeits=[1],
                                      violations=[{"seat": 1, "decision": 2, "kind": "illegal_action",
                                                   "detail": "index 9 is not offered", "request": '{"type":"request"}',
                                                   "received": "BETA-ANSWER", "stderr_tail": "BETA-SECRET-STDERR"}]))


def test_another_teams_violation_code_seat_view_and_logs_are_403(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root) as alpha, _client(root) as beta:
        for team, client in (("alpha", alpha), ("beta", beta)):
            r = client.post("/api/submissions", headers=_bearer(tokens[team]), data={"runtime": "python"},
                            files={"file": ("bot.py", GOOD_BOT + f"# {team.upper()}-CODE\n".encode())})
            assert r.status_code == 201
        _ladder_with_a_violation(root)
        (root / "ladder.logs").mkdir()
        (root / "ladder.logs" / "beta.stderr.log").write_text("BETA-SECRET-STDERR\n")
        _sign_in(alpha, tokens["alpha"])
        _sign_in(beta, tokens["beta"])
        # beta sees its own
        assert "BETA-SECRET-STDERR" in beta.get("/me/violations/1").text
        assert "BETA-ANSWER" in beta.get("/me/violations/1").text
        assert "BETA-CODE" in beta.get("/me/submissions/2/files/bot.py").text
        assert "BETA-SECRET-STDERR" in beta.get("/me/stderr").text
        assert beta.get("/me/games/g-done/seat/1").status_code == 200
        # alpha is refused all of it
        for url in ("/me/violations/1", "/me/submissions/2", "/me/submissions/2/files/bot.py", "/me/games/g-done/seat/1"):
            r = alpha.get(url)
            assert r.status_code == 403 and "another team" in r.text, url
            assert "BETA-SECRET" not in r.text and "BETA-CODE" not in r.text
        assert "BETA-SECRET-STDERR" not in alpha.get("/me/stderr").text
        # the public never sees them either: not in the spectator replay, not in any page
        public = _client(root)
        replay = public.get("/games/g-done")
        assert replay.status_code == 200 and "BETA-SECRET" not in replay.text and "BETA-ANSWER" not in replay.text
        assert public.get("/me/violations/1", follow_redirects=False).status_code == 303  # to the sign-in page
        # a game in progress: no replay, no seat view, for anyone
        live = public.get("/games/g-live")
        assert live.status_code == 409 and "still being played" in live.text
        assert beta.get("/me/games/g-live/seat/0").status_code == 409
        assert alpha.get("/me/games/g-live/seat/0").status_code == 403
        assert "g-live" not in public.get("/games").text


def test_pages_say_when_uploads_close_404_an_unknown_game_and_label_each_workers_stderr(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root) as client:
        r = client.post("/api/submissions", headers=_bearer(tokens["beta"]), data={"runtime": "python"},
                        files={"file": ("bot.py", GOOD_BOT)})
        assert r.status_code == 201
        _ladder_with_a_violation(root)
        assert "uploads open" in client.get("/").text
        missing = client.get("/games/g-no-such-game")
        assert missing.status_code == 404 and "no game &#39;g-no-such-game&#39; in the ladder" in missing.text
        logs = root / "ladder.logs"
        (logs / "worker-1").mkdir(parents=True)
        (logs / "beta.stderr.log").write_text("FROM-THE-MAIN-PROCESS\n")
        (logs / "worker-1" / "beta.stderr.log").write_text("FROM-WORKER-1\n")
        _sign_in(client, tokens["beta"])
        text = client.get("/me/stderr").text
        assert "== worker-1/beta.stderr.log ==\nFROM-WORKER-1" in text
        assert "FROM-THE-MAIN-PROCESS" in text and "== beta.stderr.log ==" not in text
        db = ContestDB(root / "contest.sqlite")
        db.set_meta("frozen", "1")
        db.close()
        page = client.get("/").text
        assert "uploads closed: the finals have started" in page and "uploads open" not in page


def test_security_headers_and_escaped_team_content(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root) as client:
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                        files={"file": ("<script>alert(1)</script>.py", GOOD_BOT)})
        assert r.status_code == 201
        _sign_in(client, tokens["alpha"])
        me = client.get("/me")
        assert "<script>alert(1)</script>" not in me.text and "&lt;script&gt;" in me.text
        assert "frame-ancestors 'none'" in me.headers["content-security-policy"]
        assert me.headers["x-frame-options"] == "DENY" and me.headers["cache-control"] == "no-store"


def test_a_cpp_bot_is_built_with_g_plus_plus_in_the_sandbox_and_checked(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    source = (REPO / "tests" / "bots" / "contest_bot.cpp").read_bytes()
    with _client(root, worker=True) as client:
        r = client.post("/api/submissions", headers=_bearer(tokens["beta"]), data={"runtime": "cpp"},
                        files={"file": ("bot.tar.gz", _tgz(lambda t: _add(t, "bot.cpp", source)))})
        assert r.status_code == 201, r.text
        done = _wait(client, r.json()["id"], tokens["beta"])
        assert done["status"] == "active", done
        assert "g++ -O2" in done["build_log"] and "conformance passed" in done["check_log"]
        assert (root / "submissions" / str(r.json()["id"]) / "bot").is_file()


def _add(t: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))


def test_ladder_standings_and_finals_with_real_bots(contest) -> None:  # type: ignore[no-untyped-def]
    from harness.contest.config import load_contest
    from harness.contest.ladder import LADDER_STORE, Standings, play_ladder

    root, tokens = contest
    (root / "contest.yaml").write_text((root / "contest.yaml").read_text().replace("ladder: adaptive",
                                                                                   "ladder: round_robin"))
    with _client(root, worker=True) as client:
        for team in ("alpha", "beta"):
            r = client.post("/api/submissions", headers=_bearer(tokens[team]), data={"runtime": "python"},
                            files={"file": ("bot.py", GOOD_BOT)})
            assert _wait(client, r.json()["id"], tokens[team])["status"] == "active"
        cfg = load_contest(root)
        assert cfg.ladder == "round_robin"
        db = ContestDB(cfg.db_path)
        standings = Standings(db, root / LADDER_STORE)
        played = play_ladder(cfg, db, should_stop=lambda: False, on_game=standings.on_game, max_games=6,
                             echo=lambda line: None)
        standings.stop()
        assert played == 6
        board = client.get("/api/leaderboard").json()
        assert board["games_done"] == 6 and sorted(r["games"] for r in board["table"]) == [6, 6]
        assert all(r["sigma"] < 25 / 3 for r in board["table"])  # rated
        # the summary equals a rebuild from the store
        before = [tuple(r) for r in db.db.execute("SELECT submission_id, games, wins, rank_sum FROM standings ORDER BY 1")]
        Standings(db, root / LADDER_STORE).rebuild()
        assert before == [tuple(r) for r in db.db.execute("SELECT submission_id, games, wins, rank_sum FROM standings "
                                                          "ORDER BY 1")]
        db.close()
        # a team's own game opens in its own seat's view, the only seat offered besides the
        # spectator's; the public replay offers the spectator's view alone
        _sign_in(client, tokens["alpha"])
        link = re.search(r'href="(/me/games/([^/"]+)/seat/(\d+))"', client.get("/me").text)
        assert link, "alpha's games on its page"
        views = re.compile(r'<select id="view"[^>]*>(.*?)</select>', re.S)
        own = views.search(client.get(link.group(1)).text).group(1)
        assert re.findall(r'<option value="(-?\d+)"', own) == ["-1", link.group(3)]
        assert re.findall(r'<option value="(-?\d+)" selected', own) == [link.group(3)]
        public = views.search(_client(root).get(f"/games/{link.group(2)}").text).group(1)
        assert re.findall(r'<option value="(-?\d+)"( selected)?', public) == [("-1", " selected")]
        result = CliRunner().invoke(cli, ["contest", "finals", str(root), "--top", "2", "--rounds", "1"])
        assert result.exit_code == 0, result.output
        assert "finalists: 1." in result.output and (root / "finals" / "report" / "index.html").is_file()
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "python"},
                        files={"file": ("bot.py", GOOD_BOT)})
        assert r.status_code == 403 and "finals have started" in r.json()["error"]


def test_a_round_robin_ladder_restarts_at_the_rounds_it_had_reached(contest) -> None:  # type: ignore[no-untyped-def]
    import yaml

    from harness.contest.ladder import LADDER_CONFIG, play_ladder

    root, _ = contest
    (root / "contest.yaml").write_text((root / "contest.yaml").read_text().replace("ladder: adaptive",
                                                                                   "ladder: round_robin"))
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    for team in ("alpha", "beta"):
        checked_version(root, db, team, {"bot.py": GOOD_BOT})
    db.set_meta("ladder_rounds", "3")  # where the ladder had got to before the restart
    played = play_ladder(cfg, db, should_stop=lambda: False, on_game=None, max_games=1, echo=lambda line: None)
    db.close()
    assert played == 1
    assert yaml.safe_load((root / LADDER_CONFIG).read_text())["rounds"] == 3


@pytest.mark.parametrize(("seconds", "shown"), [(0, "0 s"), (119.9, "119 s"), (120, "2 min"), (7199, "119 min"),
                                               (7200, "2 h"), (172799, "47 h"), (172800, "2 days"), (10**6, "11 days")])
def test_a_versions_age_on_the_leaderboard_is_in_the_largest_unit_that_counts_two(seconds: float, shown: str) -> None:
    from harness.contest.ladder import _age

    assert _age(seconds) == shown


def test_the_roster_watch_stops_the_ladder_when_asked_and_when_a_team_changes_version(contest) -> None:  # type: ignore[no-untyped-def]
    from harness.contest.ladder import _RosterWatch, roster_key

    root, _ = contest
    db = ContestDB(root / "contest.sqlite")
    alpha = db.db.execute("SELECT id FROM teams WHERE name = 'alpha'").fetchone()[0]
    stop = [False]
    watch = _RosterWatch(db, roster_key(db), lambda: stop[0], poll=0.0)
    assert watch() is False
    stop[0] = True  # Ctrl-C or `harness contest run` stopping: whatever the roster
    assert watch() is True and not watch.changed
    stop[0] = False
    assert watch() is False
    sid, _ = db.admit_submission(alpha, "python", "bot.py", 10, per_hour=10, in_progress=10)
    db.activate(sid)  # alpha has a new current version: re-plan
    time.sleep(0.01)
    assert watch() is True and watch.changed
    db.close()


def test_a_replay_keeps_only_the_seats_shown() -> None:
    from harness.contest.ladder_reads import redact_replay

    def replay() -> dict:
        return {"frames": [{"move": 0, "views": [None, None], "violations": []},
                           {"move": 1, "seat": 0, "views": [1, None], "stderr": "A-SECRET", "violations": []},
                           {"move": 2, "seat": 1, "views": [1, 2], "stderr": "B-SECRET",
                            "violations": [{"seat": 1, "kind": "illegal", "detail": "B-DETAIL"}]}],
                "observations": {"1": {"hand": "A-HAND"}, "2": {"hand": "B-HAND"}}}

    public = json.dumps(redact_replay(replay(), None))
    assert not any(secret in public for secret in ("A-SECRET", "B-SECRET", "A-HAND", "B-HAND", "B-DETAIL"))
    mine = json.dumps(redact_replay(replay(), {1}))
    assert "B-SECRET" in mine and "B-HAND" in mine and "B-DETAIL" in mine
    assert "A-SECRET" not in mine and "A-HAND" not in mine


# without a user namespace, bwrap runs as root and setpriv drops the build to a uid: root's path only;
# as root, with one, bwrap runs as the build's uid: only where that uid can reach the runtime
@pytest.mark.parametrize("userns", sorted({bwrap_userns()} | ({False} if os.geteuid() == 0 else set())))
def test_a_build_has_no_network_and_writes_only_its_own_directory(tmp_path: Path, monkeypatch, userns: bool) -> None:  # type: ignore[no-untyped-def]
    import socket

    import harness.contest.build as build_mod

    monkeypatch.setattr(build_mod, "bwrap_userns", lambda: userns)

    from harness.contest.build import build_upload
    from harness.contest.config import Runtime, load_contest

    root = _contest(tmp_path)
    cfg = load_contest(root)
    assert cfg.limits.get("sandbox") == "auto"
    workdir = root / "submissions" / "1"
    workdir.mkdir(parents=True)
    (workdir / "bot.py").write_text("print('hi')\n")
    with socket.socket() as server:  # reachable from this host, not from inside the sandbox
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        probe = (f"import socket, pathlib\n"
                 f"pathlib.Path('built.txt').write_text('ok')\n"
                 f"for target in ({str(root / 'escaped.txt')!r}, '/tmp/escaped.txt'):\n"
                 f"    try:\n"
                 f"        pathlib.Path(target).write_text('x'); print('wrote', target)\n"
                 f"    except OSError as exc:\n"
                 f"        print('cannot write', target, type(exc).__name__)\n"
                 f"try:\n"
                 f"    socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\n"
                 f"except OSError as exc:\n"
                 f"    print('cannot connect', type(exc).__name__)\n")
        runtime = Runtime("probe", "bot.py", ("python3", "-c", probe), ("python3", "bot.py"))
        built, log = build_upload(cfg, runtime, workdir)
    assert built and "\ncannot connect " in log and "\nconnected\n" not in log, log
    assert (workdir / "built.txt").read_text() == "ok"  # what it left in its own directory is kept
    # whatever it wrote elsewhere went to its private /tmp (gone with it), never to this host's files
    assert not (root / "escaped.txt").exists() and not Path("/tmp/escaped.txt").exists()


def test_a_build_command_that_cannot_start_fails_the_build_and_says_why(tmp_path: Path) -> None:
    from harness.contest.build import build_upload
    from harness.contest.config import Runtime

    cfg = load_contest(_contest(tmp_path))
    cfg = dataclasses.replace(cfg, limits={**cfg.limits, "sandbox": "none"})  # no bwrap to start it
    workdir = cfg.root / "submissions" / "1"
    workdir.mkdir(parents=True)
    (workdir / "bot.py").write_text("print('hi')\n")
    runtime = Runtime("ghost", "bot.py", ("no-such-compiler-tablebots", "bot.py"), ("python3", "bot.py"))
    built, log = build_upload(cfg, runtime, workdir)
    assert not built
    assert log.startswith("$ no-such-compiler-tablebots bot.py\n") and "cannot start the build: " in log, log
    assert "no-such-compiler-tablebots" in log.split("cannot start the build: ")[1], log


def test_a_node_bot_is_checked_and_a_broken_one_fails_its_build(contest) -> None:  # type: ignore[no-untyped-def]
    root, tokens = contest
    with _client(root, worker=True) as client:
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "node"},
                        files={"file": ("random_bot.js", (REPO / "bots" / "random_bot.js").read_bytes())})
        assert _wait(client, r.json()["id"], tokens["alpha"])["status"] == "active"
        r = client.post("/api/submissions", headers=_bearer(tokens["alpha"]), data={"runtime": "node"},
                        files={"file": ("bot.js", b"function (\n")})
        failed = _wait(client, r.json()["id"], tokens["alpha"])
        assert failed["status"] == "failed" and "SyntaxError" in failed["build_log"]
        assert "/submissions/" not in failed["build_log"]  # no server paths in a team's log


def test_the_adaptive_ladder_takes_a_team_that_joins_while_it_plays(tmp_path: Path) -> None:
    import threading

    from harness.contest.config import load_contest
    from harness.contest.ladder import LADDER_STORE, Standings, play_ladder

    root = _contest(tmp_path)
    assert "ladder: adaptive" in (root / "contest.yaml").read_text()  # init's choice for a game of one table size
    db = ContestDB(root / "contest.sqlite")
    tokens = {name: add_team(db, name) for name in ("alpha", "beta", "gamma")}
    with _client(root, worker=True) as client:
        def upload(team: str) -> None:
            r = client.post("/api/submissions", headers=_bearer(tokens[team]), data={"runtime": "python"},
                            files={"file": ("bot.py", GOOD_BOT)})
            assert _wait(client, r.json()["id"], tokens[team])["status"] == "active"

        upload("alpha")
        upload("beta")
        cfg = load_contest(root)
        assert cfg.ladder == "adaptive"
        standings = Standings(db, root / LADDER_STORE)
        games: list[int] = []
        joined = threading.Event()

        def on_game(seq: int, outcome: object) -> None:
            standings.on_game(seq, outcome)
            games.append(seq)
            if len(games) == 4 and not joined.is_set():
                joined.set()
                threading.Thread(target=upload, args=("gamma",)).start()

        def enough() -> bool:
            standings.flush()
            rows = {r.team: r.games or 0 for r in db.leaderboard()}
            return rows.get("gamma", 0) >= 2 or len(games) > 400

        play_ladder(cfg, db, should_stop=enough, on_game=on_game, echo=lambda line: None)
        standings.stop()
        rows = {r.team: r.games or 0 for r in db.leaderboard()}
        assert rows["gamma"] >= 2 and rows["alpha"] > 0 and rows["beta"] > 0, rows
        assert "schedule: adaptive" in (root / "ladder.yaml").read_text()
    db.close()


def _greedy_vs_random_ladder(tmp_path: Path, ladder: str) -> Path:
    """A real ladder (adaptive or round robin) where team house's greedy bot meets alpha's random one."""
    from harness.contest.config import load_contest
    from harness.contest.ladder import LADDER_STORE, Standings, play_ladder

    root = _contest(tmp_path)
    text = (root / "contest.yaml").read_text()
    assert "ladder: adaptive" in text
    (root / "contest.yaml").write_text(text.replace("ladder: adaptive", f"ladder: {ladder}"))
    db = ContestDB(root / "contest.sqlite")
    tokens = {name: add_team(db, name) for name in ("house", "alpha")}
    bots = {"house": (REPO / "bots" / "crisps_greedy.py").read_bytes(), "alpha": GOOD_BOT}
    with _client(root, worker=True) as client:
        for team, token in tokens.items():
            r = client.post("/api/submissions", headers=_bearer(token), data={"runtime": "python"},
                            files={"file": ("bot.py", bots[team])})
            assert _wait(client, r.json()["id"], token)["status"] == "active"
    cfg = load_contest(root)
    assert cfg.ladder == ladder
    standings = Standings(db, root / LADDER_STORE)
    standings.rebuild()
    standings.start()  # as `harness contest run` does: flushed by its own thread
    play_ladder(cfg, db, should_stop=lambda: False, on_game=standings.on_game, max_games=30, echo=lambda line: None)
    standings.stop()
    db.close()
    return root


@pytest.mark.parametrize("ladder", ["adaptive", "round_robin"])
def test_the_leaderboard_ratings_move_from_the_prior_in_the_right_order(tmp_path: Path, ladder: str) -> None:
    root = _greedy_vs_random_ladder(tmp_path, ladder)
    with _client(root) as client:
        board = client.get("/api/leaderboard").json()
        table_keys = {f.name for f in dataclasses.fields(TableRow)}  # those of `harness table --format json`
        assert all(table_keys <= set(row) for row in board["table"]), board
        rows = {row["bot"]: row for row in board["table"]}
        house, alpha = rows["house"], rows["alpha"]
        assert house["games"] >= 30 and house["wins"] > alpha["wins"], board
        assert house["mu"] > 27 and alpha["mu"] < 23, board  # moved from the prior (25), the greedy bot above
        assert house["sigma"] < 8 and alpha["sigma"] < 8, board
        assert [row["bot"] for row in board["table"]] == ["house", "alpha"]
        page = client.get("/").text
        assert f"{house['mu']:.2f}" in page and f"{alpha['mu']:.2f}" in page
        assert "25.00" not in page and "incremental TrueSkill" in page
