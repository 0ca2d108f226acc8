"""Leaving a stream stops its run before the next step and ends every run it started with
`callbacks.StreamClosed`, at once even while a tool never returns; a slow reader costs the run
no deadline and its calls no latency."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from chainkit import agents, callbacks, chains, tools
from chainkit.callbacks import Event, FinalAnswerStream, StreamClosed
from chainkit.callbacks.events import EVENTS
from chainkit.llms import FakeLLM, ModelRequest
from chainkit.schema import Message
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode
from tests.support.otel import exporter_and_provider
from tests.support.stub_tools import Echo

READER_PAUSE = 0.05
"""What a reader spends on the event it stops at: room for a run that did not wait to go on."""


class NeverReturns(tools.Tool):
    """Blocks until the test releases it (or 60 s)."""

    name = "stuck"
    description = "never returns"

    def __init__(self) -> None:
        self.release = threading.Event()

    def call(self, input: str) -> str:
        self.release.wait(60)
        return "released"


def executor(tool: tools.Tool, steps: int = 5, **settings: Any) -> agents.Executor:
    replies = [f"Thought: go\nAction: {tool.name}\nAction Input: {i}" for i in range(steps)]
    llm = FakeLLM([*replies, "Thought: done\nFinal Answer: all done"], chunk_size=4)
    return agents.Executor(agents.OneShotAgent(llm, [tool]), max_iterations=steps + 1, **settings)


def read_until(mode: Mode, chain: agents.Executor, kind: str, **options: Any) -> list[Event]:
    """The events up to the first of `kind`, where the reader spends a while, then breaks out
    of its loop and drops the stream, as most readers do."""
    seen: list[Event] = []
    if not mode.is_async:
        for event in chains.stream(chain, "q", **options):
            seen.append(event)
            if event.kind == kind:
                time.sleep(READER_PAUSE)
                break
        return seen

    async def read() -> None:
        async for event in chains.astream(chain, "q", **options):
            seen.append(event)
            if event.kind == kind:
                await asyncio.sleep(READER_PAUSE)
                break
        await asyncio.sleep(READER_PAUSE)  # the dropped generator is closed by the loop

    asyncio.run(read())
    return seen


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("kind", "called"), [("agent_action", []), ("tool_end", ["0"])])
def test_breaking_out_stops_the_run_before_its_next_step(mode, kind, called):
    tool = Echo()
    read_until(mode, executor(tool), kind)
    time.sleep(READER_PAUSE)  # room for a run left going
    assert tool.inputs == called


ERROR_ARGUMENT = {
    event.method.removeprefix("handle_"): event.arguments.index("error")
    for event in EVENTS
    if event.method.endswith("_error")
}
"""Where each error event holds its error, by its name in an EventRecorder (a tool's error
has the call id after it)."""


def ends_of_every_start(recorder: EventRecorder) -> None:
    """Every run started was ended exactly once, those still open by StreamClosed."""
    runs = recorder.runs()
    started = [run.id for name, run in runs if name.endswith("_start") and run is not None]
    ended = [
        run.id
        for name, run in runs
        if name.endswith(("_end", "_error")) and run is not None and name != "agent_finish"
    ]
    assert sorted(started) == sorted(ended)
    errors = [
        event[1 + ERROR_ARGUMENT[event[0]]]
        for event in recorder.heard()
        if event[0] in ERROR_ARGUMENT
    ]
    assert errors and all(isinstance(error, StreamClosed) for error in errors)
    assert str(errors[-1]) == "the consumer closed the stream"


class HeldReply(FakeLLM):
    """Streams a final answer, then holds its reply open until the test releases it (or
    60 s): the reader of a FinalAnswerStream leaves while the model run is still going."""

    def __init__(self) -> None:
        super().__init__(["Thought: done\nFinal Answer: echo"], chunk_size=4)
        self.release = threading.Event()

    def _generate(self, request: ModelRequest) -> Message:
        reply = super()._generate(request)
        self.release.wait(60)
        return reply

    async def _agenerate(self, request: ModelRequest) -> Message:
        reply = super()._generate(request)
        for _ in range(6000):  # polled: a cancelled run leaves no thread for asyncio.run to wait on
            if self.release.is_set():
                break
            await asyncio.sleep(0.01)
        return reply


def held_executor(llm: HeldReply, tool: Echo) -> agents.Executor:
    return agents.Executor(agents.OneShotAgent(llm, [tool]))


def first_piece(mode: Mode, recorder: EventRecorder, llm: HeldReply, tool: Echo) -> str:
    """The first piece a FinalAnswerStream gives before the reader leaves it, while the
    model's reply is still open."""
    chain = held_executor(llm, tool)
    if not mode.is_async:
        for piece in FinalAnswerStream(chains.stream(chain, "q", callbacks=recorder)):
            assert isinstance(piece, str)
            return piece
        raise AssertionError("no answer")

    async def read() -> str:
        answer = FinalAnswerStream(chains.astream(chain, "q", callbacks=recorder))
        pieces = []
        async for piece in answer:
            pieces.append(piece)
            break
        await asyncio.sleep(READER_PAUSE)  # the loop closes the iteration left
        return str(pieces[0])

    return asyncio.run(read())


@pytest.mark.timeout(60)
def test_leaving_a_final_answer_stream_ends_its_run(mode):
    recorder, tool, llm = EventRecorder(), Echo(), HeldReply()
    try:
        assert first_piece(mode, recorder, llm, tool) == "echo"
        ends_of_every_start(recorder)  # the model's run too, while its reply is held open
    finally:
        llm.release.set()


