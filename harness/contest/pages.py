"""The contest site's routes: public pages, a team's own pages, and the API for scripts.

Public: the leaderboard (``/``, ``/api/leaderboard``), finished games as spectator replays
(``/games``), head to head (``/h2h``). A team's own (``/me...``): its versions with their build
and check logs and code, its games replayed from its own seats (opened in that seat's view), its violations with the
request, its answer and its stderr, its ladder stderr. Every ``/me`` handler loads the object
asked for and compares its team with the session's team: another team's gets 403, whatever the
id. No page shows a game that is not finished.

The leaderboard reads only the ``standings`` summary (:mod:`.db`), never the games.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from harness.contest.access import api, bearer_of, mine, public
from harness.contest.auth import new_csrf, session_key
from harness.contest.board_fit import fit_note
from harness.contest.ladder import version_label
from harness.contest.phases import upload_state
from harness.contest.rows import SubmissionRow
from harness.contest.safe_files import NotShown, list_files, read_capped
from harness.contest.site import SIGNIN_COOKIE, ContestSite, Refused, Team
from harness.report.replay_data import script_json

__all__ = ["routes"]

#: the most of one file of a version a page shows
FILE_CAP = 1024 * 1024


def _forbidden(what: str) -> Refused:
    return Refused(403, f"forbidden: this {what} belongs to another team (each team sees only its own)")


# -- public pages --------------------------------------------------------------------------------
@public
async def index(site: ContestSite, request: Request) -> Response:
    def work() -> Response:
        team = site.session_team(request)
        rows, board_html = site.board()
        return site.render("index.html", request, team, rows=rows, board_html=board_html, counts=site.db.counts(),
                           games=site.ladder.latest_games(10), uploads=upload_state(site.cfg, site.db),
                           fit_note=fit_note(site.db), unsafe=site.db.get_meta("unsafe") or "")
    return await run_in_threadpool(work)


@public
async def games(site: ContestSite, request: Request) -> Response:
    before = request.query_params.get("before")
    before_seq = int(before) if before and before.isdigit() else None

    def work() -> Response:
        page = site.ladder.latest_games(50, before_seq)
        return site.render("games.html", request, site.session_team(request), games=page,
                           next_before=page[-1]["seq"] if len(page) == 50 else None)
    return await run_in_threadpool(work)


def _replay_page(site: ContestSite, request: Request, team: Team | None, game_id: str, seats_shown: set[int] | None,
                 violation: dict[str, Any] | None = None, **extra: Any) -> Response:
    replay = site.ladder.replay(game_id, seats_shown)
    if replay is None:
        found = site.ladder.game(game_id)
        if found is None:
            raise Refused(404, f"no game {game_id!r} in the ladder")
        raise Refused(409, "this game is still being played: its replay is shown once it is over")
    start = 0
    if violation is not None and isinstance(violation["decision"], int):
        start = min(violation["decision"] + 1, max(0, len(replay["frames"]) - 1))
    seats = site.ladder.game(game_id)
    bot_pages = [f"{s.version_id}.html" for s in seats[1]] if seats else []
    # a team's own game opens in its own seat's view (the only seats whose observations it holds);
    # the public sees the spectator's view alone
    own = sorted(seats_shown or ())
    keep = site.cfg.retention
    log_note = None if replay["frames"] else (
        f"The log of this game was dropped: the ladder keeps game logs {keep.keep_days} days ({keep.violations_days} "
        f"with a violation) within {keep.disk_mb:,} MB. Its result stays.")
    return site.render("game.html", request, team, replay=replay, replay_json=script_json(replay),
                       violation=violation, start_move=start, bot_pages=bot_pages,
                       view_seats=own, view_seat=own[0] if own else None, log_note=log_note, **extra)


@public
async def game(site: ContestSite, request: Request) -> Response:
    game_id = request.path_params["game_id"]
    return await run_in_threadpool(lambda: _replay_page(site, request, site.session_team(request), game_id, None))


@public
async def head_to_head(site: ContestSite, request: Request) -> Response:
    from harness.contest.h2h import MATRIX_TEAMS, cached_matrix

    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")

    def work() -> Response:
        teams = [t.name for t in site.db.teams()]
        rows, _ = site.board()
        top = [r["team"] for r in rows if r["version"] is not None][:MATRIX_TEAMS]
        pick_a, pick_b = a, b
        if not (a or b):  # the page opens on the two best teams, never on a team against itself
            pick_a, pick_b = (top + [t for t in teams if t not in top] + ["", ""])[:2]
        result = (site.ladder.head_to_head(pick_a, pick_b)
                  if pick_a in teams and pick_b in teams and pick_a != pick_b else None)
        return site.render("h2h.html", request, site.session_team(request), teams=teams, a=pick_a, b=pick_b,
                           result=result, top=top, matrix=cached_matrix(site.ladder, top))
    return await run_in_threadpool(work)


async def to_index(request: Request) -> Response:
    return RedirectResponse("/", status_code=303)


# -- signing in ----------------------------------------------------------------------------------
@public
async def signin_form(site: ContestSite, request: Request) -> Response:
    csrf = new_csrf()
    response = site.render("signin.html", request, None, csrf=csrf, error=None)
    response.set_cookie(SIGNIN_COOKIE, csrf, max_age=3600, httponly=True, samesite="strict",
                        secure=site.cfg.secure_cookies, path="/signin")
    return response


@public
async def signin(site: ContestSite, request: Request) -> Response:
    import hmac

    await run_in_threadpool(site.limit_signins, request)  # before the form is even read
    form = await request.form()
    sent, cookie = form.get("csrf"), request.cookies.get(SIGNIN_COOKIE)
    if not isinstance(sent, str) or not cookie or not hmac.compare_digest(sent, cookie):
        raise Refused(403, "refused: the sign-in form has no valid CSRF token (reload the sign-in page and try again)")
    token = form.get("token")
    if isinstance(token, str) and token.strip().startswith("tbo_"):  # the organizer's token
        from harness.contest import controls, organizer

        if await run_in_threadpool(controls.organizer_token_ok, site.db, token):
            to_organizer = RedirectResponse("/organizer", status_code=303)
            address = request.client.host if request.client else "unknown"
            await run_in_threadpool(organizer.sign_in, site, to_organizer, address)
            to_organizer.delete_cookie(SIGNIN_COOKIE, path="/signin")
            return to_organizer
    team_id = await run_in_threadpool(site.tokens.team_of, token) if isinstance(token, str) else None
    if team_id is None:
        return site.render("signin.html", request, None, status=401, csrf=cookie,
                           error="this token is not valid (copy it exactly as the organizer gave it)")
    redirect = RedirectResponse("/me", status_code=303)
    await run_in_threadpool(site.sign_in, redirect, team_id)
    redirect.delete_cookie(SIGNIN_COOKIE, path="/signin")
    return redirect


@mine
async def signout(site: ContestSite, request: Request, team: Team) -> Response:
    form = await request.form()
    site.check_csrf(team, form)
    from harness.contest.site import SESSION_COOKIE

    sid = request.cookies.get(SESSION_COOKIE, "")
    await run_in_threadpool(site.db.drop_session, session_key(sid))
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


# -- a team's own pages --------------------------------------------------------------------------
@mine
async def me(site: ContestSite, request: Request, team: Team) -> Response:
    from harness.contest.team_pages import me_context

    def work() -> Response:
        row = site.db.team(team.id)
        return site.render("me.html", request, team, submissions=site.db.submissions_of(team.id),
                           current=row.current_submission if row else None,
                           runtimes=site.cfg.runtimes, quotas=site.cfg.quotas,
                           violations=site.ladder.team_violations(team.name, 30),
                           frozen=_closed_line(site), **me_context(site, request, team))
    return await run_in_threadpool(work)


def _closed_line(site: ContestSite) -> str | None:
    """Why uploads are closed now (None while they are open), as a sentence for the team's page."""
    state = upload_state(site.cfg, site.db)
    return None if state.open else state.line[0].upper() + state.line[1:] + "."


