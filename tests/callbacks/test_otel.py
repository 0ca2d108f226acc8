"""OpenTelemetryHandler: a span per run, parented by run, GenAI attributes, content on opt-in."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="OpenTelemetry's SDK is in .[dev]")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from chainkit import agents, callbacks, chains, tools
from chainkit.callbacks import OpenTelemetryHandler
from chainkit.llms import FakeLLM, InMemoryCache, OpenAI
from chainkit.llms.errors import ModelError
from chainkit.schema import Message, TokenUsage
from chainkit.schema.message import ResponseMeta
from tests.callbacks.test_runs import Broken, executor_and_tools
from tests.support.openai_server import Fault, OpenAIServer, Reply
from tests.support.otel import exporter_and_provider
from tests.support.retried_stream import (
    ANSWER,
    STREAMED_BEFORE_THE_BREAK,
    break_then_answer,
    mrkl_executor,
)
from tests.support.stub_chains import InputOutputChain

KEY = "sk-abcdefghijklmnopqrstuvwxyz123456"
CONTENT = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "chainkit.chain.inputs",
    "chainkit.chain.outputs",
    "chainkit.retriever.query",
    "gen_ai.retrieval.query.text",
    "chainkit.retriever.documents",
}


def by_parent(spans: tuple[ReadableSpan, ...]) -> dict[int | None, list[ReadableSpan]]:
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)
    return children


def run_abatch(handler: OpenTelemetryHandler) -> None:
    executor, _ = executor_and_tools(parties=6)  # the six tool calls of three items at once
    inputs = [{"input": f"q{i} {KEY}"} for i in range(3)]
    outputs = asyncio.run(chains.abatch(executor, inputs, callbacks=handler))
    assert [out["output"] for out in outputs] == [f"done: q{i} {KEY}" for i in range(3)]


@pytest.mark.timeout(30)
def test_abatch_of_parallel_tools_exports_three_exact_trees_without_content():
    exporter, provider = exporter_and_provider()
    run_abatch(OpenTelemetryHandler(provider))
    spans = exporter.get_finished_spans()
    assert len(spans) == 3 * 5
    children = by_parent(spans)
    roots = children[None]
    assert [root.name for root in roots] == ["invoke_agent Executor"] * 3
    assert len({root.context.trace_id for root in roots}) == 3
    for root in roots:
        assert root.attributes is not None
        assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
        kids = children[root.context.span_id]
        assert Counter(kid.name for kid in kids) == {
            "chat TwoToolsThenAnswer": 2,
            "execute_tool alpha": 1,
            "execute_tool beta": 1,
        }
        assert all(kid.context.trace_id == root.context.trace_id for kid in kids)
        assert all(kid.context.span_id not in children for kid in kids)  # leaves
        for kid in kids:
            assert kid.start_time is not None and root.start_time is not None
            assert kid.end_time is not None and root.end_time is not None
            assert root.start_time <= kid.start_time <= kid.end_time <= root.end_time
    tools_ = [s for s in spans if s.name.startswith("execute_tool")]
    for span in tools_:
        assert span.attributes is not None
        name = span.attributes["gen_ai.tool.name"]
        assert span.attributes["gen_ai.tool.call.id"] == f"call_{name!s}"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
    chats = [s for s in spans if s.name.startswith("chat")]
    assert all(s.kind is SpanKind.CLIENT for s in chats)
    for span in chats:
        assert span.attributes is not None
        assert span.attributes["gen_ai.provider.name"] == "twotoolsthenanswer"
        assert span.attributes["gen_ai.request.model"] == "TwoToolsThenAnswer"
    for span in spans:
        assert span.attributes is not None
        assert not CONTENT & set(span.attributes), span.name
        assert all(KEY not in str(value) for value in span.attributes.values())


@pytest.mark.timeout(30)
def test_with_opt_in_the_tool_arguments_and_messages_are_there_keys_masked(monkeypatch):
    exporter, provider = exporter_and_provider()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run_abatch(OpenTelemetryHandler(provider, capture_content=True))
    spans = exporter.get_finished_spans()
    tools_ = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools_) == 6
    for span in tools_:
        assert span.attributes is not None
        assert span.attributes["gen_ai.tool.call.arguments"] == '{"input": "x"}'
        assert str(span.attributes["gen_ai.tool.call.result"]).endswith(" ok")
    chat = next(s for s in spans if s.name.startswith("chat"))
    assert chat.attributes is not None and "gen_ai.input.messages" in chat.attributes
    assert "q" in str(chat.attributes["gen_ai.input.messages"])
    for span in spans:
        assert span.attributes is not None
        assert all(KEY not in str(value) for value in span.attributes.values())


@pytest.mark.parametrize(("value", "captured"), [("true", True), ("TRUE", True), ("1", False)])
def test_the_environment_variable_opts_in(monkeypatch, value, captured):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    assert OpenTelemetryHandler(exporter_and_provider()[1]).capture_content is captured


@pytest.mark.timeout(30)
def test_model_attributes_usage_and_request_parameters():
    exporter, provider = exporter_and_provider()
    reply = Message.assistant("hi", response_meta=ResponseMeta("stop", TokenUsage(11, 3, 14)))
    FakeLLM([reply]).generate(
        [Message.user("q")],
        callbacks=OpenTelemetryHandler(provider),
        temperature=0.2,
        max_tokens=50,
        top_p=0.9,
        seed=7,
        model="small-1",
        extra_headers={"Authorization": f"Bearer {KEY}"},
    )
    [span] = exporter.get_finished_spans()
    assert span.name == "chat small-1"
    assert span.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fakellm",
        "gen_ai.request.model": "small-1",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 50,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.seed": 7,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 3,
        "chainkit.run.id": span.attributes["chainkit.run.id"],  # type: ignore[index]
    }


@pytest.mark.timeout(30)
def test_a_reply_from_a_response_cache_is_marked_and_has_no_usage():
    exporter, provider = exporter_and_provider()
    reply = Message.assistant("hi", response_meta=ResponseMeta("stop", TokenUsage(11, 3, 14)))
    llm = FakeLLM([reply], cache=InMemoryCache())
    for _ in range(2):
        llm.generate([Message.user("q")], callbacks=OpenTelemetryHandler(provider), temperature=0)
    paid, hit = exporter.get_finished_spans()
    assert paid.attributes is not None and hit.attributes is not None
    assert paid.attributes["gen_ai.usage.input_tokens"] == 11
    assert "chainkit.response.cached" not in paid.attributes
    assert hit.attributes["chainkit.response.cached"] is True
    assert "gen_ai.usage.input_tokens" not in hit.attributes


def test_the_openai_backend_is_named_openai():
    from chainkit.llms import OpenAI

    assert OpenAI("gpt-4o-mini", api_key=KEY).provider == "openai"


@pytest.mark.timeout(30)
def test_a_failed_tool_and_a_failed_chain_have_status_error():
    exporter, provider = exporter_and_provider()
    llm = FakeLLM(["Action: broken\nAction Input: x"] * 2)
    executor = agents.Executor(agents.OneShotAgent(llm, [Broken()]), max_iterations=1)
    with pytest.raises(agents.NotFinishedError):
        chains.run(executor, "q", callbacks=OpenTelemetryHandler(provider))
    spans = {s.name: s for s in exporter.get_finished_spans()}
    tool = spans["execute_tool broken"]
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes is not None
    assert tool.attributes["error.type"] == "chainkit.tools.errors.ToolError"
    root = spans["invoke_agent Executor"]
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes is not None
    assert str(root.attributes["error.type"]).endswith("NotFinishedError")


class Renamed(agents.Executor):
    pass


@pytest.mark.timeout(30)
def test_an_executor_of_another_name_is_an_agent_span_and_other_chains_are_chains():
    exporter, provider = exporter_and_provider()
    llm = FakeLLM(["Final Answer: 1"])
    executor = Renamed(agents.OneShotAgent(llm, [tools.Calculator()]))
    chains.run(executor, "q", callbacks=OpenTelemetryHandler(provider))
    [span] = exporter.get_finished_spans()[-1:]
    assert span.name == "invoke_agent Renamed"

    class Plain(InputOutputChain):
        def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
            return {"output": "x"}

    chains.run(Plain(), "q", callbacks=OpenTelemetryHandler(provider))
    assert exporter.get_finished_spans()[-1].name == "chain Plain"


def test_a_missing_opentelemetry_is_named_with_the_extra_to_install():
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from chainkit import callbacks\n"
        "try:\n    callbacks.OpenTelemetryHandler()\n"
        "except callbacks.errors.HandlerDependencyError as error:\n    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'chainkit[otel]'" in result.stdout, result.stderr


def test_importing_chainkit_callbacks_loads_no_opentelemetry():
    code = "import chainkit.callbacks, chainkit.chains, sys; print('opentelemetry' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
    assert isinstance(callbacks.OpenTelemetryHandler, type)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("capture_content", [False, True])
def test_a_retry_is_an_event_of_the_model_span(
    openai_server: OpenAIServer, openai_llm: OpenAI, capture_content: bool
):
    exporter, provider = exporter_and_provider()
    handler = OpenTelemetryHandler(provider, capture_content=capture_content)
    break_then_answer(openai_server)
    streamed: list[str] = []  # the model streams only when asked to
    executor = mrkl_executor(openai_llm)
    assert chains.run(executor, "q", callbacks=handler, streaming_func=streamed.append) == ANSWER
    [chat] = [span for span in exporter.get_finished_spans() if span.name.startswith("chat ")]
    [retry] = chat.events
    assert retry.name == "retry"
    expected = {
        "chainkit.retry.attempt": 1,
        "error.type": "chainkit.llms.errors.ModelConnectionError",
        "chainkit.retry.wait": pytest.approx(0.001, abs=0.01),  # the tests' fast backoff
    }
    if capture_content:
        expected["chainkit.retry.discarded"] = STREAMED_BEFORE_THE_BREAK
    assert dict(retry.attributes or {}) == expected
    assert chat.start_time is not None and chat.end_time is not None
    assert chat.start_time <= retry.timestamp <= chat.end_time


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_chat_span_over_http_has_the_models_defaults_and_what_the_server_said(
    make_openai, openai_server, mode, streamed
):
    exporter, provider = exporter_and_provider()
    openai_server.push(Reply("hi", model="loopback-model-2026-01-01", id="chatcmpl-42"))
    llm = make_openai(temperature=0.3, max_tokens=64, top_p=0.5, seed=1)
    options: dict[str, Any] = {"seed": 5, "temperature": None}  # None: the default stays
    if streamed:
        options["streaming_func"] = lambda chunk: None
    reply = mode.generate(
        llm, [Message.user("q")], callbacks=OpenTelemetryHandler(provider), **options
    )
    assert reply.content == "hi"
    [sent] = openai_server.chat_requests()
    assert (sent.body["temperature"], sent.body["seed"]) == (0.3, 5)  # what the span says
    [span] = exporter.get_finished_spans()
    assert span.attributes is not None
    port = int(openai_server.base_url.split(":")[2].split("/")[0])
    assert {key: span.attributes.get(key) for key in CHAT_ATTRIBUTES} == {
        "gen_ai.request.model": "loopback-model",
        "gen_ai.request.temperature": 0.3,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.request.top_p": 0.5,
        "gen_ai.request.seed": 5,
        "gen_ai.response.model": "loopback-model-2026-01-01",
        "gen_ai.response.id": "chatcmpl-42",
        "server.address": "127.0.0.1",
        "server.port": port,
    }


CHAT_ATTRIBUTES = (
    "gen_ai.request.model",
    "gen_ai.request.temperature",
    "gen_ai.request.max_tokens",
    "gen_ai.request.top_p",
    "gen_ai.request.seed",
    "gen_ai.response.model",
    "gen_ai.response.id",
    "server.address",
    "server.port",
)


def test_openais_server_url_has_no_credentials(monkeypatch):
    from chainkit.llms import OpenAI

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAI("gpt-4o-mini", api_key=KEY).server_url == "https://api.openai.com/v1"
    with_credentials = "https://user:pw@llm.example.com/v1?api_key=k"
    llm = OpenAI("gpt-4o-mini", api_key=KEY, base_url=with_credentials)
    assert llm.server_url == "https://llm.example.com/v1"


class Served(FakeLLM):
    @property
    def server_url(self) -> str:
        return "https://llm.example.com/v1"


def test_a_server_url_without_a_port_has_its_schemes_port():
    exporter, provider = exporter_and_provider()
    Served(["hi"]).generate([Message.user("q")], callbacks=OpenTelemetryHandler(provider))
    [span] = exporter.get_finished_spans()
    assert span.attributes is not None
    assert (span.attributes["server.address"], span.attributes["server.port"]) == (
        "llm.example.com",
        443,
    )


@pytest.mark.timeout(60)
def test_a_failed_model_call_has_an_exception_event_besides_status_error(
    make_openai, openai_server
):
    exporter, provider = exporter_and_provider()
    openai_server.fail(Fault.http(400, "bad request"))
    llm = make_openai(max_attempts=1)
    with pytest.raises(ModelError):
        llm.generate([Message.user("q")], callbacks=OpenTelemetryHandler(provider))
    [span] = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    [event] = span.events
    assert event.name == "exception"
    assert event.attributes is not None
    assert event.attributes["exception.type"] == span.attributes["error.type"]  # type: ignore[index]
    assert str(event.attributes["exception.type"]).startswith("chainkit.llms.errors.")
    assert "exception.message" not in event.attributes  # content: only with capture
    assert 'File "' in str(event.attributes["exception.stacktrace"])


def test_a_pipelines_steps_are_spans_under_its_span() -> None:
    from chainkit import prompts

    exporter, provider = exporter_and_provider()
    pipeline = (
        prompts.PromptTemplate.from_template("{q}")
        | FakeLLM(["reply"])
        | {"shout": str.upper, "size": str.__len__}
    )
    handler = OpenTelemetryHandler(provider)
    assert chains.call(pipeline, {"q": "go"}, callbacks=handler) == {"shout": "REPLY", "size": 5}
    spans = exporter.get_finished_spans()
    children = by_parent(spans)
    (root,) = children[None]
    assert "Pipeline" in root.name
    steps = [span.name for span in children[root.context.span_id]]
    assert len(steps) == 3 and any("PromptTemplate" in name for name in steps)
    (parallel,) = [span for span in children[root.context.span_id] if "Parallel" in span.name]
    assert sorted(span.name for span in children[parallel.context.span_id]) == sorted(
        name for name in (s.name for s in spans) if "upper" in name or "__len__" in name
    )
