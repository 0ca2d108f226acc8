"""A model call through a response cache: a hit is an llm run like any other, and concurrent
identical calls make one model call.

The run's start is reported as for any call; a hit then streams the cached text (in the pieces
it first streamed in, else word by word) to the call's streaming function and the token
events, and ends the run with the reply marked `response_meta.cached`, so that traces, logs
and `UsageTotals` tell it from a paid reply.

Calls with the same key on the same cache at the same time form a flight: the first (the
leader) looks the key up and, on a miss, calls the model; the others wait for its outcome and
take its reply as a hit. When the leader's call fails with a `ModelError`, each waiter raises
that error too (a copy): the identical request would fail the same way, and N callers retrying
one after the other would make N failing calls. When the leader gives up for a reason of its
own (cancelled, interrupted, its streaming function raised), the waiters try again, one of
them leading.

A cache that fails to keep a reply (a full disk, a database out of reach) is logged as a
warning and the call returns the reply it paid for; a cache that fails to look a key up fails
the call, before anything was paid.

What is never kept: an error (nothing to keep), a refusal (`extra["refusal"]`), a reply the
server cut short for its content (finish_reason "content_filter"), and an empty reply (no
text, parts nor tool calls: a server's glitch more often than an answer). A stream cut short
is an error of the backend.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from chainkit.callbacks import Handler
from chainkit.callbacks.combining import CombiningHandler, join
from chainkit.callbacks.run import Run, tokens_wanted
from chainkit.llms.cache import CachedReply, ResponseCache
from chainkit.llms.errors import ModelError
from chainkit.llms.options import StreamingFunc
from chainkit.schema import Message
from chainkit.schema.message import ResponseMeta

if TYPE_CHECKING:
    import asyncio

logger = logging.getLogger("chainkit")
_WORDS = re.compile(r"\s*+\S++|\s++")
"""A text's pieces when it was not streamed: each word with the space before it."""
_WAITED_NOTE = "raised by an identical call made at the same time, whose reply this call waited for"


class Streamed(Protocol):
    """The call's request, as far as this module reads it: where its text streams to."""

    streaming_func: StreamingFunc | None


Start = Callable[[CombiningHandler], None]
"""Reports the run's start to a handler and makes the request stream to it too."""


def generate(
    cache: ResponseCache,
    key: str,
    run: Run,
    request: Streamed,
    start: Start,
    reply: Callable[[], Message],
) -> Message:
    """The reply to a call with `key`: from `cache`, from an identical call made at the same
    time, or from `reply()` (the backend), kept in `cache` when it may be."""
    steps = _steps(cache, key, run, request, _listen(run, request, start))
    sent: Any = None
    error: BaseException | None = None
    while True:
        try:
            step, argument = steps.send(sent) if error is None else steps.throw(error)
        except StopIteration as done:
            reply_message: Message = done.value
            return reply_message
        try:
            error = None
            if step is _GET:
                sent = cache.get(key)
            elif step is _WAIT:
                sent = argument.wait()
            elif step is _REPLY:
                sent = reply()
            else:
                cache.put(key, argument)
                sent = None
        except BaseException as failed:
            sent, error = None, failed


async def agenerate(
    cache: ResponseCache,
    key: str,
    run: Run,
    request: Streamed,
    start: Start,
    reply: Callable[[], Awaitable[Message]],
) -> Message:
    """Async twin of `generate`: the same steps, awaited."""
    steps = _steps(cache, key, run, request, _listen(run, request, start))
    sent: Any = None
    error: BaseException | None = None
    while True:
        try:
            step, argument = steps.send(sent) if error is None else steps.throw(error)
        except StopIteration as done:
            reply_message: Message = done.value
            return reply_message
        try:
            error = None
            if step is _GET:
                sent = await cache.aget(key)
            elif step is _WAIT:
                sent = await argument.await_outcome()
            elif step is _REPLY:
                sent = await reply()
            else:
                await cache.aput(key, argument)
                sent = None
        except BaseException as failed:
            sent, error = None, failed


