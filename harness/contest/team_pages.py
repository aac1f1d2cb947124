"""A team's public page (``/teams/NAME``), the extra parts of its own page (``/me``: pause notice,
games with won/lost and filters, violations grouped), and the help pages (``/help``: how to debug a
bot on this site, the rules, the protocol, the starter bots).

Public on a team's page: its versions (label, runtime, status, since when; never code or logs), the
rating of each (the ladder's TrueSkill from the standings summary) in the order they were current,
its results per opponent and per table size over its latest games, its hardest opponents. The help
pages serve files of the tablebots checkout (protocol.md, docs/rules/GAME.md, bots/starters/) by
name from a fixed list, never a path from the request.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from harness.contest.autopause import WHAT_TO_DO, pause_of
from harness.contest.challenges import challenges_of
from harness.contest.ladder import version_label
from harness.contest.safe_files import NotShown, read_capped
from harness.contest.site import ContestSite, Refused, Team
from harness.contest.team_reads import filtered_games, grouped_violations, results_by_opponent

__all__ = ["team_routes", "me_context", "STARTERS"]

#: the checkout the harness runs from (protocol.md, docs/, bots/starters/ beside the package)
CHECKOUT = Path(__file__).resolve().parents[2]
STARTERS = CHECKOUT / "bots" / "starters"


def _versions(site: ContestSite, team_id: int) -> list[dict[str, Any]]:
    """The team's versions, oldest first, with their ladder rating (public fields only)."""
    rows = site.db.submissions_of(team_id, limit=200)
    standings = site.db.standings_of([r.id for r in rows])
    out = []
    for r in reversed(rows):
        st = standings.get(r.id)
        out.append({"id": r.id, "label": version_label(r.id), "runtime": r.runtime, "status": r.status,
                    "uploaded": _when(r.created_at), "activated": _when(r.activated_at),
                    "games": st.games if st else 0, "wins": st.wins if st else 0,
                    "mu": st.mu if st else None, "sigma": st.sigma if st else None,
                    "rating": st.mu - 3 * st.sigma if st else None})
    return out


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(stamp)) if stamp else ""


