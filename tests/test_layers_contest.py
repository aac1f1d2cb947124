"""Each layer of the contest site's defences on its own (docs/testing.md "Layers"), so that
removing one fails a test even where another still stops the attack:

- the sign-in form's double-submit cookie: a form whose CSRF field is right but whose cookie is
  missing (or another one) is refused, not only a form without the field;
- a session's lifetime: past it the cookie signs nobody in, whatever the cookie's own max-age
  (the server's clock decides: moved forward here, not waited for);
- an archive member whose name *begins* with ``..`` (or is ``..``), not only one with
  ``/../`` inside, is refused before anything is written;
- the security headers on every kind of response (errors and redirects too), and ``Secure``
  cookies when the site is behind https.
"""

from __future__ import annotations

import io
import re
import tarfile
import time
import warnings
import zipfile
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", message=".*httpx.*")
from starlette.testclient import TestClient  # noqa: E402
from test_contest_pins import _alpha_alone  # noqa: E402

from harness.contest import db as contest_db  # noqa: E402
from harness.contest.auth import add_team  # noqa: E402
from harness.contest.config import init_contest  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402
from harness.contest.server import create_app  # noqa: E402
from harness.contest.site import SESSION_COOKIE, SESSION_TTL, SIGNIN_COOKIE  # noqa: E402
from harness.contest.unpack import Caps, UnpackError, unpack_upload  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GOOD_BOT = (REPO / "bots" / "random_bot.py").read_bytes()


@pytest.fixture()
def site(tmp_path: Path) -> tuple[Path, str]:
    return _alpha_alone(tmp_path)


def _client(root: Path) -> TestClient:
    return TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1")


def _form_csrf(client: TestClient) -> str:
    page = client.get("/signin")
    return re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]


def _signed_in(client: TestClient) -> bool:
    r = client.get("/me", follow_redirects=False)
    return r.status_code == 200 and "Team alpha" in r.text


# -- the sign-in form's double-submit cookie --------------------------------------------------------

def test_a_sign_in_form_without_its_cookie_is_refused_even_with_the_right_field(site) -> None:  # type: ignore[no-untyped-def]
    """The form's field alone proves nothing (a page on another site can copy a value it saw or
    guessed): the same value must come back in the cookie the sign-in page set."""
    root, token = site
    with _client(root) as client:
        csrf = _form_csrf(client)
        assert client.cookies.get(SIGNIN_COOKIE) == csrf
        client.cookies.clear()  # the field kept, its cookie gone
        r = client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False)
        assert r.status_code == 403 and "CSRF" in r.text, r.text
        assert SESSION_COOKIE not in r.headers.get("set-cookie", "") and not _signed_in(client)
        # another sign-in page's cookie with this field: refused too
        other = _form_csrf(client)
        assert other != csrf
        r = client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False)
        assert r.status_code == 403 and not _signed_in(client)
        # the cookie without the field
        r = client.post("/signin", data={"token": token}, follow_redirects=False)
        assert r.status_code == 403 and not _signed_in(client)
        # both, matching: signed in (the control)
        r = client.post("/signin", data={"csrf": other, "token": token}, follow_redirects=False)
        assert r.status_code == 303 and _signed_in(client)


# -- a session's lifetime ----------------------------------------------------------------------------

class _Clock:
    """``time`` for the contest database, moved forward by ``ahead`` seconds."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def time(self) -> float:
        return time.time() + self.ahead

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_a_session_past_its_lifetime_signs_nobody_in(site, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A session lasts SESSION_TTL (7 days) on the server: a minute before, the cookie still signs
    the team in; a second after, it is the sign-in page, even though the browser (or a thief)
    still sends the cookie."""
    assert SESSION_TTL == 7 * 24 * 3600
    clock = _Clock()
    monkeypatch.setattr(contest_db, "time", clock)
    root, token = site
    with _client(root) as client:
        csrf = _form_csrf(client)
        r = client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False)
        assert r.status_code == 303
        assert f"Max-Age={SESSION_TTL}" in r.headers["set-cookie"]
        cookie = client.cookies.get(SESSION_COOKIE)
        clock.ahead = SESSION_TTL - 60
        assert _signed_in(client)
        clock.ahead = SESSION_TTL + 1
        r = client.get("/me", follow_redirects=False)
        assert r.status_code in (302, 303, 307) and r.headers["location"] == "/signin"
        assert client.cookies.get(SESSION_COOKIE) == cookie  # still sent: the server said no
        # a new sign-in (at the later time) works, and sweeps the expired session away
        csrf = _form_csrf(client)
        assert client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False).status_code == 303
        assert _signed_in(client)
    db = ContestDB(root / "contest.sqlite")
    assert db.db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
    db.close()


# -- archive members named from outside the upload ------------------------------------------------

