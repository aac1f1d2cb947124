"""The contest site's request handling: sessions, CSRF, quotas, uploads (the app: :mod:`.server`).

Who may see what is decided here, in :mod:`.access` (Starlette's authentication middleware over
these checks, ``requires`` on the routes) and in :mod:`.pages`, on the server, for every request:

- a team signs in with its token (POST body only, never a URL); the site answers with a random
  session id in a cookie (HttpOnly, SameSite=Strict, Secure behind https) and keeps the session
  server-side (:mod:`.db`, by the id's hash); scripts send ``Authorization: Bearer TOKEN``;
- every form carries a CSRF token: the session's (compared with ``hmac.compare_digest``), or,
  for the sign-in form, a double-submit cookie;
- sign-in attempts (and wrong bearer tokens) are limited per address, uploads per team per hour,
  versions in progress per team, and upload size, each refusal saying which limit and when;
- responses carry a Content-Security-Policy, ``X-Frame-Options: DENY`` and ``no-store`` caching
  (:mod:`harness.report.web`, shared with ``harness serve``).

Uploads are unpacked in the request (bounded by the caps) and built and checked by the
:class:`~harness.contest.build.BuildWorker` (a thread driving one child process per upload); the
request only waits for the unpacking.
"""

from __future__ import annotations

import hmac
import shutil
import threading
import time
from dataclasses import dataclass
from typing import Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from harness.contest.auth import TokenCache, new_csrf, new_session_id, session_key
from harness.contest.build import BuildWorker
from harness.contest.config import ContestConfig
from harness.contest.db import ContestDB
from harness.contest.ladder import LADDER_STORE
from harness.contest.ladder_reads import LadderReader
from harness.contest.notices import notices
from harness.contest.phases import upload_state
from harness.contest.redact import Redactor
from harness.contest.unpack import Caps, UnpackError, unpack_upload
from harness.report.html import ci, fmt

__all__ = ["ContestSite", "Team", "Refused", "SESSION_COOKIE", "SIGNIN_COOKIE", "refused_json"]

SESSION_COOKIE = "contest_session"
SIGNIN_COOKIE = "contest_signin"
SESSION_TTL = 7 * 24 * 3600
#: the longest a cached leaderboard is shown (its versions' ages move on)
BOARD_TTL = 5.0
#: multipart framing allowed on top of the file itself
FORM_OVERHEAD = 16 * 1024


@dataclass(frozen=True)
class Team:
    id: int
    name: str
    csrf: str | None  # None when signed in by a bearer token (no forms)


