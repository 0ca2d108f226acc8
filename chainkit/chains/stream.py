"""stream and astream: run a chain and yield its events as they happen.

The chain runs beside the reader (a worker thread, or an asyncio task). Its events are
handed over in batches, with no wait, so a slow reader slows no model or tool call; between
its steps an agent waits until the reader has taken every event and asks for more (the
relay is its `Pacer`), so a reader that stops reading stops the run before its next step.

Closing a stream (break, `close()`, garbage collection, cancellation) abandons the run as a
deadline abandons a step (`callbacks.step_events`): each run still open ends at once with
`callbacks.StreamClosed`, and the run is stopped at its next event or step, so closing
returns at once even while a tool that never returns is in progress.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
    Mapping,
)
from typing import TYPE_CHECKING, Any, Unpack

from chainkit._threads import submit
from chainkit.callbacks import Handlers, StreamClosed
from chainkit.callbacks.combining import guard
from chainkit.callbacks.events import Event, EventHandler
from chainkit.callbacks.pacing import Pacer
from chainkit.callbacks.run import streaming_tokens
from chainkit.callbacks.step_events import StepEvents
from chainkit.chains.api import (
    _single_input,
    acall,
    aresume,
    call,
    check_chain,
    inputs_not_given,
)
from chainkit.chains.chain import Chain
from chainkit.llms.options import CallOptions

if TYPE_CHECKING:
    import asyncio


class _ThreadRelay(EventHandler, Pacer):
    """Hands the events of a run in a worker thread to the reader of its stream."""

    def __init__(self) -> None:
        self._events: deque[Event] = deque()
        self._changed = threading.Condition()
        self._reader_waiting = False  # for an event, having taken every one before
        self.closed = False
        self.finished = False

    def on_event(self, event: Event) -> None:
        with self._changed:
            self._events.append(event)
            if self._reader_waiting:
                self._changed.notify_all()

    def _caught_up(self) -> bool:
        return self.closed or (self._reader_waiting and not self._events)

    def pause(self) -> float:
        with self._changed:
            waited = 0.0
            if not self._caught_up():
                started = time.monotonic()
                self._changed.wait_for(self._caught_up)
                waited = time.monotonic() - started
            if self.closed:
                raise StreamClosed
        return waited

    async def apause(self) -> float:
        return self.pause()  # a run of a sync stream awaits only inside a thread of its own

    def end(self, closed: bool) -> None:
        """The run finished, or its reader closed the stream."""
        with self._changed:
            self.closed = self.closed or closed
            self.finished = True
            self._changed.notify_all()

    def taken(self) -> list[Event]:
        """Every event not yet taken, waiting for one; none once the run has finished."""
        with self._changed:
            if not self._events:
                self._reader_waiting = True
                self._changed.notify_all()  # a run waiting in `pause` goes on
                self._changed.wait_for(lambda: self._events or self.finished)
                self._reader_waiting = False
            taken = list(self._events)
            self._events.clear()
            return taken


class _LoopRelay(EventHandler, Pacer):
    """Hands the events of a run in an asyncio task to the reader of its stream, on the same
    loop; events from the run's threads are passed to the loop first."""

    def __init__(self) -> None:
        self._events: deque[Event] = deque()
        self._reader: asyncio.Future[None] | None = None  # the reader waiting, having taken all
        self._paused: asyncio.Future[None] | None = None  # the run waiting for the reader
        self.closed = False
        self.finished = False

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Runs on `loop`, in the calling thread."""
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def on_event(self, event: Event) -> None:
        if threading.get_ident() == self._loop_thread:
            self._put(event)
        else:
            self._loop.call_soon_threadsafe(self._put, event)

    def _put(self, event: Event) -> None:
        self._events.append(event)
        _resolve(self._reader)

    def end(self, closed: bool) -> None:
        self.closed = self.closed or closed
        self.finished = True
        _resolve(self._reader)
        _resolve(self._paused)

    async def apause(self) -> float:
        waited = 0.0
        if not self.closed and (self._reader is None or self._events):
            started = time.monotonic()
            self._paused = self._loop.create_future()
            await self._paused
            waited = time.monotonic() - started
        if self.closed:
            raise StreamClosed
        return waited

    def pause(self) -> float:
        if self.closed:  # the loop may be gone: nothing to wait for
            raise StreamClosed
        if threading.get_ident() == self._loop_thread:
            return 0.0  # sync code blocking the loop: the reader cannot read meanwhile
        import asyncio  # loaded already by the running event loop, not at import

        return asyncio.run_coroutine_threadsafe(self.apause(), self._loop).result()

    async def taken(self) -> list[Event]:
        while not self._events and not self.finished:
            self._reader = self._loop.create_future()
            _resolve(self._paused)  # the run goes on
            try:
                await self._reader
            finally:
                self._reader = None
        taken = list(self._events)
        self._events.clear()
        return taken


class EventStream(Iterator[Event]):
    """The events `chains.stream` yields: iterate it, and close it (`close()`, or leave a
    `with` block) to stop its run early; dropping it unfinished closes it too."""

    __slots__ = ("_events",)

    def __init__(self, events: Generator[Event, None, None]) -> None:
        self._events = events

    def __iter__(self) -> Iterator[Event]:
        return self._events  # a `for` loop reads the generator itself: nothing added per event

    def __next__(self) -> Event:
        return next(self._events)

    def close(self) -> None:
        """Stops the run, if it is still going: see `chains.stream`."""
        self._events.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncEventStream(AsyncIterator[Event]):
    """The events `chains.astream` yields: iterate it with `async for`, and close it
    (`aclose()`, or leave an `async with` block) to stop its run early."""

    __slots__ = ("_events",)

    def __init__(self, events: AsyncGenerator[Event, None]) -> None:
        self._events = events

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events

    async def __anext__(self) -> Event:
        return await anext(self._events)

    async def aclose(self) -> None:
        """Stops the run, if it is still going: see `chains.astream`."""
        await self._events.aclose()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _resolve(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


def _prepared(
    function: str,
    chain: Chain,
    inputs: Mapping[str, Any] | str | None,
    options: CallOptions,
    relay: EventHandler,
) -> tuple[StepEvents, Mapping[str, Any], dict[str, Any]]:
    """The handlers of the stream's run, which closing it abandons (the `callbacks` given and
    the relay), and the inputs and options to call the chain with; checks the chain and the
    handlers before any work."""
    check_chain(function, chain)
    if inputs is None:
        raise inputs_not_given(function, options)
    given: dict[str, Any] = dict(options)
    watched = StepEvents(guard(given.get("callbacks"), relay), stop_with=StreamClosed)
    given["callbacks"] = watched
    call_inputs = _single_input(chain, inputs) if isinstance(inputs, str) else inputs
    return watched, call_inputs, given


def _streamed(chain: Chain, inputs: Mapping[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """`call`, every model inside streaming its tokens as events: the wish is carried in the
    context, so the agents a tool runs, and the threads that carry the context, stream too."""
    with streaming_tokens():
        return call(chain, inputs, **options)


async def _astreamed(
    chain: Chain, inputs: Mapping[str, Any], options: dict[str, Any]
) -> dict[str, Any]:
    """Async twin of `_streamed`."""
    with streaming_tokens():
        return await acall(chain, inputs, **options)


def stream(
    chain: Chain, inputs: Mapping[str, Any] | str | None = None, **options: Unpack[CallOptions]
) -> EventStream:
    """Runs `chain` on `inputs` (a str for a chain of one input, as `chains.run` takes) and
    yields its events as they happen.

    The run starts at the first `next()`; close the stream (`close()`, a `with` block) to stop
    it early. The last event of a successful run is the root's
    chain_end, whose `data["outputs"]` are the outputs; a failed run yields the root's
    chain_error, then raises the error. An agent takes no step before the reader has taken
    every event so far and asks for the next. Leaving the iteration early (break, `close()`,
    dropping the generator) ends each run still open with `callbacks.StreamClosed` and
    returns at once; the run stops at its next event or step.
    """
    relay = _ThreadRelay()
    watched, call_inputs, call_options = _prepared("stream", chain, inputs, options, relay)
    return EventStream(
        _thread_events(relay, watched, lambda: _streamed(chain, call_inputs, call_options))
    )


def _thread_events(
    relay: _ThreadRelay, watched: StepEvents, run: Callable[[], dict[str, Any]]
) -> Generator[Event, None, None]:
    future = submit(run)
    future.add_done_callback(lambda _: relay.end(closed=False))
    finished = False
    try:
        while taken := relay.taken():
            yield from taken
        finished = True
    finally:
        if not finished:
            watched.abandon(StreamClosed())
            relay.end(closed=True)
    future.result()


def astream(
    chain: Chain, inputs: Mapping[str, Any] | str | None = None, **options: Unpack[CallOptions]
) -> AsyncEventStream:
    """Async twin of `stream`: the chain runs as a task, cancelled when the reader stops
    early (`aclose()`, a break followed by the generator's finalization, or cancellation)."""
    relay = _LoopRelay()
    watched, call_inputs, call_options = _prepared("astream", chain, inputs, options, relay)
    return AsyncEventStream(
        _task_events(relay, watched, lambda: _astreamed(chain, call_inputs, call_options))
    )


def astream_resumed(
    chain: Chain,
    state_or_run_id: object,
    decisions: object = None,
    *,
    interrupted: str = "raise",
    callbacks: Handlers = None,
) -> AsyncEventStream:
    """`astream`'s twin for `chains.aresume`: the events of the resumed run as they happen
    (a refusal to resume, such as `checkpoints.RunLockedError`, raised by the stream)."""
    check_chain("aresume", chain)
    relay = _LoopRelay()
    watched = StepEvents(guard(callbacks, relay), stop_with=StreamClosed)

    async def resumed() -> dict[str, Any]:
        with streaming_tokens():
            return await aresume(
                chain, state_or_run_id, decisions, interrupted=interrupted, callbacks=watched
            )

    return AsyncEventStream(_task_events(relay, watched, resumed))


async def _task_events(
    relay: _LoopRelay, watched: StepEvents, run: Callable[[], Awaitable[dict[str, Any]]]
) -> AsyncGenerator[Event, None]:
    import asyncio  # loaded already by the running event loop, not at import

    relay.bind(asyncio.get_running_loop())
    task = asyncio.ensure_future(run())
    task.add_done_callback(lambda _: relay.end(closed=False))
    finished = False
    try:
        while taken := await relay.taken():
            for event in taken:
                yield event
        finished = True
    finally:
        if not finished:
            watched.abandon(StreamClosed())
            relay.end(closed=True)
            task.cancel()
            # wait, not await: the run's cancellation is not the reader's to raise.
            await asyncio.wait([task])
    task.result()