def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name), data)
    return out.getvalue()


def _tgz(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


CAPS = Caps(files=10, unpacked_bytes=1 << 20, ratio=100)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
@pytest.mark.parametrize("name", ["../evil.py", "../../evil.py", "..", "../", "./../evil.py", "..//evil.py",
                                  "a/../../evil.py", "a/.."])
def test_a_member_whose_name_leads_out_of_the_upload_is_refused(tmp_path: Path, kind: str, name: str) -> None:
    """``..`` first (the common escape), alone, after ``./``, or inside: refused by name before
    anything is written, the target directory removed."""
    members = {"bot.py": GOOD_BOT, name: b"x = 1\n"}
    data = _zip(members) if kind == "zip" else _tgz(members)
    target = tmp_path / "up"
    with pytest.raises(UnpackError, match="contains '..'"):
        unpack_upload(data, f"bot.{kind}", "bot.py", target, CAPS)
    assert not target.exists()
    assert not (tmp_path / "evil.py").exists()


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
@pytest.mark.parametrize("name", ["a\x01b.py", "\x1b[31mred.py", "two\nlines.py", "del\x7f.py", "dir\x1f/x.py"])
def test_a_member_whose_name_holds_a_control_character_is_refused(tmp_path: Path, kind: str, name: str) -> None:
    """A name with a control character (an escape sequence for whoever lists the files, a newline
    that forges a line of a log) is refused before anything is written."""
    members = {"bot.py": GOOD_BOT, name: b"x = 1\n"}
    data = _zip(members) if kind == "zip" else _tgz(members)
    target = tmp_path / "up"
    with pytest.raises(UnpackError, match="control characters"):
        unpack_upload(data, f"bot.{kind}", "bot.py", target, CAPS)
    assert not target.exists()


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_names_that_only_look_like_dots_are_files(tmp_path: Path, kind: str) -> None:
    """``..x``, ``a..b`` and ``...`` are ordinary names inside the upload (the rule is on whole
    components, not on a prefix of the text): unpacked where they belong."""
    members = {"bot.py": GOOD_BOT, "..x.py": b"1", "a..b/c.py": b"2", "...": b"3"}
    data = _zip(members) if kind == "zip" else _tgz(members)
    files = unpack_upload(data, f"bot.{kind}", "bot.py", tmp_path / "up", CAPS)
    assert sorted(files) == sorted(["bot.py", "..x.py", "a..b/c.py", "..."])
    assert (tmp_path / "up" / "a..b" / "c.py").read_bytes() == b"2"


# -- the headers on every kind of response, and Secure cookies behind https ------------------------------

HEADERS = {"x-frame-options": "DENY", "x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
           "cache-control": "no-store"}


def test_every_kind_of_response_carries_the_security_headers(site) -> None:  # type: ignore[no-untyped-def]
    """Pages, the JSON API, a 404, a refused form (403) and a redirect: each has the CSP (no
    framing, forms only to the site, no base URL) and the four other headers; a header a page
    sets itself is not doubled."""
    root, token = site
    with _client(root) as client:
        responses = {
            "page": client.get("/"),
            "sign-in page": client.get("/signin"),
            "api": client.get("/api/leaderboard"),
            "404": client.get("/no-such-page"),
            "403": client.post("/signin", data={"csrf": "x", "token": token}, follow_redirects=False),
            "redirect": client.get("/me", follow_redirects=False),
        }
        assert [r.status_code for r in responses.values()][3:5] == [404, 403]
        for what, r in responses.items():
            for name, value in HEADERS.items():
                assert r.headers.get_list(name) == [value], (what, name, r.headers)
            csp = r.headers["content-security-policy"]
            for rule in ("default-src 'self'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"):
                assert rule in csp, (what, rule, csp)


def test_behind_https_both_cookies_are_secure(tmp_path: Path) -> None:
    """``secure_cookies: true``: the sign-in page's cookie and the session's carry ``Secure`` (a
    browser then never sends them over plain http); by default neither does."""
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    db = ContestDB(root / "contest.sqlite")
    token = add_team(db, "alpha")
    db.close()
    for secure in (False, True):
        if secure:
            text = (root / "contest.yaml").read_text()
            (root / "contest.yaml").write_text(re.sub(r"(?m)^secure_cookies: .*$", "", text) + "secure_cookies: true\n")
        with _client(root) as client:
            page = client.get("/signin")
            csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
            signin_cookie = page.headers["set-cookie"]
            client.cookies.set(SIGNIN_COOKIE, csrf, path="/signin")
            r = client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False)
            assert r.status_code == 303
            session_cookie = next(c for c in r.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE))
            assert ("; secure" in signin_cookie.lower()) is secure, signin_cookie
            assert ("; secure" in session_cookie.lower()) is secure, session_cookie
