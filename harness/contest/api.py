"""The API for a team's scripts (``Authorization: Bearer TOKEN``, JSON), beside the upload routes
of :mod:`.pages`: its submissions, games (filtered as on ``/me``), violations (grouped and the
latest), its ladder stderr, the seat files of its games and violations (:mod:`.downloads`), and
its challenges (``POST`` ``opponents=a,b&games=N``; ``GET`` lists them with their results).

``harness contest submit`` and ``harness contest games`` (:mod:`.client`) are a command line
over it. Every route answers only for the token's team; another team's game seat or violation
is 403, whatever the id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.authentication import requires
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from harness.contest.access import bearer_of
from harness.contest.challenges import challenges_of, request_challenge
from harness.contest.downloads import attachment, seat_download, seat_filename, violation_download, violation_filename
from harness.contest.ladder import version_label
from harness.contest.safe_files import NotShown, read_capped
from harness.contest.site import ContestSite, Refused, Team
from harness.contest.team_reads import filtered_games, grouped_violations

__all__ = ["api_routes", "stderr_text"]


def stderr_text(site: ContestSite, team: str, cap: int = 128 * 1024) -> str:
    """The team's bot's stderr in the ladder, as ``/me/stderr`` shows it: each worker's log, its
    older half first, the newest ``cap`` bytes of each (read capped: :mod:`.safe_files`), no server path."""
    from harness.contest.ladder import LADDER_STORE

    log_dir = site.cfg.root / (Path(LADDER_STORE).stem + ".logs")
    parts = []
    for folder in [log_dir, *sorted(log_dir.glob("worker-*"))]:
        for suffix in (".stderr.log.1", ".stderr.log"):
            try:
                data, _ = read_capped(folder, f"{team}{suffix}", cap, tail=True)
            except NotShown:
                continue
            head = f"== {folder.relative_to(log_dir)}/{team}{suffix} ==\n" if folder != log_dir else ""
            parts.append(head + data.decode("utf-8", "replace"))
    return site.redactor.text("\n".join(parts))


def _submissions(site: ContestSite, team: Team) -> list[dict[str, Any]]:
    row = site.db.team(team.id)
    current = row.current_submission if row else None
    return [{"id": s.id, "version": version_label(s.id), "status": s.status, "runtime": s.runtime,
             "filename": s.filename, "size": s.size, "created_at": s.created_at,
             "activated_at": s.activated_at, "current": s.id == current}
            for s in site.db.submissions_of(team.id)]


def _games(site: ContestSite, team: Team, request: Request) -> list[dict[str, Any]]:
    q = request.query_params
    players = int(q["players"]) if q.get("players", "").isdigit() else None
    limit = min(int(q["limit"]), 500) if q.get("limit", "").isdigit() else 50
    result = q.get("result")
    if result not in (None, "", "won", "lost"):
        raise Refused(400, "result: won or lost")
    games = filtered_games(site.ladder, team.name, result=result or None, players=players,
                           opponent=q.get("opponent") or None, limit=limit)
    return [{"id": g["id"], "round": g["round"], "finished_at": g["finished_at"], "ended_by": g["ended_by"],
             "players": g["players"], "won": g["won"], "seats": g["seats"],
             "downloads": [f"/api/games/{g['id']}/seat/{s}" for s in g["own_seats"]]} for g in games]


def _violations(site: ContestSite, team: Team) -> dict[str, Any]:
    groups = grouped_violations(site.ladder, team.name)
    return {"groups": [{"kind": g["kind"], "message": g["message"], "count": g["count"], "versions": g["versions"],
                        "newest": {**g["newest"], "download": f"/api/violations/{g['newest']['id']}"}} for g in groups],
            "latest": site.ladder.team_violations(team.name, 50)}


def api_routes(site: ContestSite) -> list[Route]:
    """The team API's read routes, bound to ``site``."""

    def endpoint(work: Any) -> Any:
        @requires("api", status_code=401)
        async def handle(request: Request) -> Response:
            return await run_in_threadpool(work, bearer_of(request), request)
        return handle

    def seat_file(team: Team, request: Request) -> Response:
        game_id, seat = request.path_params["game_id"], request.path_params["seat"]
        return attachment(site, seat_download(site, team, game_id, seat), seat_filename(game_id, seat))

    def violation_file(team: Team, request: Request) -> Response:
        vid = request.path_params["id"]
        return attachment(site, violation_download(site, team, vid), violation_filename(vid))

    def submission(team: Team, request: Request) -> Response:
        sub = site.db.submission(request.path_params["id"])
        if sub is None:
            raise Refused(404, f"no version {request.path_params['id']}")
        if sub.team_id != team.id:
            raise Refused(403, "forbidden: this version belongs to another team (each team sees only its own)")
        status = "failed" if sub.status == "replaced" and not sub.activated_at else sub.status
        return JSONResponse({"id": sub.id, "status": status, "runtime": sub.runtime,
                             "version": version_label(sub.id), "build_log": site.redactor.text(sub.build_log),
                             "check_log": site.redactor.text(sub.check_log), "current": sub.status == "active"})

    @requires("api", status_code=401)
    async def ask_challenge(request: Request) -> Response:
        team = bearer_of(request)
        form = await request.form(max_fields=4)
        names = [n.strip() for n in str(form.get("opponents") or "").split(",") if n.strip()]
        games = str(form.get("games") or "")

        def work() -> int:  # a ChallengeRefused: the app's handler answers 400 (access.REFUSALS)
            return request_challenge(site.cfg, site.db, team.id, names, int(games) if games.isdigit() else 0)
        return JSONResponse({"id": await run_in_threadpool(work), "status": "pending"}, status_code=201)

    return [
        Route("/api/challenges", ask_challenge, methods=["POST"]),
        Route("/api/challenges", endpoint(lambda team, request: JSONResponse(challenges_of(site.db, team.id))),
              methods=["GET"]),
        Route("/api/submissions", endpoint(lambda team, request: JSONResponse(_submissions(site, team))),
              methods=["GET"]),
        Route("/api/submissions/{id:int}", endpoint(submission), methods=["GET"]),
        Route("/api/games", endpoint(lambda team, request: JSONResponse(_games(site, team, request))), methods=["GET"]),
        Route("/api/games/{game_id}/seat/{seat:int}", endpoint(seat_file), methods=["GET"]),
        Route("/api/violations", endpoint(lambda team, request: JSONResponse(_violations(site, team))),
              methods=["GET"]),
        Route("/api/violations/{id:int}", endpoint(violation_file), methods=["GET"]),
        Route("/api/stderr", endpoint(lambda team, request: PlainTextResponse(stderr_text(site, team.name))),
              methods=["GET"]),
    ]
