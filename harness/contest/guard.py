"""What the contest site refuses before it reads: body sizes, slow clients, forged addresses.

Every request passes :class:`RequestGuard` (pure ASGI, outside every route) before any route
parses a form or hashes a token:

- **body size per route**: an upload route takes the contest's ``upload_kb`` (plus the multipart
  framing), every other route ``site.form_kb``. A ``Content-Length`` over the limit is answered
  413 at once, unread; a body without one (chunked) is counted while it streams and answered
  413 as soon as it passes the limit. Nothing past the limit is ever buffered or parsed.
- **body time**: the whole body must arrive within ``site.body_seconds`` of the request's
  headers (408), so a client trickling a byte a minute holds nothing for long.
- **the client's address**: the connection's peer, unless the peer is one of the proxies
  ``site.trusted_proxies`` names; then the rightmost ``X-Forwarded-For`` address that is not a
  trusted proxy. By default no proxy is trusted: a local client cannot pick a fresh address for
  every sign-in attempt. The sign-in limit counts per this address.

Refusals close the connection (``Connection: close``): what is left of a refused body is never read.

Half-sent request headers are the server's business, not the application's (no request exists
yet): :func:`serve` runs uvicorn with :class:`HeaderTimeoutProtocol`, which closes a connection
whose request headers are not complete ``site.header_seconds`` after it opened (or after the
previous response), answering 408 with one line, and refuses (503, one line) a connection from
an address that already holds ``site.connections_per_address`` (a trusted proxy's are not
counted), so one host cannot hold thousands of connections within that time. uvicorn's own
X-Forwarded-For handling is turned off (it trusts 127.0.0.1 by default); the guard's takes its
place.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import h11
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["SiteLimits", "parse_site", "RequestGuard", "BodyRefused", "HeaderTimeoutProtocol", "serve",
           "SITE_DEFAULTS", "UPLOAD_PATHS"]

SITE_DEFAULTS: dict[str, Any] = {
    "trusted_proxies": [],   # addresses or networks whose X-Forwarded-For is believed
    "header_seconds": 5,     # a request's headers complete within this after the connection (or last answer)
    "body_seconds": 60,      # a request's whole body within this after its headers
    "form_kb": 16,           # the body of any request but an upload
    "connections_per_address": 32,  # connections one client address may hold open at once
}
#: routes whose body is an upload: they take the contest's upload_kb
UPLOAD_PATHS = frozenset({"/me/upload", "/api/submissions"})
#: multipart framing allowed on top of the uploaded file itself
FORM_OVERHEAD = 16 * 1024

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class SiteLimits:
    """The ``site`` section of contest.yaml, checked."""

    trusted_proxies: tuple[Network, ...] = ()
    header_seconds: int = SITE_DEFAULTS["header_seconds"]
    body_seconds: int = SITE_DEFAULTS["body_seconds"]
    form_kb: int = SITE_DEFAULTS["form_kb"]
    connections_per_address: int = SITE_DEFAULTS["connections_per_address"]

    def trusts(self, host: str) -> bool:
        """Whether ``host`` (an address) is a proxy whose X-Forwarded-For is believed."""
        if not self.trusted_proxies:
            return False
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in net for net in self.trusted_proxies)


def parse_site(data: Any) -> SiteLimits:
    """Check the ``site`` mapping; a bad value raises ``ValueError((key, message))``."""
    if data is None:
        return SiteLimits()
    if not isinstance(data, dict) or any(k not in SITE_DEFAULTS for k in data):
        raise ValueError(("site", f"expected a mapping of {', '.join(SITE_DEFAULTS)}"))
    proxies = data.get("trusted_proxies", [])
    nets: list[Network] = []
    for p in proxies if isinstance(proxies, list) else [proxies]:
        try:
            if not isinstance(p, str):
                raise ValueError(p)
            nets.append(ipaddress.ip_network(p, strict=False))
        except ValueError:
            raise ValueError(("site.trusted_proxies", f"{p!r} is not an address or network (allowed: a list "
                                                      f"such as [127.0.0.1, 10.0.0.0/8, '::1'])")) from None
    numbers = {}
    for key in ("header_seconds", "body_seconds", "form_kb", "connections_per_address"):
        value = data.get(key, SITE_DEFAULTS[key])
        if type(value) is not int or value < 1:
            raise ValueError((f"site.{key}", f"{value!r} is not allowed (allowed: an integer >= 1)"))
        numbers[key] = value
    return SiteLimits(trusted_proxies=tuple(nets), **numbers)


def client_address(limits: SiteLimits, peer: str, headers: Sequence[tuple[bytes, bytes]]) -> str:
    """The address a request counts as: the peer, or what a trusted proxy says the client was."""
    if not limits.trusts(peer):
        return peer
    forwarded = [v.decode("latin-1") for k, v in headers if k == b"x-forwarded-for"]
    hops = [h.strip() for h in ",".join(forwarded).split(",") if h.strip()]
    # rightmost first: each trusted proxy appended the address it saw; the first one not trusted
    # is the client (anything left of it, the client wrote itself)
    for hop in reversed(hops):
        if not limits.trusts(hop):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # garbage from a trusted proxy's client: count it as the proxy
    return peer


class BodyRefused(Exception):
    """A request body refused while it streamed (too large, or too slow)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def _refuse(scope: Scope, send: Send, status: int, message: str) -> None:
    """Answer ``status`` with one line (as JSON ``{"error": ...}`` to the API, as the routes do) and close."""
    if scope["path"].startswith("/api/"):
        body, kind = json.dumps({"error": message}).encode(), b"application/json"
    else:
        body, kind = (message + "\n").encode("utf-8"), b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind), (b"connection", b"close"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """Body limits per route, a body deadline and the client's address, before any route runs."""

    def __init__(self, app: ASGIApp, limits: SiteLimits, upload_bytes: Callable[[], int]) -> None:
        self.app = app
        self.limits = limits
        self.upload_bytes = upload_bytes

    def body_limit(self, path: str) -> tuple[int, str]:
        """The most bytes a body to ``path`` may have, and what to call that limit."""
        if path in UPLOAD_PATHS:
            cap = self.upload_bytes()
            return cap + FORM_OVERHEAD, f"an upload is at most {cap // 1024} KB (the contest's upload_kb)"
        return self.limits.form_kb * 1024, f"a form is at most {self.limits.form_kb} KB (site.form_kb)"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        if client:
            scope["client"] = (client_address(self.limits, client[0], scope["headers"]), client[1])
        limit, what = self.body_limit(scope["path"])
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _refuse(scope, send, 413, f"request body too large: {what}; nothing of it was read")
            return
        chunked = any(k == b"transfer-encoding" for k, _ in scope["headers"])
        body = _Body(receive, limit, what, self.limits.body_seconds, done=not chunked and not int(length or 0))
        started = False

        async def send_checked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if not body.done:  # a body the page did not read is never read: close after the answer
                    message["headers"] = [*message.get("headers", []), (b"connection", b"close")]
            await send(message)

        try:
            await self.app(scope, body.receive, send_checked)
        except BodyRefused as exc:
            if started:
                raise
            await _refuse(scope, send, exc.status, exc.message)


class _Body:
    """A request's ``receive``, counting the body's bytes and holding it to its deadline."""

    def __init__(self, receive: Receive, limit: int, what: str, seconds: int, done: bool) -> None:
        self._receive = receive
        self.limit, self.what, self.seconds = limit, what, seconds
        self.deadline = asyncio.get_running_loop().time() + seconds
        self.received = 0
        #: the whole body has arrived (or there is none)
        self.done = done

    async def receive(self) -> Message:
        if self.done:  # after the body only a disconnect can come, whenever it does: no deadline
            return await self._receive()
        left = max(0.0, self.deadline - asyncio.get_running_loop().time())
        try:
            message = await asyncio.wait_for(self._receive(), left)
        except TimeoutError:
            raise BodyRefused(408, f"request body too slow: the whole body must arrive within {self.seconds} s "
                                   f"(site.body_seconds)") from None
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                raise BodyRefused(413, f"request body too large: {self.what}; the rest of it was not read")
            self.done = not message.get("more_body", False)
        return message


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers take too long, and
    refusing a client more connections at once than ``site.connections_per_address``.

    uvicorn's keep-alive timer stops at the first byte of a request, so a client sending half
    its headers would hold the connection forever: this timer runs from the connection (or the
    previous response) until a whole request head has arrived. The per-address count bounds
    what one host holds within that time (a trusted proxy's connections are not counted: it
    speaks for many clients).
    """

    limits: SiteLimits = SiteLimits()
    #: open connections per client address, over every connection of the server
    open_by_address: dict[str, int] = {}
    _header_timer: asyncio.TimerHandle | None = None
    _counted: str | None = None

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.limits.header_seconds, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = self.client[0] if self.client else None
        if peer is not None and not self.limits.trusts(peer):
            cap = self.limits.connections_per_address
            if self.open_by_address.get(peer, 0) >= cap:
                self._answer(503, "Service Unavailable", f"too many connections from your address at once "
                                                         f"(at most {cap}: site.connections_per_address)")
                return
            self.open_by_address[peer] = self.open_by_address.get(peer, 0) + 1
            self._counted = peer
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():  # refused at connection_made: nothing of it is read
            return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # a request head arrived
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._counted is not None:
            left = self.open_by_address.get(self._counted, 1) - 1
            if left > 0:
                self.open_by_address[self._counted] = left
            else:
                self.open_by_address.pop(self._counted, None)
            self._counted = None
        super().connection_lost(exc)

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        self._answer(408, "Request Timeout",
                     f"request headers not complete within {self.limits.header_seconds} s (site.header_seconds)")

    def _answer(self, status: int, reason: str, line: str) -> None:
        """Answer before any request exists (one line), and close."""
        body = (line + "\n").encode()
        self.transport.write(f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
                             f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body)
        self.transport.close()


def serve(app: ASGIApp, host: str, port: int, limits: SiteLimits) -> None:
    """Serve ``app`` with uvicorn: the header timeout and the per-address connection count on,
    uvicorn's proxy headers off (the guard's ``trusted_proxies`` decide)."""
    import uvicorn

    protocol = type("GuardedH11", (HeaderTimeoutProtocol,), {"limits": limits, "open_by_address": {}})
    uvicorn.run(app, host=host, port=port, log_level="warning", http=protocol, proxy_headers=False)
