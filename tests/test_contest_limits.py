"""The contest site refuses before it reads: attacks on a real `harness contest serve` on 127.0.0.1.

Each test attacks the server over real sockets: a 200 MB form to /signin (refused unread, the
site's memory unchanged), a flood of wrong bearer tokens (no token hashed past the sign-in
limit: hashes counted in the server process), a local client rotating X-Forwarded-For (limited
unless the config trusts it as a proxy), 200 connections sending half their headers (closed),
and a body trickled too slowly (408)."""

from __future__ import annotations

import os
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.contest.auth import add_team
from harness.contest.config import init_contest
from harness.contest.db import ContestDB

# the server, with every scrypt hash of a token counted in a file (one byte per hash)
SERVER = """
import os, sys
import harness.contest.auth as auth
real = auth.hash_token
def counted(token, salt):
    with open(os.environ["HASH_COUNT"], "ab") as f:
        f.write(b"h")
    return real(token, salt)
auth.hash_token = counted
from harness.cli import main
sys.argv = ["harness", "contest", "serve", sys.argv[1], "--port", sys.argv[2]]
main()
"""


class Site:
    def __init__(self, root: Path, proc: subprocess.Popen, port: int, hashes: Path, token: str) -> None:
        self.root, self.proc, self.port, self.hashes, self.token = root, proc, port, hashes, token

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=15)

    def request(self, raw: bytes) -> bytes:
        """Send one raw request; the whole answer (the server closes or the answer is complete)."""
        with self.connect() as s:
            s.sendall(raw)
            return _answer(s)

    def hash_count(self) -> int:
        return self.hashes.stat().st_size if self.hashes.exists() else 0

    def memory_kb(self, field: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise AssertionError(field)


def _answer(s: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), None)
            if length is not None and len(body) >= length:
                return data


def _status(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split()[1])


def _body(answer: bytes) -> str:
    return answer.partition(b"\r\n\r\n")[2].decode()


