"""A request body has a deadline: a client that sends it a byte at a time (slow-loris) is
answered 408 and its connection closed once the body is not all there within the server's
`body_timeout_seconds` of the request's start, before any run is admitted for it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from chainkit.serving._problems import Problem

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyDeadline:
    """An ASGI middleware: `receive` raises a 408 Problem when the body's next part has not
    come by the deadline. Once the body is whole, `receive` (which then waits for the client
    to disconnect, as a stream does) has no deadline."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self._seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._seconds
        whole = False

        async def timed_receive() -> Message:
            nonlocal whole
            if whole:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise _too_slow(self._seconds) from None
            whole = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        await self.app(scope, timed_receive, send)


def _too_slow(seconds: float) -> Problem:
    return Problem(
        408,
        "body_timeout",
        f"the request body did not arrive whole within {seconds:g} s",
        headers={"Connection": "close"},
    )
