"""A team's downloads: any game it played, from its own seat, and any of its violations, as a seat
file (:mod:`harness.play.seat_file`) that ``harness reproduce FILE --command CMD`` replays to a bot.

A file holds only what that seat saw (the lines it was sent, its answers, its stderr and its
violations, never the referee's snapshot, which shows every hand) and no server path: the
contest's time controls and memory limits, so a replay at home runs under the same ones. The
team is checked against the game's seats (or the violation's) for every request: another team's
gets 403, whatever the id.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from harness.contest.site import ContestSite, Refused, Team
from harness.play.seat_file import seat_file

__all__ = ["seat_download", "violation_download", "download_routes", "attachment"]


def _forbidden(what: str) -> Refused:
    return Refused(403, f"forbidden: this {what} belongs to another team (each team sees only its own)")


def seat_download(site: ContestSite, team: Team, game_id: str, seat: int, violation_id: int | None = None) -> dict[str, Any]:
    """The seat file of ``team``'s ``seat`` in ``game_id`` (a finished game); Refused if not its own."""
    store = site.ladder.store()
    found = site.ladder.game(game_id)
    if store is None or found is None:
        raise Refused(404, f"no game {game_id!r} in the ladder")
    row, seats = found
    if seat not in {s.seat for s in seats if s.name == team.name}:
        raise _forbidden("seat")
    if row.status != "done":
        raise Refused(409, "this game is still being played: it can be downloaded once it is over")
    records = []
    for v in store.violations(game_seq=row.seq):
        if v.seat == seat:
            full = store.violation(v.id)
            if full is not None:
                records.append({**full[1], "id": v.id, "game_id": game_id})
    cfg = site.cfg
    return seat_file(game=cfg.game, options=cfg.options, players=len(seats), seat=seat, game_id=game_id,
                     time=cfg.time, limits=cfg.limits, log=store.game_log(row.seq) or [], violations=records,
                     violation_id=violation_id)


def violation_download(site: ContestSite, team: Team, violation_id: int) -> dict[str, Any]:
    """The seat file of the game of one of ``team``'s violations, up to the request that caused it."""
    violation = site.ladder.violation(violation_id)
    if violation is None:
        raise Refused(404, "no such violation")
    if violation["team"] != team.name:
        raise _forbidden("violation")
    return seat_download(site, team, violation["game_id"], violation["seat"], violation_id)


def attachment(site: ContestSite, data: dict[str, Any], filename: str) -> Response:
    """``data`` as a JSON file to save (the name the pages' reproduce command uses), without server paths."""
    text = site.redactor.text(json.dumps(data, indent=1))
    return Response(text, media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})


def seat_filename(game_id: str, seat: int) -> str:
    return f"game-{game_id}-seat{seat}.json"


def violation_filename(violation_id: int) -> str:
    return f"violation-{violation_id}.json"


def download_routes(site: ContestSite) -> list[Route]:
    """The download routes for a signed-in team (session cookie)."""
    from harness.contest.access import mine

    @mine
    async def my_seat_file(site: ContestSite, request: Request, team: Team) -> Response:
        game_id, seat = request.path_params["game_id"], request.path_params["seat"]
        data = await run_in_threadpool(seat_download, site, team, game_id, seat)
        return attachment(site, data, seat_filename(game_id, seat))

    @mine
    async def my_violation_file(site: ContestSite, request: Request, team: Team) -> Response:
        violation_id = request.path_params["id"]
        data = await run_in_threadpool(violation_download, site, team, violation_id)
        return attachment(site, data, violation_filename(violation_id))

    return [Route("/me/games/{game_id}/seat/{seat:int}/download", my_seat_file(site)),
            Route("/me/violations/{id:int}/download", my_violation_file(site))]
