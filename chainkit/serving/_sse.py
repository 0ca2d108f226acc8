"""The response of a streamed run (`POST /stream`, a streamed resume, a streamed chat
completion): its events as Server-Sent Events, written as the client reads them.

The run goes on in a task of its own and hands its events over a buffer of a few frames; the
response writes them, and a comment line (`: ping`) whenever the run has been quiet for
`keepalive_seconds`. A client that stops reading fills the buffer, so the run waits (an agent
is held before its next step, as `chains.astream` paces its reader); one that has read nothing
for `write_timeout_seconds` is given up on. A client that leaves, or is given up on, has its
run cancelled, unless it asked for a checkpointed run to go on (`detach`): then the run goes
on to its end, its events dropped, still counted as the client's until it ends.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Literal

from chainkit.serving._server import Server, Slot, disconnected, log

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

BUFFERED_FRAMES = 8
"""Events a run may have ready before it waits for the client to read."""

PING = b": ping\n\n"

Ending = Literal["finished", "left", "stalled"]


def sse(name: str, data: Mapping[str, Any]) -> bytes:
    """One Server-Sent Event: its name and its data as one line of JSON."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return f"event: {name}\ndata: {text}\n\n".encode()


class Frames:
    """The run's side of the buffer: `put` waits for room while the client reads, and drops
    the frame once the client has gone."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=BUFFERED_FRAMES)
        self.dropped = False

    async def put(self, frame: bytes) -> None:
        if not self.dropped:
            await self.queue.put(frame)

    def drop(self) -> None:
        """From now on nobody reads: frames are dropped, and a run waiting for room goes on."""
        self.dropped = True
        while not self.queue.empty():
            self.queue.get_nowait()


class EventStreamResponse:
    """An ASGI response running `run` (which puts its frames in `frames`) for the client
    holding `slot`; `cancelled` is the last event when shutdown cancels the run."""

    def __init__(
        self,
        server: Server,
        slot: Slot,
        run_id: str,
        run: Coroutine[Any, Any, None],
        frames: Frames,
        *,
        detach: bool,
        cancelled: bytes,
    ) -> None:
        self._server = server
        self._slot = slot
        self._run_id = run_id
        self._run = run
        self._frames = frames
        self._detach = detach
        self._cancelled = cancelled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        run = self._server.start(self._run)
        gone = asyncio.ensure_future(disconnected(receive))
        ending: Ending = "left"
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream; charset=utf-8"),
                        (b"cache-control", b"no-cache"),
                        (b"x-accel-buffering", b"no"),  # nginx: pass each event on at once
                        (b"x-run-id", self._run_id.encode()),
                    ],
                }
            )
            ending = await self._relay(send, run, gone)
            if ending == "finished":
                last = self._cancelled if run.cancelled() else b""
                if not await self._write(send, last, more=False):
                    ending = "stalled"
        finally:
            gone.cancel()
            await self._end(run, ending)

    async def _relay(
        self, send: Send, run: asyncio.Task[None], gone: asyncio.Future[None]
    ) -> Ending:
        """Writes the run's frames until it ends (and every frame is written), the client
        leaves, or the client reads nothing for the write timeout."""
        keepalive = self._server.settings.keepalive_seconds
        queue = self._frames.queue
        while True:
            if not queue.empty():
                frame = queue.get_nowait()
            elif run.done():
                return "finished"
            else:
                taken = asyncio.ensure_future(queue.get())
                watched: set[asyncio.Future[Any]] = {taken, run, gone}
                done, _ = await asyncio.wait(
                    watched, timeout=keepalive, return_when=asyncio.FIRST_COMPLETED
                )
                if gone in done:
                    taken.cancel()
                    return "left"
                if taken not in done:
                    taken.cancel()
                    if not done and not await self._write(send, PING):
                        return "stalled"
                    continue
                frame = taken.result()
            # Frames ready together go out in one write: a run hands over a step's events at
            # once, and each write costs the ASGI stack, h11's framing and a system call.
            while not queue.empty():
                frame += queue.get_nowait()
            if not await self._write(send, frame):
                return "stalled"

    async def _write(self, send: Send, frame: bytes, *, more: bool = True) -> bool:
        """Whether `frame` went out within the write timeout (the client reads); the last
        one (`more=False`) ends the response."""
        try:
            await asyncio.wait_for(
                send({"type": "http.response.body", "body": frame, "more_body": more}),
                self._server.settings.write_timeout_seconds,
            )
        except TimeoutError:
            return False
        return True

    async def _end(self, run: asyncio.Task[None], ending: Ending) -> None:
        if ending == "stalled":
            log.warning(
                "run %s: its client read nothing for %gs; given up",
                self._run_id,
                self._server.settings.write_timeout_seconds,
            )
        if self._detach:
            self._frames.drop()  # a run waiting for room goes on
        await self._server.let_go(run, self._slot, detach=self._detach, run_id=self._run_id)
