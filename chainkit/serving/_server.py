"""What one server process holds: the chain, its settings, and the runs in flight (counted per
client for the 429 rule, waited for at shutdown)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from chainkit.serving._problems import Problem

if TYPE_CHECKING:
    from starlette.requests import Request

    from chainkit.chains import Chain
    from chainkit.serving.settings import ServerSettings

log = logging.getLogger("chainkit.serving")


class Server:
    """The state the routes share (the app's `state.server`)."""

    def __init__(self, chain: Chain, settings: ServerSettings) -> None:
        self.chain = chain
        self.settings = settings
        self.closing = False
        self._in_flight: Counter[str] = Counter()
        self._idle = asyncio.Event()
        self._idle.set()

    @asynccontextmanager
    async def admitted(self, request: Request) -> AsyncIterator[None]:
        """Holds one run's place for the request's client: 503 once the server is closing,
        429 with Retry-After when the client has its limit of runs in flight."""
        if self.closing:
            raise Problem(503, "shutting_down", "the server is shutting down; try another")
        client = client_of(request)
        if self._in_flight[client] >= self.settings.max_runs_per_client:
            raise Problem(
                429,
                "too_many_runs",
                f"this client has {self.settings.max_runs_per_client} runs in flight already",
                headers={"Retry-After": "1"},
            )
        self._in_flight[client] += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._in_flight[client] -= 1
            if not self._in_flight[client]:
                del self._in_flight[client]
            if not self._in_flight:
                self._idle.set()

    async def drained(self) -> bool:
        """Stops admitting runs and waits up to the grace period for those in flight; whether
        they all finished."""
        self.closing = True
        try:
            await asyncio.wait_for(self._idle.wait(), self.settings.grace_seconds)
        except TimeoutError:
            return False
        return True


def client_of(request: Request) -> str:
    """Who a request counts against: its address (every caller shares the one token)."""
    return request.client.host if request.client is not None else "unknown"