@mine
async def upload(site: ContestSite, request: Request, team: Team) -> Response:
    site.check_length(request)
    form = await request.form(max_files=1, max_fields=4)
    site.check_csrf(team, form)
    submission_id = await site.accept_upload(team, form)
    return RedirectResponse(f"/me/submissions/{submission_id}", status_code=303)


def _own_submission(site: ContestSite, team: Team, submission_id: int) -> SubmissionRow:
    sub = site.db.submission(submission_id)
    if sub is None:
        raise Refused(404, f"no version {submission_id}")
    if sub.team_id != team.id:
        raise _forbidden("version")
    return sub


@mine
async def my_submission(site: ContestSite, request: Request, team: Team) -> Response:
    def work() -> Response:
        sub = _own_submission(site, team, request.path_params["id"])
        folder = site.cfg.submissions_dir / str(sub.id)
        files = list_files(folder, 2000) if folder.is_dir() else []
        return site.render("submission.html", request, team, sub=sub, files=files[:200],
                           label=version_label(sub.id))
    return await run_in_threadpool(work)


@mine
async def my_file(site: ContestSite, request: Request, team: Team) -> Response:
    def work() -> Response:
        sub = _own_submission(site, team, request.path_params["id"])
        try:  # a build's output is hostile: capped, never through a link, never a FIFO
            data, size = read_capped(site.cfg.submissions_dir / str(sub.id), request.path_params["path"],
                                     FILE_CAP)
        except NotShown:
            raise Refused(404, "no such file in this version") from None
        more = f"\n[... {size - len(data)} more bytes not shown ...]\n" if size > len(data) else ""
        return PlainTextResponse(data.decode("utf-8", "replace") + more)
    return await run_in_threadpool(work)


