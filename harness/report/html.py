"""The HTML report: a static site that works offline from ``file://``, and the same pages served live.

Pages (Jinja2 templates under ``templates/``, autoescaped: every bot-supplied string, a ready
name, stderr, an answer, shows as text and runs nothing; the replay data is embedded as JSON
with ``<``, ``>`` and ``&`` escaped, parsed with ``JSON.parse`` and drawn with ``textContent``):

- ``index.html``: the table with its intervals, the head-to-head heat map (of the table's first
  ``H2H_SHOWN`` bots; ``harness h2h`` gives every pair), ratings over time
  (inline SVG, no chart library: a few KB), seat bias, the violations and the latest games;
- ``bots/<id>.html``: a bot version's games and violations (the table links to it);
- ``games/<id>.html``: the replay viewer (``replay_viewer.html``, which other pages embed),
  drawing each game as it lies (the dial, the dominoes snake with its count, the trick and
  offer), with a move list in words, play/pause, ``#move=`` in the address, as the spectator or
  as one seat;
- ``violations/<id>.html``: a violation in full (request, answer, stderr) above the viewer opened
  at its move; the violation and its move link both ways.

Large leagues: the index lists the latest ``MAX_LISTED`` games and violations, a bot page its
latest ``MAX_LISTED`` games, and replays are written for the games listed anywhere, at most
``max_replays`` (the rest are served on demand by ``harness serve``), so a 100,000-game report
stays a few MB; bench/report.py measures it.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import escape

from harness.games import get_game
from harness.league import queries
from harness.league.config import LeagueConfig
from harness.league.store import LeagueStore
from harness.league.store_rows import GameSeatRow
from harness.report import statistics
from harness.report.history import rating_history
from harness.report.replay_data import game_replay, script_json
from harness.report.standing import Standing
from harness.report.tables import league_table, move_number, request_id_of

__all__ = ["H2H_SHOWN", "HISTORY_SHOWN", "MAX_LISTED", "ReportPages", "replay_viewer_html", "write_report", "fmt", "ci"]

MAX_LISTED = 200
H2H_SHOWN = 20  # the index's head-to-head matrix: the table's first 20 bots
HISTORY_SHOWN = 10  # lines on the ratings chart: the table's first 10 bots (1,000 lines would be unreadable)
COLORS = ("#3a6fd8", "#d8563a", "#2f9e5b", "#9a55c9", "#c99a1f", "#1f9fb0", "#b0386d", "#5b6b7f", "#7a8f1f",
          "#e0559e")


def fmt(value: float | None) -> str:
    """A figure as both sites' pages show it: two decimals, a dash for none."""
    return "–" if value is None else f"{value:.2f}"


