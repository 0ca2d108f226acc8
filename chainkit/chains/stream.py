"""stream and astream: run a chain and yield its events as they happen.

The chain runs beside the consumer (a worker thread, or an asyncio task) and hands each event
over a queue. A consumer that stops early stops the run: the task is cancelled, and the
worker thread is stopped at its next event, so no model or tool call is left running.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from typing import Any, Unpack

from chainkit._threads import submit
from chainkit.callbacks.events import ERROR_KINDS, Event, EventHandler
from chainkit.callbacks.run import streaming_tokens
from chainkit.chains.api import _single_input, acall, call
from chainkit.chains.chain import Chain
from chainkit.llms.options import CallOptions


class _StreamClosed(BaseException):
    """Raised inside a run whose stream's consumer stopped reading. A BaseException, so that
    no `except Exception` on the way (a tool's error handling, a retry) takes it for a
    failure to handle."""


class _Relay(EventHandler):
    """Hands each event to `put`; once `closed`, stops the run at its next event."""

    def __init__(self, put: Callable[[Event], None]) -> None:
        self._put = put
        self.closed = False

    def on_event(self, event: Event) -> None:
        if not self.closed:
            self._put(event)
        # Checked again after `put`, which may have waited for the consumer, who then left.
        if self.closed and event.kind not in ERROR_KINDS:
            # An error event is the report of a run being stopped: it goes on unheard.
            raise _StreamClosed


def _prepared(
    chain: Chain, inputs: Mapping[str, Any] | str, options: CallOptions, relay: _Relay
) -> tuple[Any, dict[str, Any]]:
    given: dict[str, Any] = dict(options)
    given["callbacks"] = [given.get("callbacks"), relay]
    return (_single_input(chain, inputs) if isinstance(inputs, str) else inputs), given


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
    chain: Chain, inputs: Mapping[str, Any] | str, **options: Unpack[CallOptions]
) -> Generator[Event, None, None]:
    """Runs `chain` on `inputs` (a str for a chain of one input, as `chains.run` takes) and
    yields its events as they happen.

    The run starts at the first `next()`. The last event of a successful run is the root's
    chain_end, whose `data["outputs"]` are the outputs; a failed run yields the root's
    chain_error, then raises the error. Leaving the iteration early (break, `close()`) stops
    the run at its next event and waits for it to end.

    The run is never more than one event ahead of the consumer: the queue between them holds
    one event, so a consumer that stops reading also stops the run before its next step.
    """
    events: queue.Queue[Event | None] = queue.Queue(maxsize=1)
    relay = _Relay(events.put)
    call_inputs, call_options = _prepared(chain, inputs, options, relay)
    future = submit(_streamed, chain, call_inputs, call_options)
    future.add_done_callback(lambda _: events.put(None))
    finished = False
    try:
        while (event := events.get()) is not None:
            yield event
        finished = True
    finally:
        if not finished:
            relay.closed = True
            while events.get() is not None:
                pass
    future.result()


async def astream(
    chain: Chain, inputs: Mapping[str, Any] | str, **options: Unpack[CallOptions]
) -> AsyncGenerator[Event, None]:
    """Async twin of `stream`: the chain runs as a task, cancelled when the consumer stops
    early (`aclose()`, a break followed by the generator's finalization, or cancellation)."""
    import asyncio  # loaded already by the running event loop, not at import

    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Event | None] = asyncio.Queue()
    loop_thread = threading.get_ident()

    def put(event: Event) -> None:
        if threading.get_ident() == loop_thread:
            events.put_nowait(event)
        else:  # from a thread the run started: the queue belongs to the loop
            loop.call_soon_threadsafe(events.put_nowait, event)

    relay = _Relay(put)
    call_inputs, call_options = _prepared(chain, inputs, options, relay)
    task = asyncio.ensure_future(_astreamed(chain, call_inputs, call_options))
    task.add_done_callback(lambda _: events.put_nowait(None))
    finished = False
    try:
        while (event := await events.get()) is not None:
            yield event
        finished = True
    finally:
        if not finished:
            relay.closed = True
            task.cancel()
            # wait, not await: the run's CancelledError is not the consumer's to raise.
            await asyncio.wait([task])
    task.result()
