"""The live league pages of `harness serve`: an HTTP handler over the store.

Each request is answered by :class:`harness.report.live.LiveLeague` (the pages `harness report`
writes, made from the store, the config read again when it changes, the index cached per league
state); ``/api/status`` gives the counts and the league's state for the page's refresh. The
stdlib server is enough: an organiser's browsers polling every 2 seconds, on 127.0.0.1 by
default.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.league.config import LeagueConfig
from harness.report.live import LiveLeague


class _Handler(BaseHTTPRequestHandler):
    live: LiveLeague

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

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        self._send(*self.live.respond(path))


def make_server(config: LeagueConfig, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server for ``config``'s league pages (``port`` 0: any free port), kept current as
    the store and the config change (:class:`harness.report.live.LiveLeague`)."""
    handler = type("Handler", (_Handler,), {"live": LiveLeague(config)})
    return ThreadingHTTPServer((host, port), handler)