@pytest.mark.timeout(60)
def test_a_final_answer_stream_closes_as_a_context_manager():
    recorder, tool, llm = EventRecorder(), Echo(), HeldReply()
    try:
        events = chains.stream(held_executor(llm, tool), "q", callbacks=recorder)
        with FinalAnswerStream(events) as answer:
            assert next(iter(answer)) == "echo"
        ends_of_every_start(recorder)
    finally:
        llm.release.set()

    async def read() -> None:
        events = chains.astream(held_executor(llm, tool), "q", callbacks=recorder)
        async with FinalAnswerStream(events) as answer:
            assert await anext(aiter(answer)) == "echo"

    recorder, tool, llm = EventRecorder(), Echo(), HeldReply()
    try:
        asyncio.run(read())
        ends_of_every_start(recorder)
    finally:
        llm.release.set()


@pytest.mark.timeout(60)
def test_a_stream_closes_as_a_context_manager(mode):
    recorder, tool = EventRecorder(), Echo()
    if not mode.is_async:
        with chains.stream(executor(tool), "q", callbacks=recorder) as events:
            assert next(events).kind == "chain_start"
    else:

        async def read() -> None:
            async with chains.astream(executor(tool), "q", callbacks=recorder) as events:
                assert (await anext(events)).kind == "chain_start"

        asyncio.run(read())
    ends_of_every_start(recorder)
    assert tool.inputs == []


@pytest.mark.timeout(60)
def test_a_dropped_stream_ends_its_run():
    recorder, tool = EventRecorder(), Echo()
    stream = chains.stream(executor(tool), "q", callbacks=recorder)
    next(stream)
    del stream
    gc.collect()
    ends_of_every_start(recorder)
    assert tool.inputs == []


def closing_returns(close: Callable[[], object]) -> None:
    """`close()` returns within a bound ten times what it needs."""
    done = threading.Event()

    def close_then_tell() -> None:
        close()
        done.set()

    threading.Thread(target=close_then_tell, daemon=True).start()
    assert done.wait(10), "closing the stream did not return"


@pytest.mark.timeout(60)
def test_leaving_a_sync_stream_returns_while_its_tool_never_does():
    recorder, tool = EventRecorder(), NeverReturns()
    try:
        stream = chains.stream(executor(tool), "q", callbacks=recorder)
        for event in stream:
            if event.kind == "tool_start":
                break
        closing_returns(stream.close)
        ends_of_every_start(recorder)
        assert [name for name, *_ in recorder.heard("tool_error", "chain_error")] == [
            "tool_error",
            "chain_error",
        ]
    finally:
        tool.release.set()
    time.sleep(READER_PAUSE)  # the abandoned tool returns: nothing more is heard
    ends_of_every_start(recorder)


@pytest.mark.timeout(60)
def test_a_closed_stream_is_no_error_to_opentelemetry(mode):
    exporter, provider = exporter_and_provider()
    from opentelemetry.trace import StatusCode

    handler = callbacks.OpenTelemetryHandler(tracer_provider=provider)
    seen = read_until(mode, executor(Echo()), "tool_end", callbacks=handler)
    spans = exporter.get_finished_spans()
    # Every run started has its span ended: the executor, one model call, one tool call.
    assert len(spans) == len([event for event in seen if event.kind.endswith("_start")]) == 3
    assert {span.name for span in spans} >= {"invoke_agent Executor", "execute_tool echo"}
    cancelled = [(span.name, (span.attributes or {}).get("chainkit.cancelled")) for span in spans]
    assert [(name, why) for name, why in cancelled if why is not None] == [
        ("invoke_agent Executor", "the consumer closed the stream")
    ]
    assert all(span.status.status_code is not StatusCode.ERROR for span in spans)
    assert not any("error.type" in (span.attributes or {}) for span in spans)


SLOW_READER = 0.03
"""Seconds a slow reader spends on each event."""


def read_slowly(mode: Mode, chain: agents.Executor) -> list[Event]:
    if not mode.is_async:
        events = []
        for event in chains.stream(chain, "q"):
            events.append(event)
            time.sleep(SLOW_READER)
        return events

    async def read() -> list[Event]:
        events = []
        async for event in chains.astream(chain, "q"):
            events.append(event)
            await asyncio.sleep(SLOW_READER)
        return events

    return asyncio.run(read())


@pytest.mark.timeout(60)
def test_a_slow_reader_costs_the_run_no_deadline_and_its_calls_no_latency(mode):
    # The run needs a few ms; its reader spends about 40 events x 30 ms, over twice the limit.
    chain = executor(Echo(), steps=2, max_execution_time=0.5)
    events = read_slowly(mode, chain)
    assert events[-1].kind == "chain_end"
    assert events[-1].data["outputs"] == {"output": "all done"}
    assert len(events) * SLOW_READER > 1.0
    starts = {e.run_id: e.time for e in events if e.kind in ("llm_start", "tool_start")}
    ends = {e.run_id: e.time for e in events if e.kind in ("llm_end", "tool_end")}
    assert len(starts) == 5 and ends.keys() == starts.keys()
    # Each call spans at least 4 events when it is charged for its reader: 120 ms.
    assert all(ends[run] - starts[run] < 4 * SLOW_READER for run in starts)