class Refused(Exception):
    """A request refused with an HTTP status and one clear line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ContestSite:
    """Everything a request needs: the config, the databases, the build worker, the templates."""

    def __init__(self, cfg: ContestConfig, *, start_worker: bool = True) -> None:
        self.cfg = cfg
        self.db = ContestDB(cfg.db_path)
        self.tokens = TokenCache(self.db)
        self.worker = BuildWorker(cfg, self.db)
        self.start_worker = start_worker
        self.ladder = LadderReader(cfg.root / LADDER_STORE, cfg.game, cfg.options)
        self.redactor = Redactor(cfg.root)
        self._board: tuple[tuple[Any, ...], float, list[dict[str, Any]], Markup] | None = None
        self._board_lock = threading.Lock()
        self.env = Environment(loader=ChoiceLoader([PackageLoader("harness.contest", "templates"),
                                                    PackageLoader("harness.report", "templates")]),
                               autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True,
                               finalize=self.redactor.finalize)  # no server path on any page

    # -- rendering ----------------------------------------------------------------------------
    def render(self, template: str, request: Request, team: Team | None, status: int = 200,
               **context: Any) -> HTMLResponse:
        league = {"name": self.cfg.name, "game": self.cfg.game, "path": "ladder.yaml"}
        context.setdefault("notices", notices(self.db, team.id if team else None))
        html = self.env.get_template(template).render(contest=self.cfg, league=league, team=team, root="/",
                                                      live=False, fmt=fmt, ci=ci, **context)
        return HTMLResponse(html, status_code=status)

    def message(self, request: Request, team: Team | None, status: int, title: str, text: str) -> HTMLResponse:
        return self.render("message.html", request, team, status=status, title=title, text=text)

    def board(self) -> tuple[list[dict[str, Any]], Markup]:
        """The leaderboard's rows and rendered table, cached until the standings change (or for
        BOARD_TTL seconds at most, for the versions' ages): ~1,000 rows are not sorted and rendered
        again for every visitor."""
        from harness.contest.ladder import leaderboard_rows

        key = self.db.board_key()
        with self._board_lock:
            cached = self._board
        if cached is not None and cached[0] == key and time.monotonic() < cached[1]:
            return cached[2], cached[3]
        rows = leaderboard_rows(self.db)
        html = Markup(self.env.get_template("leaderboard_table.html").render(rows=rows, fmt=fmt, ci=ci))
        with self._board_lock:
            self._board = (key, time.monotonic() + BOARD_TTL, rows, html)
        return rows, html

    # -- who is asking ------------------------------------------------------------------------
    def session_team(self, request: HTTPConnection) -> Team | None:
        sid = request.cookies.get(SESSION_COOKIE)
        if not sid or len(sid) > 200:
            return None
        row = self.db.session(session_key(sid))
        return Team(int(row.team_id), row.name, row.csrf) if row else None

    def bearer_team(self, request: HTTPConnection) -> Team | None:
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refused(401, "sign in: send the header 'Authorization: Bearer TOKEN' (the token from the organizer)")
        token = token.strip()
        team_id = self.tokens.cached(token)
        if team_id is None:
            # a token not verified yet is a sign-in attempt: counted (and refused past the limit)
            # before it is hashed, so a flood of wrong tokens costs one cheap write each
            self.limit_signins(request)
            team_id = self.tokens.team_of(token)
        if team_id is None:
            raise Refused(401, "this token is not valid (ask the organizer for a new one)")
        team = self.db.team(team_id)
        return Team(team_id, team.name, None) if team else None

    def limit_signins(self, request: HTTPConnection) -> None:
        address = request.client.host if request.client else "unknown"
        per_minute = self.cfg.quotas.signins_per_minute
        if not self.db.hit(f"signin:{address}", 60, per_minute):
            raise Refused(429, f"too many sign-in attempts from your address (at most {per_minute} a minute); "
                               f"wait a minute and try again")

    @staticmethod
    def check_csrf(team: Team, form: Any) -> None:
        sent = form.get("csrf")
        if not isinstance(sent, str) or not team.csrf or not hmac.compare_digest(sent, team.csrf):
            raise Refused(403, "refused: this form has no valid CSRF token (reload the page and submit it again)")

    def sign_in(self, response: Response, team_id: int) -> None:
        sid, csrf = new_session_id(), new_csrf()
        self.db.add_session(session_key(sid), team_id, csrf, SESSION_TTL)
        response.set_cookie(SESSION_COOKIE, sid, max_age=SESSION_TTL, httponly=True, samesite="strict",
                            secure=self.cfg.secure_cookies, path="/")

    # -- uploads ------------------------------------------------------------------------------
    def upload_cap(self) -> int:
        return self.cfg.quotas.upload_kb * 1024

    def check_length(self, request: Request) -> None:
        length = request.headers.get("content-length")
        if length is None or not length.isdigit():
            raise Refused(411, "an upload needs a Content-Length header")
        if int(length) > self.upload_cap() + FORM_OVERHEAD:
            raise Refused(413, f"upload too large: at most {self.cfg.quotas.upload_kb} KB (the contest's quota)")

    async def accept_upload(self, team: Team, form: Any) -> int:
        """Check, store and unpack an upload; queue its build; return its submission id."""
        state = upload_state(self.cfg, self.db)
        if not state.open:
            raise Refused(403, state.line.replace("uploads closed", "uploads are closed", 1))
        runtime_name = form.get("runtime")
        runtime = self.cfg.runtimes.get(runtime_name) if isinstance(runtime_name, str) else None
        if runtime is None:
            raise Refused(400, f"choose a runtime: one of {', '.join(self.cfg.runtimes)} (the field 'runtime')")
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise Refused(400, f"no file uploaded (the field 'file': {runtime.entry}, or a .zip or .tar.gz holding it)")
        data = await upload.read(self.upload_cap() + 1)
        if len(data) > self.upload_cap():
            raise Refused(413, f"upload too large: at most {self.cfg.quotas.upload_kb} KB (the contest's quota)")
        if not data:
            raise Refused(400, "the uploaded file is empty")
        q = self.cfg.quotas
        filename = (upload.filename or runtime.entry)[-200:]
        submission_id, why = self.db.admit_submission(team.id, runtime.name, filename, len(data),
                                                      per_hour=q.uploads_per_hour, in_progress=q.active_versions)
        if submission_id is None:
            raise Refused(429, why or "over quota")
        target = self.cfg.submissions_dir / str(submission_id)
        if target.exists():
            shutil.rmtree(target)
        caps = Caps(files=q.files, unpacked_bytes=q.unpacked_kb * 1024, ratio=q.ratio)
        try:
            await run_in_threadpool(unpack_upload, data, filename, runtime.entry, target, caps)
        except UnpackError as exc:
            self.db.forget_submission(submission_id)
            raise Refused(400, str(exc)) from None
        self.worker.submit(submission_id)
        return submission_id


def refused_json(exc: Refused) -> JSONResponse:
    return JSONResponse({"error": exc.message}, status_code=exc.status)
