"""The finals on the site: ``/finals`` (the order, each finalist's probability of being champion,
whether the order was settled or the game budget ran out, the finals' games in words) and each
finals game as a spectator replay (``/finals/games/ID``; no seat's observations, no stderr)."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from harness.contest.finals import read_result
from harness.contest.ladder_reads import LadderReader
from harness.contest.phases import when
from harness.contest.site import ContestSite, Refused

__all__ = ["routes"]


def routes(site: ContestSite) -> list[Route]:
    """The finals' routes, bound to ``site``."""
    reader = LadderReader(site.cfg.root / "finals" / "finals.sqlite", site.cfg.game, site.cfg.options)

    async def finals(request: Request) -> Response:
        def work() -> Response:
            result: dict[str, Any] | None = read_result(site.cfg.root)
            planned = when(site.cfg.phases.finals) if site.cfg.phases.finals else None
            return site.render("finals.html", request, site.session_team(request), result=result, planned=planned,
                               games=reader.latest_games(100) if result else [], when=when)
        return await run_in_threadpool(work)

    async def game(request: Request) -> Response:
        def work() -> Response:
            from harness.report.replay_data import script_json

            replay = reader.replay(request.path_params["game_id"], None)
            if replay is None:
                raise Refused(404, "no such finals game")
            return site.render("game.html", request, site.session_team(request), replay=replay,
                               replay_json=script_json(replay), violation=None, start_move=0, bot_pages=[],
                               view_seats=[], view_seat=None, log_note=None)
        return await run_in_threadpool(work)

    return [Route("/finals", finals), Route("/finals/games/{game_id}", game)]
