"""The contest site as an ASGI application: Starlette, served by uvicorn (``harness contest serve``).

The routes are :mod:`.pages`, the state they share :class:`~harness.contest.site.ContestSite`; the build
worker thread starts and stops with the application.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware

from harness.contest.access import REFUSALS, ContestAuth, refused, unauthenticated
from harness.contest.api import api_routes
from harness.contest.config import load_contest
from harness.contest.downloads import download_routes
from harness.contest.finals_page import routes as finals_routes
from harness.contest.guard import RequestGuard
from harness.contest.me_routes import me_routes
from harness.contest.organizer import routes as organizer_routes
from harness.contest.pages import routes
from harness.contest.site import ContestSite, Refused
from harness.contest.team_pages import team_routes
from harness.report.web import SecurityHeaders

__all__ = ["create_app"]


def create_app(root: str | Path, *, start_worker: bool = True) -> Starlette:
    """The site of the contest in ``root``."""
    site = ContestSite(load_contest(root), start_worker=start_worker)

    @asynccontextmanager
    async def lifespan(app: Starlette):  # type: ignore[no-untyped-def]
        if site.start_worker:
            site.worker.start()
        yield
        if site.start_worker:
            site.worker.stop()

    # the guard first: body limits, the body deadline and the client's address hold before any route
    # then who is asking (Starlette's authentication: the routes say what they require)
    middleware = [Middleware(RequestGuard, limits=site.cfg.site, upload_bytes=site.upload_cap),
                  Middleware(SecurityHeaders), Middleware(AuthenticationMiddleware, backend=ContestAuth(site))]
    # the participant's routes (downloads, team and help pages, the read API) before the base routes
    participant = [*download_routes(site), *me_routes(site), *team_routes(site), *api_routes(site)]
    app = Starlette(routes=[*participant, *routes(site), *organizer_routes(site), *finals_routes(site)],
                    middleware=middleware, lifespan=lifespan,
                    exception_handlers={Refused: refused, **dict.fromkeys(REFUSALS, refused), 401: unauthenticated})
    app.state.site = site
    return app