_GET, _WAIT, _REPLY, _PUT = "get", "wait", "reply", "put"
"""What a step asks its driver for: the cache's entry for the key, the outcome of the flight
it waits on, the backend's reply, the entry kept."""
Steps = Generator[tuple[str, Any], Any, Message]


def _steps(
    cache: ResponseCache, key: str, run: Run, request: Streamed, recorder: _Recorder | None
) -> Steps:
    """A call through the cache, as steps a driver performs (`generate` does them, and
    `agenerate` awaits them), so that the logic is written once: join the key's flight and
    wait for its leader, or lead it (look the key up; on a miss, ask the backend and keep the
    reply), then end the run."""
    while True:
        flight, leading = _flights.join(cache, key)
        if leading:
            break
        shared = yield _WAIT, flight
        if shared is _ALONE:
            flight = _Flight()  # one no other call joins
            break
        if shared is not None:
            return _hit(run, request, shared.copy())
    try:
        found: CachedReply | None = yield _GET, None
        fresh: Message | None = (yield _REPLY, None) if found is None else None
    except BaseException as error:
        flight.fail(error)
        raise
    if found is not None:
        flight.finish(found)
        return _hit(run, request, found)
    assert fresh is not None
    entry = CachedReply(fresh, _pieces(recorder, fresh))
    try:
        if keepable(fresh):
            yield _PUT, entry
    except Exception as error:
        _not_kept(cache, error)
    finally:
        flight.finish(entry)
    if run.handler is not None:
        run.end(fresh)
    return fresh


def _not_kept(cache: ResponseCache, error: Exception) -> None:
    """Logs a cache's failure to keep a reply: the reply was paid for, so the call returns it
    all the same; only later calls miss it."""
    logger.warning("%r could not keep a reply: %s: %s", cache, type(error).__name__, error)


def keepable(reply: Message) -> bool:
    """Whether `reply` may be kept: not a refusal, not cut for its content, not empty."""
    if reply.extra and "refusal" in reply.extra:
        return False
    meta = reply.response_meta
    if meta is not None and meta.finish_reason == "content_filter":
        return False
    return bool(reply.content or reply.parts or reply.tool_calls)


class _Recorder(Handler):
    """Hears the pieces a call's reply streams in; a retried attempt streams it over."""

    def __init__(self) -> None:
        self.pieces: list[str] = []

    def handle_streaming_func(self, chunk: str) -> None:
        self.pieces.append(chunk)

    def handle_retry(
        self, attempt: int, error: BaseException, wait_seconds: float, discarded: str
    ) -> None:
        self.pieces = []


def _listen(run: Run, request: Streamed, start: Start) -> _Recorder | None:
    """Reports the run's start; when the call streams, records its pieces too (returned)."""
    streams = request.streaming_func is not None or tokens_wanted()
    recorder = _Recorder() if streams else None
    handler = run.handler
    if recorder is not None:
        handler = join(handler, CombiningHandler([recorder]))
    if handler is not None:
        start(handler)
    return recorder


def _pieces(recorder: _Recorder | None, reply: Message) -> tuple[str, ...] | None:
    """The pieces `reply`'s text streamed in, when they make up that text."""
    if recorder is None or "".join(recorder.pieces) != reply.content:
        return None
    return tuple(recorder.pieces)


def _hit(run: Run, request: Streamed, entry: CachedReply) -> Message:
    """Ends the run with `entry`'s reply (which the caller owns), marked cached, after streaming
    its text when the call streams."""
    message = entry.message
    meta = message.response_meta
    message.response_meta = (
        ResponseMeta(cached=True) if meta is None else replace(meta, cached=True)
    )
    stream = request.streaming_func
    if stream is not None and message.content:
        for piece in entry.pieces or _WORDS.findall(message.content):
            stream(piece)
    if run.handler is not None:
        run.end(message)
    return message


