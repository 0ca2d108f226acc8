"""Who may call: bearer-token auth in front of every route, an ASGI middleware, so that no
route (the page and the OpenAPI description included) can be reached without it. The token is
compared in constant time and never written anywhere. A browser signs in once with the token
for a session cookie that stands for the header (`_signin`). A server without a token is for
its own machine: what a browser's page of another site could make it do is refused
(`LocalOnly`)."""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import time
from typing import TYPE_CHECKING

from chainkit.serving import _signin

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

_PREFIX = b"bearer "
_HOST = re.compile(rb"(\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9.-]{1,253})(?::[0-9]{1,5})?")
"""A Host header: a name or an address (IPv6 in brackets), and a port."""


class BearerAuth:
    """Lets through the requests whose `Authorization` header is `Bearer <token>`, or which
    carry a browser's session cookie (and, to change state, the page's header); answers any
    other 401 with `WWW-Authenticate: Bearer`: a browser loading a page gets the sign-in
    form, which posts to `/login`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._allowed(scope):
            await self.app(scope, receive, send)
        elif _signin.is_sign_in(scope):
            await _signin.sign_in(scope, receive, send, self._expected)
        elif not _signin.session_allows(self._expected, scope["headers"], time.time()):
            if _signin.wants_page(scope):
                await _signin.send_form(scope, send)
            else:
                await _refuse(send, 401, "unauthorized", "a valid bearer token is required")
        elif refusal := _signin.cross_site_refusal(scope):
            await _refuse(send, 403, "cross_site", refusal)
        else:
            await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, given = value[: len(_PREFIX)], value[len(_PREFIX) :]
                # compare_digest takes as long whatever the bytes: no timing tells the token.
                return scheme.lower() == _PREFIX and hmac.compare_digest(given, self._expected)
        return False


class LocalOnly:
    """In front of a server without a token (`no_auth`), which anything on its machine may
    call, but no page a browser loaded from elsewhere: a request whose `Host` is not a
    loopback name (a site whose name was made to resolve to 127.0.0.1, DNS rebinding) is
    answered 421 `host_not_allowed`, and one that changes state from a page of another site
    (by the browser's word, `Sec-Fetch-Site`) 403 `cross_site`, unless its origin is one of
    `cors_origins`."""

    def __init__(self, app: ASGIApp, cors_origins: tuple[str, ...]) -> None:
        self.app = app
        self._origins = {origin.encode() for origin in cors_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(scope) if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await _refuse(send, *refusal)

    def _refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        headers = scope["headers"]
        if not all(_loopback_host(value) for name, value in headers if name == b"host"):
            message = "a server without a token answers to localhost or a loopback address only"
            return 421, "host_not_allowed", message
        if _signin.from_another_site(scope) and dict(headers).get(b"origin") not in self._origins:
            return 403, "cross_site", _signin.ANOTHER_SITE
        return None


def _loopback_host(host: bytes) -> bool:
    """Whether `host` (a Host header) names this machine: localhost, or a loopback address
    (a name of another site resolving to one, as DNS rebinding makes it, is still its name)."""
    found = _HOST.fullmatch(host)
    if found is None:
        return False
    name = found[1].decode("ascii").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
