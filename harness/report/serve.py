"""The live league pages of `harness serve`: a Starlette application over the store, served by
uvicorn, the web stack of the contest site (:mod:`harness.contest.server`), with its security
headers (:mod:`harness.report.web`).

Each route is answered by :class:`harness.report.live.LiveLeague` (the pages `harness report`
writes, made from the store, the config read again when it changes, the index made in the
background from a table kept up to date as games are recorded); ``/api/status`` gives the counts
and the league's state for the page's refresh, from memory. Any other path, or an id that cannot
be one, is a plain 404.

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
import re
import socket
import sqlite3
import threading
import time

import uvicorn
from markupsafe import escape
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from harness.league.config import LeagueConfig, LeagueError
from harness.league.store import LeagueStore
from harness.report.arena import one_arena
from harness.report.live import LiveLeague
from harness.report.web import SecurityHeaders

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


class LocalHostsOnly:
    """Answers 421 to a request whose ``Host`` does not name this server (see the module
    docstring): pure ASGI, before any route. Starlette's ``TrustedHostMiddleware`` takes a list of
    names only; bound to every address, this one accepts any IP address too."""

    def __init__(self, app: ASGIApp, bound_host: str) -> None:
        self.app = app
        self.bound = bound_host.lower().strip("[]")

    def allowed(self, host: str) -> bool:
        """Whether ``host`` (a Host header's value) names this server."""
        host = host.strip().lower()
        if not host:
            return False
        name = host[1:host.index("]")] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
        if name in _LOCAL_NAMES or name == self.bound:
            return True
        if self.bound in ("", "0.0.0.0", "::"):
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return False
            return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.allowed(Headers(scope=scope).get("host", "")):
            refusal = PlainTextResponse("this server answers only requests addressed to it (its address or localhost)",
                                        status_code=421)
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


#: a bot version's or a violation's id: at most 18 ASCII digits (a longer one is no SQLite integer; the
#: path is decoded, and int() would read other scripts' digits too)
_ID = re.compile(r"[0-9]{1,18}")
_GAME_ID = re.compile(r"g-[0-9a-f]+")


def create_app(live: LiveLeague, owner: _OwnerCheck, bound_host: str) -> Starlette:
    """The ASGI application of ``live``'s pages: its routes, the Host check, the security headers
    (:mod:`harness.report.web`, as the contest site's)."""

    def answer(made: tuple[int, str, str]) -> Response:
        status, body, kind = made
        if kind.startswith("text/html") and (line := owner.line()):
            body = with_banner(body, line)
        return Response(body, status_code=status, media_type=kind)

    def not_found(what: str) -> Response:
        return answer((404, f"no such {what}", "text/html; charset=utf-8"))

    # plain functions: Starlette runs them in its thread pool (a request for the index may wait
    # for a render), as the stdlib's threading server did
    def index(request: Request) -> Response:
        return answer(live.index())

    def status(request: Request) -> Response:
        return answer(live.status())

    def game(request: Request) -> Response:
        game_id = request.path_params["game_id"]
        return answer(live.game(game_id)) if _GAME_ID.fullmatch(game_id) else not_found("game")

    def bot(request: Request) -> Response:
        vid = request.path_params["vid"]
        return answer(live.bot(int(vid))) if _ID.fullmatch(vid) else not_found("bot")

    def violation(request: Request) -> Response:
        vid = request.path_params["vid"]
        return answer(live.violation(int(vid))) if _ID.fullmatch(vid) else not_found("violation")

    routes = [Route("/", index), Route("/index.html", index), Route("/api/status", status),
              Route("/games/{game_id}.html", game), Route("/bots/{vid}.html", bot),
              Route("/violations/{vid}.html", violation)]
    middleware = [Middleware(LocalHostsOnly, bound_host=bound_host), Middleware(SecurityHeaders)]
    return Starlette(routes=routes, middleware=middleware)


class LeagueServer:
    """The server of one league's live pages: uvicorn on a socket bound when it is made (so its
    port is known at once), with the stdlib server's methods (``serve_forever``, ``shutdown``,
    ``server_close``, ``server_address``)."""

    def __init__(self, app: Starlette, sock: socket.socket, owner: _OwnerCheck) -> None:
        self.app = app
        self.live = owner.live
        self.socket = sock
        self.server_address: tuple[str, int] = sock.getsockname()[:2]
        self.owner = owner
        self._uvicorn = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                                      proxy_headers=False, server_header=False,
                                                      timeout_graceful_shutdown=5))
        self._uvicorn.config.load()  # its imports now: the first request, once the port is printed, need not wait
        self._serving = threading.Event()
        self._stopped = threading.Event()

    def owner_warning(self) -> str | None:
        """The line shown when the config served is not its store's owner, or None."""
        return self.owner.line()

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (run it in a thread of its own: it blocks)."""
        self._serving.set()
        self.live.watch()  # the index made as games are recorded, not at a page's next poll
        try:
            self._uvicorn.run(sockets=[self.socket])
        finally:
            self.live.stop_watching()
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop serving, waiting for :meth:`serve_forever` to return."""
        self._uvicorn.should_exit = True
        if self._serving.is_set():
            self._stopped.wait()

    def server_close(self) -> None:
        """Close the listening socket."""
        self.socket.close()


def make_server(config: LeagueConfig, host: str, port: int) -> LeagueServer:
    """A server for ``config``'s league pages on ``host``:``port`` (``port`` 0: any free port),
    bound now, kept current as the store and the config change (:class:`harness.report.live.LiveLeague`).
    Its process's threads share one malloc arena from now (:func:`harness.report.arena.one_arena`)."""
    one_arena()  # (before its threads start)
    live = LiveLeague(config)
    owner = _OwnerCheck(live)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    return LeagueServer(create_app(live, owner, host), sock, owner)
