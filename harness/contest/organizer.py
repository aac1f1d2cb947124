"""The organizer's pages: every team, version, build and violation, the controls, the audit, and
the collusion report (pairs of teams whose results at shared tables depart from their records apart).

The organizer signs in on ``/signin`` with the organizer token (:func:`sign_in`, called by the
sign-in form's handler when the token is an organizer's); the session is a cookie of its own
(``contest_organizer``: HttpOnly, SameSite=Strict, Secure behind https) whose hash is kept in
``org_sessions``, and every form carries that session's CSRF token. A team's session never
opens these pages (403), whatever it sends. The actions are :mod:`harness.contest.controls`,
each written to the audit with who did it and when.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from harness.contest import controls, ladder_sql, org_db
from harness.contest.auth import session_key
from harness.contest.phases import upload_state, when
from harness.contest.site import ContestSite, Refused

__all__ = ["routes", "sign_in", "ORG_COOKIE"]

ORG_COOKIE = "contest_organizer"
#: The collusion page's false alarm rate: the chance that a ladder of honest teams shows a flag.
COLLUSION_ALPHA = 0.001
Handler = Callable[[ContestSite, Request, str], Awaitable[Response]]


def sign_in(site: ContestSite, response: Response, address: str = "unknown") -> None:
    """Open an organizer session on ``response`` (the token was checked by the caller)."""
    sid, _ = controls.org_session_add(site.db, f"organizer (site, {address})")
    response.set_cookie(ORG_COOKIE, sid, max_age=controls.ORG_SESSION_TTL, httponly=True, samesite="strict",
                        secure=site.cfg.secure_cookies, path="/")


def _csrf(site: ContestSite, request: Request) -> str | None:
    sid = request.cookies.get(ORG_COOKIE)
    return controls.org_session(site.db, sid) if sid and len(sid) <= 200 else None


def organizer(handler: Handler) -> Callable[[ContestSite], Callable[[Request], Awaitable[Response]]]:
    """Only for the organizer's session: a team, or nobody, is refused (403). What the handler
    refuses (:class:`Refused`, :class:`~.controls.ControlError`) ends in the app's handler
    (:func:`~.access.refused`)."""
    def bind(site: ContestSite) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            csrf = await run_in_threadpool(_csrf, site, request)
            if csrf is None:
                raise Refused(403, "the organizer's pages: sign in with the organizer token (harness contest "
                                   "init printed it; harness contest organizer-token DIR gives a new one)")
            return await handler(site, request, csrf)
        return endpoint
    return bind


def _teams(site: ContestSite) -> list[dict[str, Any]]:
    states = controls.team_states(site.db)
    blocks = controls.blocks_of(site.db)
    rows = org_db.team_summaries(site.db)
    out = []
    for r in rows:
        state = states.get(r.id)
        out.append({**r._asdict(), "removed": bool(state and state.removed_at),
                    "reset": when(state.reset_at) if state and state.reset_at else None,
                    "blocks": [b for b in blocks if b.team_id == r.id],
                    "last_upload": when(r.last_upload) if r.last_upload else None})
    return out


@organizer
async def overview(site: ContestSite, request: Request, csrf: str) -> Response:
    def work() -> Response:
        from harness.contest.status import contest_status, format_status

        status = "\n".join(format_status(contest_status(site.cfg, site.db)))
        return site.render("organizer.html", request, None, organizer_nav=True, csrf=csrf, teams=_teams(site), status_text=status,
                           uploads=upload_state(site.cfg, site.db), phases=site.cfg.phases, when=when,
                           announcements=controls.announcements(site.db, 20), counts=site.db.counts(),
                           done=request.query_params.get("done"))
    return await run_in_threadpool(work)


@organizer
async def team_page(site: ContestSite, request: Request, csrf: str) -> Response:
    name = request.path_params["name"]

    def work() -> Response:
        team = site.db.team_by_name(name)
        if team is None:
            raise Refused(404, f"no team named {name!r}")
        subs = org_db.team_submissions(site.db, team.id)
        state = controls.team_states(site.db).get(team.id)
        cut = (state.removed_at or state.reset_at) if state else None
        games = site.ladder.team_games(name, 30)
        for g in games:  # games played before a reset or a removal stay, marked
            g["before"] = bool(cut and g["finished_at"] and g["finished_at"] < time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime(cut)))
        blocked = {b.ref: b.reason for b in controls.blocks_of(site.db, team.id) if b.kind == "version"}
        return site.render("organizer_team.html", request, None, organizer_nav=True, csrf=csrf, t=team, subs=subs, games=games,
                           violations=site.ladder.team_violations(name, 100), state=state, when=when,
                           blocked=blocked, team_blocks=[b for b in controls.blocks_of(site.db, team.id)
                                                         if b.kind == "team"])
    return await run_in_threadpool(work)


@organizer
async def violations(site: ContestSite, request: Request, csrf: str) -> Response:
    def work() -> Response:
        store = site.ladder.store()
        rows = [] if store is None else ladder_sql.latest_violations(store, 300)
        return site.render("organizer_violations.html", request, None, organizer_nav=True, csrf=csrf, rows=rows)
    return await run_in_threadpool(work)


@organizer
async def violation(site: ContestSite, request: Request, csrf: str) -> Response:
    """A violation in full (the request, the answer, the stderr) over the game seen from its seat."""
    from harness.report.replay_data import script_json

    def work() -> Response:
        found = site.ladder.violation(request.path_params["id"])
        replay = site.ladder.replay(found["game_id"], {found["seat"]}) if found else None
        if found is None or replay is None:
            raise Refused(404, "no such violation (or its game's log was dropped)")
        start = min(found["decision"] + 1, max(0, len(replay["frames"]) - 1)) if isinstance(found["decision"],
                                                                                           int) else 0
        return site.render("game.html", request, None, organizer_nav=True, replay=replay, replay_json=script_json(replay),
                           violation=found, start_move=start, bot_pages=[], view_seats=[found["seat"]],
                           view_seat=found["seat"], log_note=None)
    return await run_in_threadpool(work)


def _collusion(site: ContestSite) -> dict[str, Any]:
    """The collusion report of the ladder's duplicate sets, each pair named and its evidence."""
    from harness.league import queries
    from harness.report.collusion import MIN_SETS, analyse, describe, store_sets, used_bound

    store = site.ladder.store()
    if store is None:
        return {"sets": 0, "pairs": [], "judged": 0, "bound": None, "alpha": COLLUSION_ALPHA, "min_sets": MIN_SETS}
    names = {r.id: r.label for r in store.versions()}
    sets = store_sets(queries.done_seats(store))
    findings = analyse(sets, COLLUSION_ALPHA)
    pairs = []
    for f in findings[:max(10, sum(f.flagged for f in findings))]:
        a, b = names.get(f.a, str(f.a)), names.get(f.b, str(f.b))
        games = queries.pair_games(store, f.a, f.b)
        pairs.append({"a": a, "b": b, "f": f, "why": describe(f, a, b), "games": games,
                      "teams": (a.split("@")[0], b.split("@")[0])})
    judged = sum(1 for f in findings if f.sets >= MIN_SETS)
    bound = used_bound(findings)
    return {"sets": len(sets), "pairs": pairs, "judged": judged, "bound": bound if judged else None,
            "alpha": COLLUSION_ALPHA, "min_sets": MIN_SETS}


