"""A command-line client of a contest site's API (``harness contest submit``, ``games``,
``violations``, ``download``): a thin layer of functions over HTTP, for a team's scripts.

Standard library only (``urllib``): a participant installs nothing more than tablebots. The token
is read from a file (never the command line, where other users of the machine see it) and sent
as ``Authorization: Bearer``; errors are the site's own one-line messages.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["ClientError", "Client", "RUNTIME_BY_SUFFIX", "guess_runtime"]

#: the runtime an upload's file name suggests (a contest's own runtimes decide which exist)
RUNTIME_BY_SUFFIX = {".py": "python", ".js": "node", ".cpp": "cpp", ".cc": "cpp", ".java": "java", ".go": "go",
                     ".rs": "rust"}


class ClientError(Exception):
    """A request the site refused, or could not be made; the message is one line."""


def guess_runtime(path: Path) -> str | None:
    """The runtime a file's suffix names (``bot.py`` -> python), or None (an archive: say it)."""
    return RUNTIME_BY_SUFFIX.get(path.suffix.lower())


class Client:
    """The API of the contest at ``url`` for the team whose token is ``token``."""

    def __init__(self, url: str, token: str, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token.strip()
        self.timeout = timeout

    @classmethod
    def from_token_file(cls, url: str, token_file: str | Path) -> Client:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ClientError(f"{token_file}: cannot read the token: {exc.strerror or exc}") from None
        if not token:
            raise ClientError(f"{token_file} is empty: put your team's token in it (one line)")
        return cls(url, token)

    def _request(self, method: str, path: str, body: bytes | None = None,
                 content_type: str | None = None) -> tuple[bytes, dict[str, str]]:
        headers = {"Authorization": f"Bearer {self.token}"}
        if content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - the contest's URL
                return resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                message = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                message = raw.decode("utf-8", "replace")[:300] or exc.reason
            raise ClientError(f"{method} {path}: {exc.code}: {message}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ClientError(f"cannot reach {self.url}: {reason}") from None

    def get_json(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})
        data, _ = self._request("GET", path + (f"?{query}" if query else ""))
        return json.loads(data)

    def post_form(self, path: str, fields: dict[str, str]) -> Any:
        """POST ``fields`` (form-encoded) to ``path``; the site's JSON answer."""
        body = urllib.parse.urlencode(fields).encode()
        data, _ = self._request("POST", path, body, "application/x-www-form-urlencoded")
        return json.loads(data)

    def submit(self, file: Path, runtime: str) -> dict[str, Any]:
        """Upload ``file`` as ``runtime``; the site's answer (``{"id": ..., "status": "building"}``)."""
        try:
            content = file.read_bytes()
        except OSError as exc:
            raise ClientError(f"{file}: cannot read it: {exc.strerror or exc}") from None
        boundary = "tablebots" + secrets.token_hex(12)
        body = (f'--{boundary}\r\nContent-Disposition: form-data; name="runtime"\r\n\r\n{runtime}\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file.name}"\r\n'
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
        data, _ = self._request("POST", "/api/submissions", body, f"multipart/form-data; boundary={boundary}")
        return dict(json.loads(data))

    def wait(self, submission_id: int, seconds: float = 600.0, every: float = 2.0) -> dict[str, Any]:
        """Poll a submission until it is built and checked (or ``seconds`` pass); its last state."""
        deadline = time.monotonic() + seconds
        while True:
            state = dict(self.get_json(f"/api/submissions/{submission_id}"))
            if state["status"] not in ("building", "checking") or time.monotonic() > deadline:
                return state
            time.sleep(every)

    def download(self, path: str, out: Path) -> Path:
        """Save a download (a seat file) from ``path`` to ``out``."""
        data, _ = self._request("GET", path)
        out.write_bytes(data)
        return out
