"""The live league behind ``harness serve``: pages made from the store on request, kept current.

- **The config follows its file.** On every request the config file and the files that make
  each bot's version are stat'ed (a few microseconds each); when one changed, the config is
  read again, so a bot edited since the server started shows its new version as the current one.
  A config that no longer loads (half-saved, broken) keeps the last good one, and the page says
  what is wrong.
- **The table is kept, not recomputed.** The index's table and statistics are a
  :class:`harness.report.standing.Standing`: the store read whole once, then at each new state
  only the games recorded since (the fit warm-started from the last, the intervals' sums kept),
  so at 1,000 bots and 1,000,000 games a page with new games costs ~0.9 s of CPU where
  recomputing everything cost 9-10 s (16-29 s of wall time) (bench/live.py; docs/performance.md). The rating
  history's fitted points are kept in the store (:mod:`harness.report.history`).
- **The index is made in the background** (:class:`IndexRenderer`), one render at a time, for
  the league's state: SQLite's ``data_version`` on one read-only connection (it changes when
  another connection commits), the store file and the config's stamp, read in microseconds. A
  request for the index, or the page's poll of ``api/status``, starts a render when the state
  moved past the last one; a request waits for it up to :data:`FRESH_WAIT` seconds, then gets the
  last one made (the page fetches the newer one once ``api/status`` says it is ready:
  ``rendered``); the very first render of a large league (the store read whole, the fit from
  scratch) shows a page that says it is being prepared. ``api/status`` answers from memory: the
  counts of the last render and the state now.
- **Before the store exists** (or while ``harness run`` is creating it) the page says so and
  polls until the store appears, then shows the league. A reader never creates the store or
  its schema: it waits for a store whose schema is written.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from markupsafe import escape

from harness.league import queries
from harness.league.config import ConfigError, LeagueConfig, load_config
from harness.league.store import LeagueStore, StoreError
from harness.league.store_base import StoreWatch
from harness.report.html import ReportPages
from harness.report.standing import Standing

__all__ = ["LiveLeague", "IndexRenderer", "FRESH_WAIT"]

#: seconds a request for the index waits for a render of the league as it is now before it gets
#: the last one made (a first render is waited for this long too, then a "being prepared" page)
FRESH_WAIT = 2.0
#: how often :meth:`LiveLeague.watch` asks the league's state (SQLite's data_version: microseconds)
WATCH_INTERVAL = 0.1

Response = tuple[int, str, str]
HTML = "text/html; charset=utf-8"

_WAITING = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{name} · tablebots</title></head>
<body style="font: 15px system-ui, sans-serif; margin: 40px"><h1>{name}</h1>
<p id="waiting">No results yet: {why}. This page refreshes itself once <code>harness run {path}</code> has begun.</p>
<script>
setInterval(async () => {{
  try {{ const s = await (await fetch("api/status", {{cache: "no-store"}})).json(); if (s.store) location.reload(); }}
  catch (e) {{ /* the server is gone: keep waiting */ }}
}}, 2000);
</script></body></html>"""


