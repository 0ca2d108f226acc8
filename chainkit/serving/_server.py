"""What one server process holds: the chain, its settings, and the runs in flight (counted per
client for the 429 rules, waited for and then cancelled at shutdown)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from chainkit.chains import WithHistory
from chainkit.serving._pace import ClientPace
from chainkit.serving._problems import Problem

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.types import Receive

    from chainkit.chains import Chain
    from chainkit.serving.settings import ServerSettings

log = logging.getLogger("chainkit.serving")

ANSWER_SECONDS = 5.0
"""At shutdown, once the runs left after the grace period are cancelled, how long their
requests get to send the answer that says so."""

T = TypeVar("T")


class Server:
    """The state the routes share (the app's `state.server`). `chain` is the chain requests
    run; for a chain served with a history per session (`chains.with_history`), `history` is
    its WithHistory and `chain` the chain inside."""

    def __init__(self, chain: Chain | WithHistory, settings: ServerSettings) -> None:
        self.history = chain if isinstance(chain, WithHistory) else None
        self.chain: Chain = chain.chain if isinstance(chain, WithHistory) else chain
        self.settings = settings
        self.closing = False
        self._pace = ClientPace(settings.requests_per_minute)
        self._in_flight: Counter[str] = Counter()
        self._runs: set[asyncio.Task[Any]] = set()
        self._sessions: set[str] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def admit(self, request: Request, session_id: str | None = None) -> Slot:
        """One run's place for the request's client (and its session, when it names one),
        held until released: 503 once the server is closing; 429 with Retry-After when the
        client has its limit of runs in flight, or has started its runs of the minute; 409
        while the session has a run in flight (two at once would each miss the other's
        exchange)."""
        if self.closing:
            raise Problem(503, "shutting_down", "the server is shutting down; try another")
        if session_id in self._sessions:
            raise Problem(
                409,
                "session_busy",
                f"session {session_id} has a run in flight; send its next message once that "
                "run has answered",
            )
        client = client_of(request)
        if self._in_flight[client] >= self.settings.max_runs_per_client:
            raise Problem(
                429,
                "too_many_runs",
                f"this client has {self.settings.max_runs_per_client} runs in flight already",
                headers={"Retry-After": "1"},
            )
        self._pace.start(client)
        self._in_flight[client] += 1
        self._idle.clear()
        if session_id is not None:
            self._sessions.add(session_id)
        return Slot(self, client, session_id)

    def _release(self, client: str, session_id: str | None) -> None:
        if session_id is not None:
            self._sessions.discard(session_id)
        self._in_flight[client] -= 1
        if not self._in_flight[client]:
            del self._in_flight[client]
        if not self._in_flight:
            self._idle.set()

    def start(self, run: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """`run` as a task of its own, which shutdown cancels once the grace period is over."""
        task = asyncio.ensure_future(run)
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)
        return task

    async def let_go(
        self, run: asyncio.Task[Any], slot: Slot, *, detach: bool, run_id: str
    ) -> None:
        """Once a run's request is done with it: the run cancelled (and its place given back
        when it has stopped), unless it is done already, or its client asked for it to go on
        (`detach`): then it is left to finish on its own, its place held until it does."""
        if run.done() or not detach:
            run.cancel()
            await asyncio.wait([run])
            slot.release()
            return
        log.info("run %s goes on without its client", run_id)
        run.add_done_callback(lambda _: slot.release())

    async def drain(self) -> bool:
        """Stops admitting runs, waits up to the grace period for those in flight, then
        cancels the rest and gives their requests a moment to answer; whether every run
        finished within the grace period."""
        self.closing = True
        if await self._settled(self.settings.grace_seconds):
            return True
        log.warning(
            "cancelling %d runs still in flight after %gs of grace",
            len(self._runs),
            self.settings.grace_seconds,
        )
        for task in list(self._runs):
            task.cancel()
        await self._settled(ANSWER_SECONDS)
        return False

    async def _settled(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), seconds)
        except TimeoutError:
            return False
        return True


class Slot:
    """A run's place, given back once (`release`) when its request is done with it."""

    __slots__ = ("_client", "_server", "_session_id")

    def __init__(self, server: Server, client: str, session_id: str | None) -> None:
        self._server: Server | None = server
        self._client = client
        self._session_id = session_id

    def release(self) -> None:
        if self._server is not None:
            self._server._release(self._client, self._session_id)
            self._server = None


def client_of(request: Request) -> str:
    """Who a request counts against: its address (every caller shares the one token)."""
    return request.client.host if request.client is not None else "unknown"


async def disconnected(receive: Receive) -> None:
    """Returns once the client has gone (to be called once the request's body is read)."""
    while (await receive())["type"] != "http.disconnect":
        pass