@organizer
async def collusion(site: ContestSite, request: Request, csrf: str) -> Response:
    def work() -> Response:
        return site.render("organizer_collusion.html", request, None, organizer_nav=True, csrf=csrf, **_collusion(site))
    return await run_in_threadpool(work)


@organizer
async def audit(site: ContestSite, request: Request, csrf: str) -> Response:
    def work() -> Response:
        return site.render("organizer_audit.html", request, None, organizer_nav=True, csrf=csrf, rows=controls.audit_log(site.db),
                           when=when)
    return await run_in_threadpool(work)


def _act(site: ContestSite, who: str, form: dict[str, str]) -> str:
    """Do the form's action; return what was done, in words."""
    action, team, version = form.get("action", ""), form.get("team") or None, form.get("version") or None
    reason = form.get("reason", "")
    db = site.db
    if action == "disable":
        return controls.disable(db, who, team=team, version=version, reason=reason)
    if action == "enable":
        return controls.enable(db, who, team=team, version=version)
    if action == "reset" and team:
        return controls.reset_team(db, who, team, reason)
    if action == "remove" and team:
        if form.get("confirm") != team:
            raise controls.ControlError(f"to remove team {team}, type its name in the confirmation box")
        return controls.remove_team(db, who, team, reason)
    if action == "announce":
        return controls.announce(db, who, form.get("text", ""))
    if action == "reopen":
        hours = form.get("hours", "")
        until = time.time() + float(hours) * 3600 if hours.replace(".", "", 1).isdigit() else None
        return controls.reopen_uploads(db, who, until)
    if action == "close":
        return controls.close_uploads(db, who)
    raise controls.ControlError(f"unknown action {action!r}")


async def _form(request: Request, csrf: str, max_fields: int) -> dict[str, str]:
    """The posted form's text fields, once its CSRF token is the organizer session's (else 403)."""
    form = await request.form(max_files=0, max_fields=max_fields)
    sent = form.get("csrf")
    if not isinstance(sent, str) or not hmac.compare_digest(sent, csrf):
        raise Refused(403, "refused: this form has no valid CSRF token (reload the page and submit it again)")
    return {k: v for k, v in form.items() if isinstance(v, str)}


@organizer
async def act(site: ContestSite, request: Request, csrf: str) -> Response:
    fields = await _form(request, csrf, 12)
    address = request.client.host if request.client else "unknown"
    done = await run_in_threadpool(_act, site, f"organizer (site, {address})", fields)
    back = str(fields.get("back", "/organizer"))
    back = back if back.startswith("/organizer") and "//" not in back else "/organizer"
    from urllib.parse import quote

    return RedirectResponse(f"{back}?done={quote(done)}", status_code=303)


@organizer
async def signout(site: ContestSite, request: Request, csrf: str) -> Response:
    await _form(request, csrf, 2)
    sid = request.cookies.get(ORG_COOKIE, "")

    def drop() -> None:
        org_db.drop_org_session(site.db, session_key(sid))
    await run_in_threadpool(drop)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(ORG_COOKIE, path="/")
    return response


def routes(site: ContestSite) -> list[Route]:
    """The organizer's routes, bound to ``site``."""
    return [Route("/organizer", overview(site)), Route("/organizer/teams/{name}", team_page(site)),
            Route("/organizer/violations", violations(site)),
            Route("/organizer/violations/{id:int}", violation(site)),
            Route("/organizer/collusion", collusion(site)), Route("/organizer/audit", audit(site)), Route("/organizer/act", act(site), methods=["POST"]),
            Route("/organizer/signout", signout(site), methods=["POST"])]
