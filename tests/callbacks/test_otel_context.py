"""OpenTelemetryHandler in an instrumented application: a run's span is the current span while
the run executes, so what a tool (or an instrumented client) traces nests under it, sync,
async and in the sync executor's worker threads; the caller's context comes back as it was."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="OpenTelemetry's SDK is in .[dev]")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from chainkit import agents, chains, tools
from chainkit.callbacks import OpenTelemetryHandler
from chainkit.llms import FakeLLM
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.callbacks.test_runs import Sleeper
from tests.support.modes import Mode
from tests.support.otel import exporter_and_provider
from tests.support.stub_chains import InputOutputChain


class Traced(tools.Tool):
    """Does its work in a span of its own, started with the OpenTelemetry API, as an
    instrumented HTTP or database client would."""

    description = "works in a span"

    def __init__(self, name: str, provider: TracerProvider, inner: chains.Chain | None = None):
        self.name = name
        self._tracer = trace.get_tracer("app", tracer_provider=provider)
        self._inner = inner

    def call(self, input: str) -> str:
        with self._tracer.start_as_current_span(f"app {self.name}"):
            if self._inner is not None:
                return chains.run(self._inner, input)
            return "worked"

    async def acall(self, input: str) -> str:
        with self._tracer.start_as_current_span(f"app {self.name}"):
            if self._inner is not None:
                return await chains.arun(self._inner, input)
            return "worked"


class Plain(InputOutputChain):
    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        return {"output": "inner done"}


def named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def assert_child(child: ReadableSpan, parent: ReadableSpan) -> None:
    assert child.parent is not None, f"{child.name} is a root"
    assert child.context is not None and parent.context is not None
    assert child.context.trace_id == parent.context.trace_id
    assert child.parent.span_id == parent.context.span_id, f"{child.name} not under {parent.name}"


def mrkl(provider: TracerProvider, tool: tools.Tool, **settings: Any) -> agents.Executor:
    script = [f"Action: {tool.name}\nAction Input: x", "Final Answer: ok"]
    return agents.Executor(agents.OneShotAgent(FakeLLM(script), [tool]), **settings)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("deadline", [None, 30.0], ids=["no deadline", "deadline"])
def test_a_span_a_tool_starts_is_a_child_of_the_tools_span(mode: Mode, deadline):
    exporter, provider = exporter_and_provider()
    executor = mrkl(provider, Traced("alpha", provider), max_execution_time=deadline)
    outer = trace.get_tracer("app", tracer_provider=provider)
    with outer.start_as_current_span("request") as request:
        assert mode.run(executor, "q", callbacks=OpenTelemetryHandler(provider)) == "ok"
        assert trace.get_current_span() is request  # the caller's context, as it was
    assert trace.get_current_span() is trace.INVALID_SPAN
    spans = exporter.get_finished_spans()
    [work] = named(spans, "app alpha")
    [tool] = named(spans, "execute_tool alpha")
    [root] = named(spans, "invoke_agent Executor")
    [request_span] = named(spans, "request")
    assert_child(work, tool)
    assert_child(tool, root)
    assert_child(root, request_span)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("deadline", [None, 30.0], ids=["no deadline", "deadline"])
def test_parallel_tools_in_worker_threads_each_hold_their_own_child(mode: Mode, deadline):
    exporter, provider = exporter_and_provider()
    calls = [ToolCall(f"call_{n}", FunctionCall(n, '{"input": "x"}')) for n in ("alpha", "beta")]
    llm = FakeLLM([Message.assistant("", calls), Message.assistant("ok")])
    tool_list = [Traced("alpha", provider), Traced("beta", provider)]
    executor = agents.Executor(agents.ToolCallingAgent(llm, tool_list), max_execution_time=deadline)
    assert mode.run(executor, "q", callbacks=OpenTelemetryHandler(provider)) == "ok"
    spans = exporter.get_finished_spans()
    for name in ("alpha", "beta"):
        [work] = named(spans, f"app {name}")
        [tool] = named(spans, f"execute_tool {name}")
        assert_child(work, tool)


@pytest.mark.timeout(60)
def test_a_run_started_inside_a_tools_own_span_is_that_spans_child(mode: Mode):
    exporter, provider = exporter_and_provider()
    executor = mrkl(provider, Traced("alpha", provider, inner=Plain()))
    assert mode.run(executor, "q", callbacks=OpenTelemetryHandler(provider)) == "ok"
    spans = exporter.get_finished_spans()
    [work] = named(spans, "app alpha")
    [inner] = named(spans, "chain Plain")
    assert_child(inner, work)
    assert_child(work, named(spans, "execute_tool alpha")[0])


@pytest.mark.timeout(60, method="thread")
def test_a_tool_abandoned_at_the_deadline_leaves_the_callers_context_as_it_was():
    exporter, provider = exporter_and_provider()
    stuck = Sleeper()  # returns once released
    executor = mrkl(provider, stuck, max_execution_time=0.3)
    outer = trace.get_tracer("app", tracer_provider=provider)
    try:
        with outer.start_as_current_span("request") as request:
            with pytest.raises(agents.NotFinishedError):
                chains.run(executor, "q", callbacks=OpenTelemetryHandler(provider))
            assert trace.get_current_span() is request
    finally:
        stuck.release.set()
    [tool] = named(exporter.get_finished_spans(), "execute_tool sleeper")
    assert tool.status.status_code is trace.StatusCode.ERROR
