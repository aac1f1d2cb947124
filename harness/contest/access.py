"""Who is asking, through Starlette's own mechanisms: the contest site's authentication.

:class:`ContestAuth` is the backend of Starlette's ``AuthenticationMiddleware``: for every request
it reads the session cookie (a team signed in on the site: scope ``team``) and the
``Authorization: Bearer`` header (a team's script: scope ``api``), each as
:class:`~harness.contest.site.ContestSite` checks them (session hashes, the token cache, the
sign-in limit before an unverified token is hashed). Routes say what they need with
``starlette.authentication.requires`` (:func:`mine`, :func:`api`); a request without it ends in
:func:`unauthenticated`: a page sends the browser to ``/signin``, the API answers 401 (or 429
past the sign-in limit) with the reason. A handler refuses with
:class:`~harness.contest.site.Refused` (or one of the features' own refusals, :data:`REFUSALS`:
400), which :func:`refused` turns into the site's page (or JSON under ``/api/``) with its status
and line, for every route.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser, requires
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection, Request
from starlette.responses import RedirectResponse, Response

from harness.contest.challenges import ChallengeRefused
from harness.contest.controls import ControlError
from harness.contest.site import ContestSite, Refused, Team, refused_json

__all__ = ["ContestAuth", "Visitor", "REFUSALS", "refused", "unauthenticated", "public", "mine", "api", "session_of",
           "bearer_of"]

Endpoint = Callable[[Request], Awaitable[Response]]


class Visitor(BaseUser):
    """Who sent a request: the team of its session, the team of its bearer token, either or none,
    and why the token was refused (the API's 401 or 429 says it)."""

    def __init__(self, session: Team | None, bearer: Team | None, refusal: Refused | None) -> None:
        self.session = session
        self.bearer = bearer
        self.refusal = refusal

    @property
    def is_authenticated(self) -> bool:
        return self.session is not None or self.bearer is not None

    @property
    def display_name(self) -> str:
        team = self.session or self.bearer
        return team.name if team else ""


class ContestAuth(AuthenticationBackend):
    """Scopes ``team`` (a session) and ``api`` (a bearer token) for the site's routes."""

    def __init__(self, site: ContestSite) -> None:
        self.site = site

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser]:
        session = await run_in_threadpool(self.site.session_team, conn)
        bearer: Team | None = None
        refusal: Refused | None = None
        # caught here, not by the app's handler: a backend that raises fails every request, and a
        # bad token refuses only the routes that require it (unauthenticated says why)
        try:  # without the header this refuses at once, reading nothing
            bearer = await run_in_threadpool(self.site.bearer_team, conn)
            if bearer is None:  # a valid token of a team removed since
                refusal = Refused(401, "this token is not valid")
        except Refused as exc:
            refusal = exc
        scopes = (["team"] if session else []) + (["api"] if bearer else [])
        return AuthCredentials(scopes), Visitor(session, bearer, refusal)


def session_of(request: Request) -> Team | None:
    """The team signed in on the site (its session cookie), if any."""
    user = request.user
    return user.session if isinstance(user, Visitor) else None


def bearer_of(request: Request) -> Team:
    """The team of the request's bearer token (a route under :func:`api`)."""
    user = request.user
    assert isinstance(user, Visitor) and user.bearer is not None, "a route without requires('api')"
    return user.bearer


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


#: the features' own refusals (each a 400, its line after the prefix): an organizer's action that
#: cannot be done, a challenge that cannot be asked
REFUSALS: dict[type[Exception], str] = {ControlError: "", ChallengeRefused: "challenge refused: "}


async def refused(request: Request, exc: Exception) -> Response:
    """A :class:`Refused` (or one of :data:`REFUSALS`) raised by any route: JSON under ``/api/``,
    else the site's message page."""
    for kind, prefix in REFUSALS.items():
        if isinstance(exc, kind):
            exc = Refused(400, prefix + str(exc))
    assert isinstance(exc, Refused)
    if _is_api(request):
        return refused_json(exc)
    site: ContestSite = request.app.state.site
    title = "Not found" if exc.status == 404 else "Refused"
    return site.message(request, session_of(request), exc.status, title, exc.message)


async def unauthenticated(request: Request, exc: Exception) -> Response:
    """A route's ``requires`` not met (401): the API says why; a page sends the browser to sign in."""
    if _is_api(request):
        user = request.user
        why = user.refusal if isinstance(user, Visitor) and user.refusal is not None else \
            Refused(401, "this token is not valid")
        return refused_json(why)
    return RedirectResponse("/signin", status_code=303)


# -- routes bound to the site -----------------------------------------------------------------------
Handler = Callable[[ContestSite, Request], Awaitable[Response]]


def public(handler: Handler) -> Callable[[ContestSite], Endpoint]:
    """A route anyone may call, bound to the site."""
    return lambda site: functools.partial(handler, site)


def api(handler: Handler) -> Callable[[ContestSite], Endpoint]:
    """A route for a team's script: a valid bearer token (:func:`bearer_of`), else 401."""
    guarded = requires("api", status_code=401)(handler)
    return lambda site: functools.partial(guarded, site)


def mine(handler: Callable[[ContestSite, Request, Team], Awaitable[Response]]) -> Callable[[ContestSite], Any]:
    """A team's own page: a session (the handler gets its team), else the browser is sent to sign in."""

    @requires("team", status_code=401)
    async def signed_in(site: ContestSite, request: Request) -> Response:
        team = session_of(request)
        if team is None:  # (requires saw the scope: never)
            raise HTTPException(401)
        return await handler(site, request, team)

    return lambda site: functools.partial(signed_in, site)
