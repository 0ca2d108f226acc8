"""Bearer-token auth in front of every route: an ASGI middleware, so that no route (the page
and the OpenAPI description included) can be reached without it. The token is compared in
constant time and never written anywhere. A browser signs in once with the token for a
session cookie that stands for the header (`_signin`)."""

from __future__ import annotations

import hmac
import json
import time
from typing import TYPE_CHECKING

from chainkit.serving import _signin

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

_PREFIX = b"bearer "


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


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