@mine
async def my_violation(site: ContestSite, request: Request, team: Team) -> Response:
    def work() -> Response:
        violation = site.ladder.violation(request.path_params["id"])
        if violation is None:
            raise Refused(404, "no such violation")
        if violation["team"] != team.name:
            raise _forbidden("violation")
        vid = violation["id"]
        return _replay_page(site, request, team, violation["game_id"], {violation["seat"]}, violation,
                            download_url=f"/me/violations/{vid}/download", download_name=f"violation-{vid}.json")
    return await run_in_threadpool(work)


@mine
async def my_seat(site: ContestSite, request: Request, team: Team) -> Response:
    game_id, seat = request.path_params["game_id"], request.path_params["seat"]

    def work() -> Response:
        found = site.ladder.game(game_id)
        if found is None:
            raise Refused(404, f"no game {game_id!r} in the ladder")
        own = {s.seat for s in found[1] if s.name == team.name}
        if seat not in own:
            raise _forbidden("seat")
        return _replay_page(site, request, team, game_id, {seat}, download_url=f"/me/games/{game_id}/seat/{seat}/download",
                            download_name=f"game-{game_id}-seat{seat}.json")
    return await run_in_threadpool(work)


@mine
async def my_stderr(site: ContestSite, request: Request, team: Team) -> Response:
    def work() -> Response:
        from harness.contest.ladder import LADDER_STORE

        log_dir = site.cfg.root / (Path(LADDER_STORE).stem + ".logs")
        parts = []
        # one log per worker process (ladder.logs/worker-N/), each rotated once (.1 is the older half)
        for folder in [log_dir, *sorted(log_dir.glob("worker-*"))]:
            for suffix in (".stderr.log.1", ".stderr.log"):
                try:
                    data, _ = read_capped(folder, f"{team.name}{suffix}", 128 * 1024, tail=True)
                except NotShown:
                    continue
                head = f"== {folder.relative_to(log_dir)}/{team.name}{suffix} ==\n" if folder != log_dir else ""
                parts.append(head + data.decode("utf-8", "replace"))
        text = "\n".join(parts) or "(nothing yet: your bot has written nothing to stderr in the ladder)"
        return site.render("stderr.html", request, team, text=text)
    return await run_in_threadpool(work)


# -- the API ---------------------------------------------------------------------------------------
@api
async def api_submit(site: ContestSite, request: Request) -> Response:
    team = bearer_of(request)
    site.check_length(request)
    form = await request.form(max_files=1, max_fields=4)
    submission_id = await site.accept_upload(team, form)
    return JSONResponse({"id": submission_id, "status": "building"}, status_code=201)


@public
async def api_leaderboard(site: ContestSite, request: Request) -> Response:
    def work() -> Response:
        rows, _ = site.board()
        table = [{"rank": r["rank"], "bot": r["team"], "version": r["version"], "current": True, "mu": r["mu"],
                  "sigma": r["sigma"], "rating": r["rating"], "games": r["games"], "wins": r["wins"],
                  "mean_rank": r["mean_rank"], "violations": r["violations"],
                  "mu_ci": [r["mu"] - 1.96 * r["sigma"], r["mu"] + 1.96 * r["sigma"]], "mean_score": None,
                  "mean_score_ci": None, "mean_rank_ci": None, "p_better": r["p_better"], "noisy": r["noisy"],
                  "widened": r["widened"], "noise": r["noise"], "version_age": r["age"]}
                 for r in rows if r["version"] is not None]
        counts = site.db.counts()
        return JSONResponse({"league": site.cfg.name, "game": site.cfg.game, "games_done": counts["games"],
                             "ratings": fit_note(site.db), "table": table,
                             "unsafe": site.db.get_meta("unsafe") or None})
    return await run_in_threadpool(work)


def routes(site: ContestSite) -> list[Route]:
    """The site's routes, bound to ``site``."""
    return [
        Route("/", index(site)), Route("/index.html", index(site)),
        Route("/games", games(site)), Route("/games/{game_id}", game(site)),
        Route("/h2h", head_to_head(site)),
        Route("/bots/{page}", to_index), Route("/me/bots/{page}", to_index), Route("/me/games/{game_id}/bots/{page}", to_index),
        Route("/signin", signin_form(site), methods=["GET"]), Route("/signin", signin(site), methods=["POST"]),
        Route("/signout", signout(site), methods=["POST"]),
        Route("/me", me(site)), Route("/me/upload", upload(site), methods=["POST"]),
        Route("/me/submissions/{id:int}", my_submission(site)),
        Route("/me/submissions/{id:int}/files/{path:path}", my_file(site)),
        Route("/me/violations/{id:int}", my_violation(site)),
        Route("/me/games/{game_id}/seat/{seat:int}", my_seat(site)),
        Route("/me/stderr", my_stderr(site)),
        Route("/api/submissions", api_submit(site), methods=["POST"]),
        Route("/api/leaderboard", api_leaderboard(site), methods=["GET"]),
    ]

