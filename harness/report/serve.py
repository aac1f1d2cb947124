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
"""

from __future__ import annotations

import ipaddress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.league.config import LeagueConfig
from harness.report.live import LiveLeague

_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class _Handler(BaseHTTPRequestHandler):
    live: LiveLeague
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
        self._send(*self.live.respond(path))


def make_server(config: LeagueConfig, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server for ``config``'s league pages (``port`` 0: any free port), kept current as
    the store and the config change (:class:`harness.report.live.LiveLeague`)."""
    handler = type("Handler", (_Handler,), {"live": LiveLeague(config), "bound_host": host})
    return ThreadingHTTPServer((host, port), handler)
