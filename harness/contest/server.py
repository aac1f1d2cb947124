"""The contest site as an ASGI application: Starlette, served by uvicorn (``harness contest serve``).

The routes are :mod:`.pages`, the state they share :class:`~harness.contest.app.Site`; the build
worker thread starts and stops with the application.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware

from harness.contest.app import Site
from harness.contest.config import load_contest
from harness.contest.finals_page import routes as finals_routes
from harness.contest.guard import RequestGuard
from harness.contest.organizer import routes as organizer_routes
from harness.contest.pages import routes
from harness.report.web import SecurityHeaders

__all__ = ["create_app"]


def create_app(root: str | Path, *, start_worker: bool = True) -> Starlette:
    """The site of the contest in ``root``."""
    site = Site(load_contest(root), start_worker=start_worker)

    @asynccontextmanager
    async def lifespan(app: Starlette):  # type: ignore[no-untyped-def]
        if site.start_worker:
            site.worker.start()
        yield
        if site.start_worker:
            site.worker.stop()

    # the guard first: body limits, the body deadline and the client's address hold before any route
    middleware = [Middleware(RequestGuard, limits=site.cfg.site, upload_bytes=site.upload_cap),
                  Middleware(SecurityHeaders)]
    app = Starlette(routes=routes(site) + organizer_routes(site) + finals_routes(site), middleware=middleware,
                    lifespan=lifespan)
    app.state.site = site
    return app
