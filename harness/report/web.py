"""The security headers of every page the harness serves: ``harness serve``'s league pages and the
contest site (:mod:`harness.contest.server`), one definition for both.

- ``Content-Security-Policy``: scripts, styles and images from the site itself (the pages'
  own inline scripts and styles included), no framing, forms only to the site, no base URL;
- ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``;
- ``Cache-Control: no-store``: the pages change as games are played, and show what is private.

A header a response sets itself is kept, not doubled.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CSP", "SECURITY_HEADERS", "SecurityHeaders"]

CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")

#: (name, value) of each header added to every response, names in lower case (as ASGI has them)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()), (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store"))


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response (pure ASGI: no buffering of bodies)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                headers.extend((name, value) for name, value in SECURITY_HEADERS if name not in names)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)