def _chart(versions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Points of the rating (mu - 3 sigma) of each rated version in order, scaled to a 600x130 box
    (the axis' labels in its first 60 pixels)."""
    rated = [v for v in versions if v["rating"] is not None and v["games"]]
    if not rated:
        return None
    lo, hi = min(v["rating"] for v in rated), max(v["rating"] for v in rated)
    span = (hi - lo) or 1.0
    step = 500 / max(1, len(rated) - 1)
    points = [{"x": 80 + i * step if len(rated) > 1 else 330, "y": 10 + 100 * (hi - v["rating"]) / span, "label": v["label"],
               "rating": v["rating"]} for i, v in enumerate(rated)]
    return {"points": points, "path": " ".join(f"{p['x']:.1f},{p['y']:.1f}" for p in points), "lo": lo, "hi": hi}


#: the longest a team's results are reused while no game was added (the leaderboard's key)
RESULTS_TTL = 30.0
_CACHED = 512


def _results(site: ContestSite, name: str, cache: dict[str, tuple[Any, float, dict[str, Any]]]) -> dict[str, Any]:
    """:func:`results_by_opponent`, reused until a game is added (at most RESULTS_TTL seconds)."""
    key = site.db.board_key()
    hit = cache.get(name)
    if hit is not None and hit[0] == key and time.monotonic() < hit[1]:
        return hit[2]
    results = results_by_opponent(site.ladder, name)
    if len(cache) >= _CACHED:
        cache.clear()
    cache[name] = (key, time.monotonic() + RESULTS_TTL, results)
    return results


def team_page(site: ContestSite, request: Request, name: str,
              cache: dict[str, tuple[Any, float, dict[str, Any]]] | None = None) -> Response:
    row = site.db.team_by_name(name)
    if row is None:
        raise Refused(404, f"no team {name!r} in this contest")
    versions = _versions(site, row.id)
    current = row.current_submission
    sub = site.db.submission(current) if current else None
    pause = pause_of(site.db, sub.id) if sub is not None and sub.status == "paused" else None
    return site.render("team.html", request, site.session_team(request), name=name, versions=versions,
                       chart=_chart(versions), current=version_label(current) if current else None, pause=pause,
                       results=_results(site, name, cache if cache is not None else {}))


def me_context(site: ContestSite, request: Request, team: Team) -> dict[str, Any]:
    """What ``/me`` shows besides the versions and the upload form: the pause, filtered games, grouped violations."""
    params = request.query_params
    result = params.get("result") if params.get("result") in ("won", "lost") else None
    players = int(params["players"]) if params.get("players", "").isdigit() else None
    opponent = params.get("opponent") or None
    row = site.db.team(team.id)
    current = row.current_submission if row else None
    sub = site.db.submission(current) if current else None
    pause = pause_of(site.db, sub.id) if sub is not None and sub.status == "paused" else None
    return {"pause": pause, "what_to_do": WHAT_TO_DO, "filters": {"result": result, "players": players,
                                                                    "opponent": opponent},
            "games": filtered_games(site.ladder, team.name, result=result, players=players, opponent=opponent),
            "violation_groups": grouped_violations(site.ladder, team.name),
            "sizes": site.cfg.players,
            "challenges": challenges_of(site.db, team.id), "challenge_policy": site.cfg.challenges}


def _help_files(site: ContestSite) -> dict[str, Path]:
    """The files the help pages serve, by the name in their URL."""
    files = {"protocol": CHECKOUT / "protocol.md", "rules": CHECKOUT / "docs" / "rules" / f"{site.cfg.game}.md"}
    if STARTERS.is_dir():
        for folder in sorted(p for p in STARTERS.iterdir() if p.is_dir()):
            for f in sorted(folder.iterdir()):
                if f.is_file() and f.stat().st_size < 256 * 1024:
                    files[f"starters/{folder.name}/{f.name}"] = f
    return files


def team_routes(site: ContestSite) -> list[Route]:
    """The team page, the help pages, and the replay's bot links (to the team page)."""

    cache: dict[str, tuple[Any, float, dict[str, Any]]] = {}  # this site's teams' results (the GIL guards it)

    async def team(request: Request) -> Response:
        return await run_in_threadpool(team_page, site, request, request.path_params["name"], cache)

    async def help_index(request: Request) -> Response:
        def work() -> Response:
            files = _help_files(site)
            return site.render("help.html", request, site.session_team(request),
                               files=[n for n in files if n.startswith("starters/")],
                               have={k: files[k].is_file() for k in ("protocol", "rules")})
        return await run_in_threadpool(work)

    async def help_file(request: Request) -> Response:
        path = _help_files(site).get(request.path_params["name"])
        try:  # a fixed list of the checkout's files, read capped all the same (safe_files)
            data, _ = read_capped(path.parent, path.name, 256 * 1024) if path is not None else (b"", 0)
        except NotShown:
            path = None
        if path is None:
            raise Refused(404, "no such help page (see /help)")
        return PlainTextResponse(data.decode("utf-8", "replace"))

    async def bot_link(request: Request) -> Response:
        # a replay links each seat to ../bots/<version id>.html: the team page of that version's team
        page = request.path_params["page"].removesuffix(".html")

        def name_of() -> str | None:
            store = site.ladder.store()
            if store is None or not page.isdigit():
                return None
            return store.bot_name(int(page))
        name = await run_in_threadpool(name_of)
        return RedirectResponse(f"/teams/{name}" if name else "/", status_code=303)

    return [Route("/teams/{name}", team), Route("/help", help_index), Route("/help/{name:path}", help_file),
            Route("/bots/{page}", bot_link), Route("/me/bots/{page}", bot_link),
            Route("/me/games/{game_id}/bots/{page}", bot_link)]
