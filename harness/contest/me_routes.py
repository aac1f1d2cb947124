"""A team's form posts beyond the upload: asking for a challenge (:mod:`.challenges`).

Its own module: it uses :func:`harness.contest.access.mine` (session and CSRF), and
:mod:`.pages` imports :mod:`.team_pages` (the ``/me`` context), so the routes that need ``mine``
live here, imported only by the application (:mod:`.server`).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from harness.contest.challenges import request_challenge
from harness.contest.site import ContestSite, Team

__all__ = ["me_routes"]


def me_routes(site: ContestSite) -> list[Route]:
    """``POST /me/challenges``."""
    from harness.contest.access import mine

    @mine
    async def challenge(site: ContestSite, request: Request, team: Team) -> Response:
        form = await request.form(max_fields=40)
        site.check_csrf(team, form)
        games = str(form.get("games") or "")
        opponents = [name.strip() for o in form.getlist("opponents") for name in str(o).split(",") if name.strip()]

        def work() -> None:  # a ChallengeRefused: the app's handler answers 400 (access.REFUSALS)
            request_challenge(site.cfg, site.db, team.id, opponents, int(games) if games.isdigit() else 0)
        await run_in_threadpool(work)
        return RedirectResponse("/me#challenges", status_code=303)

    return [Route("/me/challenges", challenge(site), methods=["POST"])]
