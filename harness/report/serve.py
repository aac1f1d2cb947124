"""The live league pages of `harness serve`: an HTTP handler over the store.

Each request is answered by :class:`harness.report.live.LiveLeague` (the pages `harness report`
writes, made from the store, the config read again when it changes, the index cached per league
state); ``/api/status`` gives the counts and the league's state for the page's refresh. The
stdlib server is enough: an organiser's browsers polling every 2 seconds, on 127.0.0.1 by
default.

Only requests whose ``Host`` names the address the server is bound to, or this machine
(``localhost``, ``127.0.0.1``, ``[::1]``), are answered: a web page the user visits could
otherwise point a DNS name of its own at 127.0.0.1 (DNS rebinding) and read the league's pages
from the user's browser. Bound to every address (``0.0.0.0``), any IP address is accepted too:
only names can be rebound.

A store belongs to the config file that made it (:meth:`LeagueStore.owner_problem`); ``harness
run`` refuses any other config. Serving only reads, so it goes on, but with a copied config the
pages show another league's results under this config's name: a warning line says so on start
and on every page (rechecked at most once a second, so a claimed store clears it).
"""

from __future__ import annotations

import ipaddress
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from markupsafe import escape

from harness.league.config import LeagueConfig, LeagueError
from harness.league.store import LeagueStore
from harness.report.live import LiveLeague

_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: how long an owner check stands (seconds): pages are polled every 2 s, a store is claimed rarely
_OWNER_RECHECK = 1.0


def owner_warning(live: LiveLeague) -> str | None:
    """One line when the config served is not its store's owner (``harness run`` would refuse
    it), else None; never raises (a store that cannot be read is the pages' to report)."""
    config = live.config()
    if not live.store_ready(config):
        return None
    try:
        with LeagueStore(config.store, create=False) as store:
            problem = store.owner_problem(config)
    except (LeagueError, sqlite3.Error, OSError):
        return None
    if problem is None:
        return None
    return f"warning: {problem}. `harness serve` only reads: these pages show that league's results as they are"


class _OwnerCheck:
    """:func:`owner_warning`, computed at most once every :data:`_OWNER_RECHECK` seconds."""

    def __init__(self, live: LiveLeague) -> None:
        self.live = live
        self._lock = threading.Lock()
        self._at = -_OWNER_RECHECK
        self._line: str | None = None

    def line(self) -> str | None:
        with self._lock:
            if time.monotonic() - self._at >= _OWNER_RECHECK:
                self._line = owner_warning(self.live)
                self._at = time.monotonic()
            return self._line


def with_banner(html: str, line: str) -> str:
    """``html`` with ``line`` shown first in its ``<main>`` (which the live index replaces whole when
    it refreshes, so the line stays), else first in its ``<body>``."""
    banner = f'<p class="bad" id="owner-warning" style="font-weight:600">{escape(line)}</p>'
    at = html.find("<main>")
    if at >= 0:
        at += len("<main>")
    else:
        body = html.find("<body")
        at = html.find(">", body) + 1 if body >= 0 else 0
    return html[:at] + banner + html[at:]


class _Handler(BaseHTTPRequestHandler):
    live: LiveLeague
    owner: _OwnerCheck
    bound_host: str = "127.0.0.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        return  # quiet: the terminal shows the league, not every request

    def _send(self, status: int, body: str, kind: str = "text/html; charset=utf-8") -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; "
                                                    "style-src 'unsafe-inline'; img-src 'self' data:")
        self.end_headers()
        self.wfile.write(data)

    def _host_allowed(self) -> bool:
        """Whether the request's Host names this server (see the module docstring)."""
        host = (self.headers.get("Host") or "").strip().lower()
        if not host:
            return False
        name = host[1:host.index("]")] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
        if name in _LOCAL_NAMES or name == self.bound_host.lower().strip("[]"):
            return True
        if self.bound_host in ("", "0.0.0.0", "::"):
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return False
            return True
        return False

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if not self._host_allowed():
            self._send(421, "this server answers only requests addressed to it (its address or localhost)")
            return
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        status, body, kind = self.live.respond(path)
        if kind.startswith("text/html") and (line := self.owner.line()):
            body = with_banner(body, line)
        self._send(status, body, kind)


class LeagueServer(ThreadingHTTPServer):
    """The HTTP server of one league's live pages."""

    owner: _OwnerCheck

    def owner_warning(self) -> str | None:
        """The line shown when the config served is not its store's owner, or None."""
        return self.owner.line()


def make_server(config: LeagueConfig, host: str, port: int) -> LeagueServer:
    """An HTTP server for ``config``'s league pages (``port`` 0: any free port), kept current as
    the store and the config change (:class:`harness.report.live.LiveLeague`)."""
    live = LiveLeague(config)
    owner = _OwnerCheck(live)
    handler = type("Handler", (_Handler,), {"live": live, "owner": owner, "bound_host": host})
    server = LeagueServer((host, port), handler)
    server.owner = owner
    return server