def ci(ci: Sequence[float | None] | None) -> str:
    """An interval as both sites' pages show it, in brackets (empty for none)."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"({ci[0]:.2f}–{ci[1]:.2f})"


def _share_color(share: float) -> str:
    """White at 0.5, blue towards 1 (the row bot wins), red towards 0."""
    strength = min(1.0, abs(share - 0.5) * 2)
    r, g, b = (40, 85, 197) if share >= 0.5 else (198, 40, 40)
    mix = [round(255 + (c - 255) * strength * 0.55) for c in (r, g, b)]
    return f"rgb({mix[0]},{mix[1]},{mix[2]})"


def _history_svg(points: dict[int, list[tuple[int, float]]], labels: dict[int, str]) -> str:
    """Lines of mu against games played, one per bot of ``points``, as inline SVG (escaped by
    hand: labels are config names)."""
    if not points:
        return '<p class="muted">no games yet</p>'
    width, height, left, bottom = 860, 260, 48, 28
    xs = [x for line in points.values() for x, _ in line]
    ys = [y for line in points.values() for _, y in line]
    x0, x1 = min(xs), max(xs) or 1
    y0, y1 = min(ys) - 1, max(ys) + 1
    sx = (width - left - 250) / max(1, x1 - x0)
    sy = (height - bottom - 10) / max(1e-9, y1 - y0)
    parts = [f'<svg id="history" viewBox="0 0 {width} {height}" width="{width}" role="img" '
             f'style="background:#fff;border:1px solid #d9dde5;border-radius:6px">']
    for k in range(5):
        v = y0 + (y1 - y0) * k / 4
        y = height - bottom - (v - y0) * sy
        parts.append(f'<line x1="{left}" x2="{width - 250}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eef1f6"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{v:.1f}</text>')
    parts.append(f'<text x="{left}" y="{height - 6}" font-size="11">games played → {x1:,}</text>')
    for i, (vid, line) in enumerate(sorted(points.items(), key=lambda kv: -kv[1][-1][1])):
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{left + (x - x0) * sx:.1f},{height - bottom - (y - y0) * sy:.1f}" for x, y in line)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        parts.append(f'<text x="{width - 240}" y="{20 + 16 * i}" font-size="12" fill="{color}">'
                     f'{escape(labels.get(vid, str(vid)))} {line[-1][1]:.1f}</text>')
    parts.append("</svg>")
    return "".join(parts)


class ReportPages:
    """Renders the report's pages from a league's store (for files, or for the live server)."""

    def __init__(self, config: LeagueConfig, store: LeagueStore, *, live: bool = False) -> None:
        self.config = config
        self.store = store
        self.live = live
        self.env = _environment()
        self.engine = get_game(config.game)
        self.versions = {r.id: r for r in store.versions()}
        #: live pages: the state of the league the page shows (harness.report.live), and why the
        #: config on disk does not load (the last good one is shown)
        self.generation = ""
        self.config_problem: str | None = None
        self._counts: tuple[dict[str, int], int] | None = None

    def label(self, version_id: int) -> str:
        v = self.versions.get(version_id)
        return v.label if v else str(version_id)

    def _league(self) -> dict[str, Any]:
        # counted once per ReportPages: at 1,000,000 games a count costs 0.1-0.8 s, and a report has 1,500 pages
        if self._counts is None:
            self._counts = self.store.counts(), queries.violation_count(self.store)
        counts, n_violations = self._counts
        return {"name": self.config.name, "game": self.config.game, "path": self.config.path, "done": counts["done"],
                "pending": counts["pending"], "violations": n_violations,
                "made": dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S" if self.live else "%Y-%m-%d %H:%M"),
                "generation": self.generation, "config_problem": self.config_problem}

    def _render(self, template: str, root: str, **context: Any) -> str:
        return self.env.get_template(template).render(league=self._league(), root=root, live=self.live,
                                                      fmt=fmt, ci=ci, **context)

    # -- pages ------------------------------------------------------------------------------
    def index(self, replay_pages: set[str] | None = None, standing: Standing | None = None) -> str:
        """The index page; ``standing``: the table and its statistics kept up to date as games
        are recorded (``harness serve``), else computed from every game."""
        if standing is None:
            # the games read once, as arrays, for the table, the head to head and the seat bias
            # (the per-game rows the index also read took ~half of a 1,000,000-game index; the
            # rating history reads only what its cache in the store lacks)
            played = statistics.load_arrays(self.store)
            rows = league_table(self.store, self.config, played=played)

            def pairs_among(among: list[int]) -> list[dict[str, Any]]:
                return statistics.head_to_head(played, resamples=200, among=among)

            seat_bias = statistics.seat_bias(played, resamples=200)
        else:
            rows, pairs_among = standing.rows(self.store, self.config), standing.head_to_head
            seat_bias = standing.seat_bias()
        ids = {(v.name, v.version): vid for vid, v in self.versions.items()}
        table = [{**r.__dict__, "page": f"{ids[(r.bot, r.version)]}.html"} for r in rows]
        # the matrix of the table's first H2H_SHOWN bots, in the table's order (1,000 bots would
        # make a million cells); `harness h2h` prints every pair
        order = [ids[(r.bot, r.version)] for r in rows]
        shown = order[:H2H_SHOWN]
        pairs = pairs_among(shown)
        met = {p["a"] for p in pairs} | {p["b"] for p in pairs}
        bots = [b for b in shown if b in met]
        cells: dict[tuple[int, int], dict[str, Any]] = {}
        for p in pairs:
            diff = f"{p['score_diff']:+.2f}"
            cells[(p["a"], p["b"])] = {"share": p["a_won_share"], "games": p["games"], "diff": diff,
                                       "color": _share_color(p["a_won_share"])}
            cells[(p["b"], p["a"])] = {"share": 1 - p["a_won_share"], "games": p["games"], "diff": diff,
                                       "color": _share_color(1 - p["a_won_share"])}
        history = (rating_history(self.store, self.config.rating) if standing is None
                   else standing.history(self.store, self.config.rating))
        top = [v for v in (ids[(r.bot, r.version)] for r in rows) if v in history][:HISTORY_SHOWN]
        latest = self.latest_games(MAX_LISTED)
        for g in latest:
            g["page"] = f"{g['id']}.html" if replay_pages is None or g["id"] in replay_pages else None
        return self._render("index.html", "", rows=table, h2h={"bots": [{"id": b, "label": self.label(b)} for b in bots],
                                                                   "cells": cells, "of": len(order),
                                                                   "shown": len(shown)},
                            history_svg=_history_svg({v: history[v] for v in top}, {v: self.label(v) for v in top}),
                            history_of={"shown": len(top), "of": len(history)},
                            seat_bias=seat_bias, violations=self.latest_violations(),
                            games=latest)

    def latest_games(self, limit: int, version_id: int | None = None) -> list[dict[str, Any]]:
        out = []
        rows = queries.latest_games(self.store, limit, version_id)
        seats_of = queries.seats_of_games(self.store, [row.seq for row in rows])
        for row in rows:
            seats = seats_of.get(row.seq, [])
            out.append({"seq": row.seq, "id": row.id, "round": row.round, "ended_by": row.ended_by,
                        "seats_rows": seats, "page": f"{row.id}.html",
                        "seats": ", ".join(f"{s.name} ({s.rank + 1}, {s.score})" for s in seats)})
        return out

    def latest_violations(self, version_id: int | None = None) -> list[dict[str, Any]]:
        """The last ``MAX_LISTED`` violations (of ``version_id``), latest first: one query with a
        limit (reading every violation for each bot page made the report quadratic)."""
        rows = queries.latest_violations(self.store, MAX_LISTED, version_id)
        return [{"id": r.id, "game_id": r.game_id, "move": move_number(r.decision), "seat": r.seat,
                 "bot": f"{r.name}@{r.version}", "kind": r.kind, "detail": r.detail}
                for r in rows]

    def bot(self, version_id: int, replay_pages: set[str] | None = None) -> str:
        v = self.versions[version_id]
        games = []
        for g in self.latest_games(MAX_LISTED, version_id):
            mine: GameSeatRow = next(s for s in g["seats_rows"] if s.version_id == version_id)
            games.append({"id": g["id"], "round": g["round"], "seat": mine.seat, "rank": mine.rank + 1,
                          "score": mine.score,
                          "page": g["page"] if replay_pages is None or g["id"] in replay_pages else None,
                          "others": ", ".join(s.name for s in g["seats_rows"] if s.version_id != version_id)})
        total = queries.games_of_version(self.store, version_id)
        return self._render("bot.html", "../", bot={"label": self.label(version_id),
                                                   "command": " ".join(json.loads(v.command))},
                            games=games, more=max(0, total - len(games)), violations=self.latest_violations(version_id))

    def game(self, game_id: str, violation_id: int | None = None) -> str | None:
        row = self.store.game(game_id)
        if row is None:
            return None
        seats = self.store.game_seats(row.seq)
        violations = self.store.violations(game_seq=row.seq)
        replay = game_replay(self.engine, self.config.options, row, seats, self.store.game_log(row.seq), violations)
        violation = None
        start = 0
        if violation_id is not None:
            found = self.store.violation(violation_id)
            if found is not None:
                vrow, record = found
                start = (vrow.decision + 1) if isinstance(vrow.decision, int) else 0
                start = min(start, max(0, len(replay["frames"]) - 1))
                violation = {"id": vrow.id, "kind": vrow.kind, "detail": vrow.detail, "seat": vrow.seat,
                             "bot": f"{vrow.name}@{vrow.version}", "move": move_number(vrow.decision),
                             "request_id": request_id_of(record), "request": record.get("request", ""),
                             "received": record.get("received", ""), "stderr_tail": record.get("stderr_tail", "")}
        return self._render("game.html", "../", replay=replay, replay_json=script_json(replay), violation=violation,
                            start_move=start, bot_pages=[f"{s.version_id}.html" for s in seats])


@functools.cache
def _environment() -> Environment:
    """The report's templates, one environment per process (its compiled templates kept: the
    live server compiled them for each page, 60 ms of a render; a template changed on disk is
    still read again)."""
    return Environment(loader=PackageLoader("harness.report", "templates"),
                       autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)


def replay_viewer_html(replay: dict[str, Any], start_move: int = 0) -> str:
    """The replay viewer alone (style, controls, picture, move list, script and the data), for
    another page to embed: ``replay`` is :func:`harness.report.replay_data.game_replay`'s data.
    The data holds every hand: embed only games a viewer may see whole (finished ones)."""
    return _environment().get_template("replay_viewer.html").render(
        replay=replay, replay_json=script_json(replay), start_move=start_move)


def write_report(config: LeagueConfig, out_dir: str | Path, *, max_replays: int = 500) -> dict[str, Any]:
    """Write the static site for ``config``'s league to ``out_dir``; return what was written."""
    out = Path(out_dir)
    for sub in ("bots", "games", "violations"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    with LeagueStore(config.store, create=False) as store:
        site = ReportPages(config, store)
        wanted: list[str] = [g["id"] for g in site.latest_games(MAX_LISTED)]
        violations = site.latest_violations()
        wanted += [v["game_id"] for v in violations]
        for vid in site.versions:  # ids only: the seats are read when the bot's page is written
            wanted += [g.id for g in queries.latest_games(store, 50, vid)]
        replay_ids = list(dict.fromkeys(wanted))[:max_replays]
        pages = set(replay_ids)
        (out / "index.html").write_text(site.index(pages), encoding="utf-8")
        for vid in site.versions:
            (out / "bots" / f"{vid}.html").write_text(site.bot(vid, pages), encoding="utf-8")
        for gid in replay_ids:
            html = site.game(gid)
            if html is not None:
                (out / "games" / f"{gid}.html").write_text(html, encoding="utf-8")
        for v in violations:
            html = site.game(v["game_id"], violation_id=v["id"])
            if html is not None:
                (out / "violations" / f"{v['id']}.html").write_text(html, encoding="utf-8")
    return {"dir": str(out), "replays": len(replay_ids), "violations": len(violations),
            "bytes": sum(p.stat().st_size for p in out.rglob("*.html"))}