_PREPARING = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{name} · tablebots</title></head>
<body style="font: 15px system-ui, sans-serif; margin: 40px"><h1>{name}</h1>
<p id="preparing">The table of {done} finished games is being computed (a large league takes a while the first
time); this page shows it when it is ready.</p>
<script>
setInterval(async () => {{
  try {{ const s = await (await fetch("api/status", {{cache: "no-store"}})).json(); if (s.rendered) location.reload(); }}
  catch (e) {{ /* the server is gone: keep waiting */ }}
}}, 2000);
</script></body></html>"""


class IndexRenderer:
    """The index made in a background thread, one render at a time, the last one kept.

    ``render(generation)`` makes the page (its own store connection: SQLite connections stay in
    the thread that opened them). :meth:`page` returns the render of ``generation`` if one is made
    within ``wait`` seconds, else the last one made (None before the first); :meth:`kick` starts a
    render without waiting. A render that fails is logged on stderr and tried again on the next
    request; the last good page stays.
    """

    def __init__(self, render: Callable[[str], str], after: Callable[[], None] | None = None) -> None:
        self._render = render
        self._after = after  # run once a page is made and served, before the next render may start
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self.last: tuple[str, str] | None = None  # (generation, html)
        self._busy: str | None = None  # the generation being rendered
        self._failed: str | None = None  # the generation whose render failed last

    def kick(self, generation: str) -> None:
        """Start rendering ``generation`` unless it is the last one made or one is under way."""
        with self._lock:
            self._start(generation)

    def _start(self, generation: str) -> None:
        if self._busy is not None or (self.last is not None and self.last[0] == generation):
            return
        self._busy = generation
        threading.Thread(target=self._run, args=(generation,), name="index-render", daemon=True).start()

    def _run(self, generation: str) -> None:
        html: str | None = None
        try:
            html = self._render(generation)
        except Exception:  # a page that cannot be made must not stop the server: said, tried again
            traceback.print_exc()
        with self._lock:
            if html is not None:
                self.last = (generation, html)
            self._failed = None if html is not None else generation
            self._done.notify_all()  # the page is served from now
        if html is not None and self._after is not None:
            try:
                self._after()
            except Exception:  # the same as a render's failure: said, the pages go on
                traceback.print_exc()
        with self._lock:
            self._busy = None
            self._done.notify_all()

    def page(self, generation: str, wait: float) -> str | None:
        """The index of ``generation`` if made within ``wait`` s, else the last made (or None)."""
        deadline = time.monotonic() + wait
        with self._lock:
            self._start(generation)
            while not (self.last is not None and self.last[0] == generation):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if self._busy is None:
                    if self._failed == generation:  # the render failed: no point waiting
                        break
                    self._start(generation)  # the one under way was of an older state: this one now
                self._done.wait(left)
            return self.last[1] if self.last is not None else None

    def rendered(self) -> str | None:
        """The generation of the last page made."""
        with self._lock:
            return self.last[0] if self.last is not None else None


def _stamp(paths: list[str]) -> tuple[tuple[str, int, int], ...]:
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append((p, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((p, -1, -1))
    return tuple(out)


class LiveLeague:
    """One league served live: its config (re-read when it changes) and its store (when it exists)."""

    def __init__(self, config: LeagueConfig) -> None:
        self._config = config
        self._stamp = self._files_stamp(config)
        self.problem: str | None = None  # why the config on disk does not load (the last good one is used)
        self._lock = threading.Lock()
        self.renderer = IndexRenderer(self._render_index, after=self._after_render)
        self._watch = StoreWatch()  # the store's data_version, which _token asks
        self._standing: Standing | None = None  # the table kept current (made by the first render)
        self._status: dict[str, Any] = {}  # the counts of the last render, for api/status
        self._made: tuple[Any, str, str] | None = None  # (the config's state, generation, page) of the last render
        self._watching: threading.Event | None = None  # set to stop watch()'s thread

    @staticmethod
    def _files_stamp(config: LeagueConfig) -> tuple[tuple[str, int, int], ...]:
        return _stamp([config.path] + [f for b in config.bots for f in b.files])

    def config(self) -> LeagueConfig:
        """The league's config as its files are now (read again when the config or a bot changed)."""
        stamp = self._files_stamp(self._config)
        if stamp != self._stamp:
            with self._lock:
                if stamp != self._stamp:
                    try:
                        self._config = load_config(self._config.path, strict=False)
                        self.problem = None
                    except ConfigError as exc:
                        self.problem = str(exc)
                    self._stamp = self._files_stamp(self._config) if self.problem is None else stamp
        return self._config

    def store_ready(self, config: LeagueConfig) -> bool:
        """Whether the store exists with its schema written (never creating either)."""
        return LeagueStore.ready(config.store)

    def _token(self, config: LeagueConfig) -> str:
        """The league's state in microseconds: SQLite's ``data_version`` on one read-only
        connection kept for it (the number changes when another connection commits), the store
        file's identity, the config files' stamp and the table's fits made after a page
        (:meth:`Standing.after_page`). A render then finds what changed (:class:`Standing`)."""
        version, inode = self._watch.version(config.store)
        refits = self._standing.refits if self._standing is not None else 0
        return f"{version}.{inode}.{abs(hash(self._stamp)) % 10**9}.{refits}"

    def _answer(self, page: Callable[[LeagueStore, LeagueConfig, str, dict[str, Any]], Response], *,
                api: bool = False) -> Response:
        """``page(store, config, generation, status)`` with the store open, or the waiting page (the
        waiting status for ``api``) while the store is not there yet."""
        config = self.config()
        if not self.store_ready(config):
            if api:
                return 200, json.dumps({"store": False, "done": 0, "pending": 0, "config_problem": self.problem}), \
                    "application/json"
            why = f"the league has not started ({escape(config.store)} does not exist yet)"
            return 200, _WAITING.format(name=escape(config.name), why=why, path=escape(config.path)), HTML
        try:
            store = LeagueStore(config.store, create=False)
        except StoreError as exc:
            return 503, f"<p>{escape(str(exc))}</p>", HTML
        with store:
            return page(store, config, "", {})

    def watch(self, interval: float = WATCH_INTERVAL) -> None:
        """Make the index as soon as the league changes, not at the next page's poll (once a
        second): a thread asks the league's state every ``interval`` seconds and starts a render of
        a new one, which the pages' polls then find made. :meth:`stop_watching` ends it."""
        if self._watching is not None:
            return
        stop = self._watching = threading.Event()

        def run() -> None:
            while not stop.wait(interval):
                config = self.config()
                try:
                    if self.store_ready(config):
                        self.renderer.kick(self._token(config))
                except (sqlite3.Error, OSError):
                    pass  # (a store being made or replaced: asked again next time)

        threading.Thread(target=run, name="index-watch", daemon=True).start()

    def stop_watching(self) -> None:
        """End :meth:`watch`'s thread (at its next look)."""
        if self._watching is not None:
            self._watching.set()
            self._watching = None

    def status(self) -> Response:
        """``api/status``: the counts, the state of the league and of the last page made, the
        latest games, as JSON, from memory (the counts of the last render; no query but SQLite's
        ``data_version``): a poll costs well under a millisecond at any size."""
        config = self.config()
        if not self.store_ready(config):
            return 200, json.dumps({"store": False, "done": 0, "pending": 0, "config_problem": self.problem}), \
                "application/json"
        try:
            token = self._token(config)
        except (sqlite3.Error, OSError):
            return 200, json.dumps({"store": False, "done": 0, "pending": 0, "config_problem": self.problem}), \
                "application/json"
        self.renderer.kick(token)  # the page's poll keeps the index coming
        with self._lock:
            status: dict[str, Any] = dict(self._status) if self._status else {"store": True, "done": 0, "pending": 0}
        status.update(generation=token, rendered=self.renderer.rendered(), config_problem=self.problem)
        return 200, json.dumps(status), "application/json"

    def index(self) -> Response:
        """The index: the last render, waiting up to :data:`FRESH_WAIT` for one of the league now."""
        config = self.config()
        if not self.store_ready(config):
            return self._answer(lambda *_: (200, "", HTML))
        try:
            token = self._token(config)
        except (sqlite3.Error, OSError) as exc:
            return 503, f"<p>{escape(str(exc))}</p>", HTML
        made = self.renderer.page(token, FRESH_WAIT)
        if made is None:
            with self._lock:
                done = int(self._status.get("done", 0)) if self._status else 0
            return 200, _PREPARING.format(name=escape(config.name), done=f"{done:,}"), HTML
        return 200, made, HTML

    def game(self, game_id: str) -> Response:
        """A game's replay page (404 when the store has no such game)."""
        def page(store: LeagueStore, config: LeagueConfig, generation: str, status: dict[str, Any]) -> Response:
            made = ReportPages(config, store, live=True).game(game_id)
            return (200, made, HTML) if made else (404, "no such game", HTML)
        return self._answer(page)

    def bot(self, version_id: int) -> Response:
        """A bot version's page (404 when the league has no such version)."""
        def page(store: LeagueStore, config: LeagueConfig, generation: str, status: dict[str, Any]) -> Response:
            site = ReportPages(config, store, live=True)
            return (200, site.bot(version_id), HTML) if version_id in site.versions else (404, "no such bot", HTML)
        return self._answer(page)

    def violation(self, violation_id: int) -> Response:
        """A violation's page: its game's replay opened at it (404 when there is no such violation)."""
        def page(store: LeagueStore, config: LeagueConfig, generation: str, status: dict[str, Any]) -> Response:
            found = store.violation(violation_id)
            made = ReportPages(config, store, live=True).game(found[0].game_id, violation_id=violation_id) if found else None
            return (200, made, HTML) if made else (404, "no such violation", HTML)
        return self._answer(page)

    def _generation_now(self) -> str:
        """The league's state as the store is now (for benchmarks and tests)."""
        return self._token(self.config())

    def _after_render(self) -> None:
        """After a page is made: the fit's deferred test (:meth:`Standing.after_page`; a fit made
        again is a new state, :meth:`_token`) and the chart of ratings over time fitted again if
        due (its commit is a new state): the next poll makes the page with them."""
        config, standing = self.config(), self._standing
        if standing is not None:
            standing.after_page()
            with LeagueStore(config.store, create=False) as store:
                standing.refit_history(store, config.rating)

    def _render_index(self, generation: str) -> str:
        """The index of the league now (in the renderer's thread, with its own store connection):
        the table and its statistics brought up to date (:class:`Standing`: only what changed),
        the counts for ``api/status`` kept."""
        config = self.config()
        with LeagueStore(config.store, create=False) as store:
            if self._standing is None or self._standing.rating != config.rating:
                self._standing = Standing(config.rating)
            standing = self._standing
            changed = standing.refresh(store, config.store)
            last = self._made
            key = (self._stamp, self.problem, standing.history_fits, standing.refits)
            if not changed and last is not None and last[0] == key:
                # nothing new (a commit of no game: the history's cache, a plan): the last page,
                # under this state's name (the page's refresh compares it with api/status')
                html = last[2].replace(f'data-generation="{last[1]}"', f'data-generation="{generation}"', 1)
                self._made = (last[0], generation, html)
                return html
            with queries.read_snapshot(store):
                pending = queries.pending_count(store)
                violations = queries.violation_count(store)
                versions = len(store.versions())
            site = ReportPages(config, store, live=True)
            site.generation = generation
            site.config_problem = self.problem
            counts = {"done": standing.done, "pending": pending}
            site._counts = (counts, violations)
            html = site.index(standing=standing)
            latest = [{"id": g["id"], "round": g["round"], "seats": g["seats"], "ended_by": g["ended_by"]}
                      for g in site.latest_games(20)]
        with self._lock:
            self._status = {"store": True, "done": standing.done, "pending": pending, "violations": violations,
                            "versions": versions, "latest": latest}
        self._made = (key, generation, html)
        return html