class _Shared:
    """The reply a flight's leader got, as data, for each waiter to build its own copy of."""

    __slots__ = ("data", "pieces")

    def __init__(self, entry: CachedReply) -> None:
        self.data = entry.message.to_dict()
        self.pieces = entry.pieces

    def copy(self) -> CachedReply:
        return CachedReply(Message.from_dict(self.data), self.pieces)


_GAVE_UP = object()
"""The outcome of a flight whose leader gave up for a reason of its own."""
_ALONE = object()
"""What a sync call gets instead of waiting for a leader in its own thread (an async call on
the event loop it would block, or its own streaming function calling again): the leader
could never go on, so the call is made on its own."""


class _Flight:
    """Identical calls in progress: the leader's, and those waiting for its outcome."""

    __slots__ = ("_done", "_futures", "_outcome", "leader_thread", "waiters")

    def __init__(self) -> None:
        self.leader_thread = threading.get_ident()
        self.waiters = 0
        """How many calls have joined it to wait."""
        self._done: threading.Event | None = None  # made for the first waiter: most have none
        self._futures: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = []
        self._outcome: object = None

    def wait(self) -> object:
        """The leader's reply; None when it gave up, `_ALONE` when it runs in this thread;
        raises its model error."""
        if self.leader_thread == threading.get_ident():
            return _ALONE
        assert self._done is not None  # made when this caller joined
        self._done.wait()
        return _taken(self._outcome)

    async def await_outcome(self) -> _Shared | None:
        import asyncio  # loaded by then: this runs in an event loop

        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with _flights.lock:
            if self._outcome is None:
                self._futures.append((loop, future))
            else:
                future.set_result(self._outcome)
        return _taken(await future)

    def finish(self, entry: CachedReply) -> None:
        self._settle(entry)

    def fail(self, error: BaseException) -> None:
        self._settle(error if isinstance(error, ModelError) else _GAVE_UP)

    def _settle(self, outcome: object) -> None:
        with _flights.lock:
            _flights.remove(self)  # no one joins from now on
            if not self.waiters:
                return
            if isinstance(outcome, CachedReply):
                outcome = _Shared(outcome)  # before the leader's caller may change it
            self._outcome = outcome
            futures, self._futures = self._futures, []
        assert self._done is not None
        self._done.set()
        for loop, future in futures:
            # A loop closed meanwhile has no one waiting there any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, future, outcome)


def _resolve(future: asyncio.Future[Any], outcome: object) -> None:
    if not future.done():  # a waiter cancelled meanwhile
        future.set_result(outcome)


def _taken(outcome: object) -> _Shared | None:
    if isinstance(outcome, _Shared):
        return outcome
    if isinstance(outcome, ModelError):
        twin = copy.copy(outcome)
        twin.__notes__ = [*getattr(outcome, "__notes__", ()), _WAITED_NOTE]
        raise twin
    return None


class _Flights:
    """The flights in progress, by cache and key."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._by_key: dict[tuple[int, str], _Flight] = {}
        self._keys: dict[_Flight, tuple[int, str]] = {}

    def join(self, cache: ResponseCache, key: str) -> tuple[_Flight, bool]:
        """The flight of `key` on `cache`, and whether the caller leads it (it was not flying)."""
        where = (id(cache), key)
        with self.lock:
            flight = self._by_key.get(where)
            if flight is not None:
                flight.waiters += 1
                if flight._done is None:
                    flight._done = threading.Event()
                return flight, False
            flight = self._by_key[where] = _Flight()
            self._keys[flight] = where
            return flight, True

    def remove(self, flight: _Flight) -> None:
        """Ends `flight` (the lock held): the next call with its key starts another."""
        where = self._keys.pop(flight, None)
        if where is not None:
            del self._by_key[where]


_flights = _Flights()