def _start(tmp_path: Path, extra: str = "") -> Iterator[Site]:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    with open(root / "contest.yaml", "a", encoding="utf-8") as f:  # signins_per_minute: 10, upload_kb: 1024
        f.write(extra)
    db = ContestDB(root / "contest.sqlite")
    token = add_team(db, "alpha")
    db.close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hashes = tmp_path / "hashes"
    env = {**os.environ, "HASH_COUNT": str(hashes)}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(root), str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    site = Site(root, proc, port, hashes, token)
    deadline = time.monotonic() + 60
    while True:
        try:
            if _status(site.request(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")) == 200:
                break
        except OSError:
            pass
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        assert time.monotonic() < deadline, "the site did not start"
        time.sleep(0.2)
    try:
        yield site
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[Site]:
    yield from _start(tmp_path, "site: {header_seconds: 2, body_seconds: 3, connections_per_address: 300}\n")


def _post(path: str, length: int | None, extra: str = "") -> bytes:
    framing = f"Content-Length: {length}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n"
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"{framing}{extra}\r\n").encode()


def test_a_200_mb_form_to_signin_is_refused_unread_and_the_site_does_not_grow(site: Site) -> None:
    before = site.memory_kb("VmHWM")
    total = 200 * 1024 * 1024
    chunk = b"token=" + b"a" * (1024 * 1024 - 6)
    with site.connect() as s:
        s.sendall(_post("/signin", total) + chunk[:32 * 1024])
        s.settimeout(10)
        answer = _answer(s)  # the answer comes with 32 KB of 200 MB sent
        assert _status(answer) == 413
        assert "request body too large: a form is at most 16 KB (site.form_kb); nothing of it was read" in _body(answer)
        sent = 32 * 1024
        try:
            while sent < total:  # the rest: the server has closed, the kernel's buffers take a few MB at most
                sent += s.send(chunk)
        except OSError:
            pass
    assert sent < 64 * 1024 * 1024
    # streamed without a length (chunked): counted while it arrives, refused at the limit
    with site.connect() as s:
        s.sendall(_post("/signin", None) + b"8000\r\n" + b"a" * 0x8000 + b"\r\n")
        answer = _answer(s)
    assert _status(answer) == 413
    assert "a form is at most 16 KB (site.form_kb); the rest of it was not read" in _body(answer)
    assert site.memory_kb("VmHWM") - before < 32 * 1024, "the site's peak memory grew by the body"
    # an upload route takes the contest's upload_kb (1024), not the form's 16 KB: refused only
    # later, by the token check
    answer = site.request(_post("/api/submissions", 100 * 1024, "Connection: close\r\n") + b"x" * 100 * 1024)
    assert _status(answer) == 401
    answer = site.request(_post("/api/submissions", 2 * 1024 * 1024, "Connection: close\r\n"))
    assert _status(answer) == 413 and "an upload is at most 1024 KB (the contest's upload_kb)" in _body(answer)


def test_wrong_bearer_tokens_past_the_sign_in_limit_are_never_hashed(site: Site) -> None:
    statuses = []
    for i in range(100):
        wrong = f"tb1_{'x' * 40}{i:03d}"
        answer = site.request(f"GET /api/submissions/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {wrong}\r\n"
                              f"Connection: close\r\n\r\n".encode())
        statuses.append(_status(answer))
    assert statuses[:10] == [401] * 10 and statuses[10:] == [429] * 90
    assert "too many sign-in attempts from your address (at most 10 a minute)" in _body(answer)
    assert site.hash_count() == 10  # one per attempt within the limit, none after
    # the sign-in form shares the limit: refused before its body is parsed or its token hashed
    form = b"csrf=c&token=tb1_" + b"y" * 43
    answer = site.request(_post("/signin", len(form), "Cookie: contest_signin=c\r\nConnection: close\r\n") + form)
    assert _status(answer) == 429 and site.hash_count() == 10


def _signin_from(site: Site, forwarded: str) -> int:
    return _status(site.request(_post("/signin", 0, f"X-Forwarded-For: {forwarded}\r\nConnection: close\r\n")))


def test_a_local_client_rotating_x_forwarded_for_is_limited_by_default(site: Site) -> None:
    statuses = [_signin_from(site, f"203.0.113.{i}") for i in range(12)]
    # refused for its CSRF token (403) ten times, then for the limit: the forged addresses count as one
    assert statuses == [403] * 10 + [429] * 2


def test_a_trusted_proxys_x_forwarded_for_counts_per_visitor(tmp_path: Path) -> None:
    for site in _start(tmp_path, "site: {trusted_proxies: [127.0.0.1, '10.0.0.0/8']}\n"):
        # each visitor its own count, through two trusted proxies (the rightmost untrusted hop);
        # what the client wrote itself left of it does not matter
        assert [_signin_from(site, f"6.6.6.{i}, 203.0.113.{i}, 10.1.1.1") for i in range(12)] == [403] * 12
        assert [_signin_from(site, "198.51.100.7") for _ in range(12)] == [403] * 10 + [429] * 2


@pytest.mark.parametrize("value, says", [
    ("[nonsense]", "site.trusted_proxies: 'nonsense' is not an address or network"),
    ("[10.0.0.0/33]", "site.trusted_proxies: '10.0.0.0/33' is not an address or network"),
])
def test_a_bad_trusted_proxy_is_one_line_naming_the_key(tmp_path: Path, value: str, says: str) -> None:
    root = tmp_path / "contest"
    init_contest(root, "crisps")
    with open(root / "contest.yaml", "a") as f:
        f.write(f"site: {{trusted_proxies: {value}}}\n")
    result = CliRunner().invoke(cli, ["contest", "serve", str(root)])
    assert result.exit_code != 0
    assert says in result.output and len(result.output.strip().splitlines()) == 1, result.output


def test_half_sent_headers_are_closed_and_a_trickled_body_is_refused(site: Site) -> None:
    sockets = []
    for _ in range(200):
        s = site.connect()
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        s.setblocking(False)
        sockets.append(s)
    # the site still answers others meanwhile
    assert _status(site.request(b"GET /games HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")) == 200
    answers: dict[socket.socket, bytes] = {s: b"" for s in sockets}
    sel = selectors.DefaultSelector()
    for s in sockets:
        sel.register(s, selectors.EVENT_READ)
    closed = 0
    deadline = time.monotonic() + 60
    while closed < len(sockets) and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            try:
                chunk = s.recv(4096)
            except OSError:
                chunk = b""
            answers[s] += chunk
            if not chunk:
                sel.unregister(s)
                closed += 1
    for s in sockets:
        s.close()
    assert closed == 200, f"{200 - closed} of 200 half-sent requests still held"
    said = [a for a in answers.values() if a]
    assert said and all(_status(a) == 408 and b"request headers not complete within 2 s (site.header_seconds)" in a
                        for a in said)
    # a body the page does not read (a GET with a length): answered, then closed, not waited for
    with site.connect() as s:
        s.sendall(b"GET /games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 16000\r\n\r\nx")
        answer = _answer(s)
        assert _status(answer) == 200 and b"connection: close" in answer.lower()
        s.settimeout(10)
        assert s.recv(100) == b""  # closed (a trickle of the other 15,999 bytes would have held it)
    # a body that trickles: its headers are whole, 10 of its 100 bytes come, then nothing
    with site.connect() as s:
        s.sendall(_post("/signin", 100) + b"token=aaaa")
        answer = _answer(s)
    assert _status(answer) == 408
    assert "request body too slow: the whole body must arrive within 3 s (site.body_seconds)" in _body(answer)


def test_the_site_still_serves_a_keep_alive_connection_between_requests(site: Site) -> None:
    # the header timer restarts after each answer: two requests on one connection, a pause
    # shorter than the timeout between them
    with site.connect() as s:
        for _ in range(2):
            s.sendall(b"GET /games HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert _status(_answer(s)) == 200
            time.sleep(0.5)


def test_one_address_cannot_hold_more_connections_than_its_share(tmp_path: Path) -> None:
    for site in _start(tmp_path, "site: {connections_per_address: 20}\n"):
        held = [site.connect() for _ in range(20)]
        for s in held:
            s.sendall(b"GET / HTTP/1.1\r\n")  # half a request each
        with site.connect() as extra:  # the 21st: refused at once, one line, closed
            answer = _answer(extra)
        assert _status(answer) == 503
        assert "too many connections from your address at once (at most 20: site.connections_per_address)" in _body(answer)
        for s in held[:5]:
            s.close()
        deadline = time.monotonic() + 20
        while True:  # a place again once the server has seen the five closed
            status = _status(site.request(b"GET /games HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status == 200
        for s in held[5:]:
            s.close()
