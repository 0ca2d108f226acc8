"""Bearer-token auth in front of every route: an ASGI middleware, so that no route (the page
and the OpenAPI description included) can be reached without it. The token is compared in
constant time and never written anywhere."""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

_PREFIX = b"bearer "


class BearerAuth:
    """Lets through the requests whose `Authorization` header is `Bearer <token>`; answers
    any other 401 with `WWW-Authenticate: Bearer`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": {"code": "unauthorized", "message": "a valid bearer token is required"}}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _allowed(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, given = value[: len(_PREFIX)], value[len(_PREFIX) :]
                # compare_digest takes as long whatever the bytes: no timing tells the token.
                return scheme.lower() == _PREFIX and hmac.compare_digest(given, self._expected)
        return False
