"""The live league pages of `harness serve`: an HTTP handler over the store.

Each request opens the store and renders with :class:`harness.report.html.Site`, the same pages
`harness report` writes, so a page is never stale; ``/api/status`` gives the index's counts and
latest games as JSON for its refresh. The stdlib server is enough: one organiser's browser
polling every 2 seconds, on 127.0.0.1 by default.
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness.league.config import LeagueConfig
from harness.league.store import LeagueStore
from harness.report.html import MAX_LISTED, Site


class _Handler(BaseHTTPRequestHandler):
    config: LeagueConfig

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
        cfg = self.config
        if not Path(cfg.store).exists():
            self._send(200, "<p>No results yet: the league has not started. This page does not refresh itself; "
                            "reload it once `harness run` has begun.</p>")
            return
        with LeagueStore(cfg.store, create=False) as store:
            site = Site(cfg, store, live=True)
            if path in ("/", "/index.html"):
                self._send(200, site.index())
            elif path == "/api/status":
                counts = store.counts()
                latest = [{"id": g["id"], "round": g["round"], "seats": g["seats"], "ended_by": g["ended_by"]}
                          for g in site.latest_games(MAX_LISTED)]
                self._send(200, json.dumps({"done": counts["done"], "pending": counts["pending"], "latest": latest}),
                           "application/json")
            elif m := re.fullmatch(r"/games/(g-[0-9a-f]+)\.html", path):
                page = site.game(m.group(1))
                self._send(200 if page else 404, page or "no such game")
            elif m := re.fullmatch(r"/bots/(\d+)\.html", path):
                vid = int(m.group(1))
                self._send(200, site.bot(vid)) if vid in site.versions else self._send(404, "no such bot")
            elif m := re.fullmatch(r"/violations/(\d+)\.html", path):
                found = store.violation(int(m.group(1)))
                page = site.game(found[0]["game_id"], violation_id=int(m.group(1))) if found else None
                self._send(200 if page else 404, page or "no such violation")
            else:
                self._send(404, "not found")


def make_server(config: LeagueConfig, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server for ``config``'s league pages (``port`` 0: any free port)."""
    handler = type("Handler", (_Handler,), {"config": config})
    return ThreadingHTTPServer((host, port), handler)
