"""OpenTelemetryHandler and content: without capture nothing a user or a model wrote reaches a
span (name, attribute, event, status, resource), whatever the kind of run; with capture the
messages follow the GenAI conventions' JSON shape."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonschema
import pytest

pytest.importorskip("opentelemetry.sdk", reason="OpenTelemetry's SDK is in .[dev]")

from opentelemetry.sdk.trace import ReadableSpan

from chainkit import agents, chains, prompts, tools
from chainkit.callbacks import OpenTelemetryHandler
from chainkit.llms import FakeLLM
from chainkit.llms.errors import ModelError
from chainkit.llms.openai.chat import OpenAI
from chainkit.schema import FunctionCall, ImagePart, Message, TextPart, ToolCall
from tests.support.openai_server import Call, Fault, OpenAIServer, Reply
from tests.support.otel import exporter_and_provider
from tests.support.stub_chains import InputOutputChain
from tests.support.stub_tools import Echo

SECRET = "my SSN is 078-05-1120"
"""What a user typed: it must reach no span unless content capture is on."""


class Failing(tools.Tool):
    name = "failing"
    description = "fails, quoting its input"

    def call(self, input: str) -> str:
        raise tools.ToolError(f"could not handle {input}")


class Refusing(InputOutputChain):
    """A chain that fails with an error quoting its input."""

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        raise ValueError(f"bad input: {inputs['input']}")


def native_call(name: str, text: str, call_id: str) -> Message:
    return Message.assistant(
        "", [ToolCall(call_id, FunctionCall(name, json.dumps({"input": text})))]
    )


def run_every_kind(handler: OpenTelemetryHandler, openai: OpenAI, server: OpenAIServer) -> None:
    """Runs each kind of run with SECRET in its inputs, on success and error paths: chains
    (plain, LLMChain, failing), models (fake and OpenAI over HTTP, streamed, failing), MRKL and
    tool-calling agents with tools that answer and fail, a tool retrieval, batch and stream."""
    # An LLMChain on the OpenAI backend, plain and streamed; then a model error that quotes it.
    prompt = prompts.PromptTemplate.from_template("Answer: {question}")
    chain = chains.LLMChain(prompt, openai)
    server.push(Reply(f"you said {SECRET}"), Reply(f"streamed {SECRET}"))
    assert SECRET in chains.run(chain, SECRET, callbacks=handler)
    assert SECRET in chains.run(chain, SECRET, streaming_func=lambda _: None, callbacks=handler)
    server.fail(Fault.http(400, f"unreadable: {SECRET}"))
    with pytest.raises(ModelError):
        chains.run(chain, SECRET, callbacks=handler)
    # A failing chain.
    with pytest.raises(ValueError):
        chains.run(Refusing(), SECRET, callbacks=handler)
    # A MRKL agent with a tool retriever: tools that answer, fail, and do not exist.
    script = [
        f"Action: {SECRET}\nAction Input: x",  # a tool the model made up, with the user's words
        f"Action: echo\nAction Input: {SECRET}",
        f"Action: failing\nAction Input: {SECRET}",
        f"Final Answer: {SECRET}",
    ]
    catalog = [Echo(), Failing()]
    retriever = tools.ToolRetriever(catalog, top_k=2)
    mrkl = agents.OneShotAgent(FakeLLM(script), catalog, tool_retriever=retriever)
    assert chains.run(agents.Executor(mrkl), SECRET, callbacks=handler) == SECRET
    # A tool-calling agent, in a batch and in a stream, sync and async.
    replies = [native_call("echo", SECRET, "call_1"), Message.assistant(SECRET)] * 4
    native = agents.Executor(agents.ToolCallingAgent(FakeLLM(replies), [Echo()]))
    [batched] = chains.batch(native, [{"input": SECRET}], callbacks=handler)
    assert batched["output"] == SECRET
    assert list(chains.stream(native, SECRET, callbacks=handler))
    assert asyncio.run(chains.arun(native, SECRET, callbacks=handler)) == SECRET

    async def astream() -> None:
        async for _ in chains.astream(native, SECRET, callbacks=handler):
            pass

    asyncio.run(astream())


def everything_in(span: ReadableSpan) -> str:
    """Every text of a span an exporter sends: name, attributes, events, status, resource."""
    texts: list[Any] = [span.name, span.status.description, dict(span.attributes or {})]
    texts += [(event.name, dict(event.attributes or {})) for event in span.events]
    texts += [dict(span.resource.attributes), [dict(link.attributes or {}) for link in span.links]]
    return repr(texts)


def spans_of(capture: bool, make_openai, openai_server) -> tuple[ReadableSpan, ...]:
    exporter, provider = exporter_and_provider()
    handler = OpenTelemetryHandler(provider, capture_content=capture)
    run_every_kind(handler, make_openai(max_attempts=1), openai_server)
    return exporter.get_finished_spans()


@pytest.mark.timeout(60)
def test_without_capture_no_span_holds_what_the_user_wrote(make_openai, openai_server):
    spans = spans_of(False, make_openai, openai_server)
    kinds = {span.name.split()[0] for span in spans}
    assert kinds == {"chain", "chat", "execute_tool", "invoke_agent", "retrieve"}
    assert {"retrieve ToolRetriever", "chat loopback-model", "chain Refusing"} <= {
        span.name for span in spans
    }
    failed = [span for span in spans if span.events]
    assert {span.name for span in failed} >= {
        "chain Refusing",
        "execute_tool (unknown tool)",
        "execute_tool failing",
        "chat loopback-model",
    }
    for span in spans:
        assert SECRET not in everything_in(span), span.name
        for event in span.events:
            assert event.attributes is not None
            assert "exception.message" not in event.attributes


@pytest.mark.timeout(60)
def test_with_capture_the_content_is_there(make_openai, openai_server):
    spans = spans_of(True, make_openai, openai_server)
    holding = {span.name for span in spans if SECRET in everything_in(span)}
    assert {"retrieve ToolRetriever", "chat loopback-model", "execute_tool failing"} <= holding
    [error] = [span for span in spans if span.name == "chain Refusing"]
    assert error.events[0].attributes is not None
    assert error.events[0].attributes["exception.message"] == f"bad input: {SECRET}"


# The JSON Schema of gen_ai.input.messages and gen_ai.output.messages, written from the
# conventions (docs/gen-ai/gen-ai-{input,output}-messages.json of open-telemetry's
# semantic-conventions): parts are told apart by `type`; an output message has a
# finish_reason. Stricter than the spec where chainkit writes a known part: no other keys.
_NULLABLE_TEXT = {"type": ["string", "null"]}
PARTS: dict[str, dict[str, Any]] = {
    "text": {"content": {"type": "string"}},
    "reasoning": {"content": {"type": "string"}},
    "tool_call": {"id": _NULLABLE_TEXT, "name": {"type": "string"}, "arguments": {}},
    "tool_call_response": {"id": _NULLABLE_TEXT, "response": {}},
    "uri": {"modality": {"type": "string"}, "mime_type": _NULLABLE_TEXT, "uri": {"type": "string"}},
    "blob": {
        "modality": {"type": "string"},
        "mime_type": _NULLABLE_TEXT,
        "content": {"type": "string"},
    },
}
REQUIRED = {
    "text": ["content"],
    "reasoning": ["content"],
    "tool_call": ["name"],
    "tool_call_response": ["response"],
    "uri": ["modality", "uri"],
    "blob": ["modality", "content"],
}


def part_schema(kind: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"type": {"const": kind}, **PARTS[kind]},
        "required": ["type", *REQUIRED[kind]],
        "additionalProperties": False,
    }


def messages_schema(output: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "role": {"enum": ["system", "user", "assistant", "tool"]},
        "parts": {"type": "array", "items": {"oneOf": [part_schema(kind) for kind in PARTS]}},
        "name": {"type": "string"},
    }
    required = ["role", "parts"]
    if output:
        properties["finish_reason"] = {"type": "string"}
        required.append("finish_reason")
    message = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return {"type": "array", "items": message}


CONVERSATION = [
    Message.system("be brief"),
    Message.user([TextPart("what is this?"), ImagePart(url="https://example.com/a.png")]),
    Message.assistant("", [ToolCall("call_7", FunctionCall("lookup", '{"q": "a.png"}'))]),
    Message.tool("a cat", tool_call_id="call_7"),
]


@pytest.mark.timeout(30)
def test_captured_messages_have_the_shape_the_conventions_give():
    exporter, provider = exporter_and_provider()
    reply = Message.assistant(
        "a cat", [ToolCall("call_8", FunctionCall("more", "not json"))], reasoning_content="hm"
    )
    FakeLLM([reply]).generate(
        CONVERSATION, callbacks=OpenTelemetryHandler(provider, capture_content=True)
    )
    [span] = exporter.get_finished_spans()
    assert span.attributes is not None
    sent = json.loads(str(span.attributes["gen_ai.input.messages"]))
    got = json.loads(str(span.attributes["gen_ai.output.messages"]))
    jsonschema.validate(sent, messages_schema(output=False))
    jsonschema.validate(got, messages_schema(output=True))
    assert sent[1]["parts"] == [
        {"type": "text", "content": "what is this?"},
        {"type": "uri", "modality": "image", "mime_type": None, "uri": "https://example.com/a.png"},
    ]
    assert sent[2]["parts"] == [
        {"type": "tool_call", "id": "call_7", "name": "lookup", "arguments": {"q": "a.png"}}
    ]
    assert sent[3] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_7", "response": "a cat"}],
    }
    assert got == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "hm"},
                {"type": "text", "content": "a cat"},
                {"type": "tool_call", "id": "call_8", "name": "more", "arguments": "not json"},
            ],
            "finish_reason": "tool_call",
        }
    ]


@pytest.mark.timeout(30)
def test_the_servers_finish_reason_is_given_under_the_conventions_name(make_openai, openai_server):
    exporter, provider = exporter_and_provider()
    openai_server.push(Reply("", [Call("lookup", "{}")]), Reply("cut", finish_reason="length"))
    llm = make_openai()
    handler = OpenTelemetryHandler(provider, capture_content=True)
    for _ in range(2):
        llm.generate([Message.user("q")], callbacks=handler)
    reasons = [
        json.loads(str(span.attributes["gen_ai.output.messages"]))[0]["finish_reason"]
        for span in exporter.get_finished_spans()
        if span.attributes is not None
    ]
    assert reasons == ["tool_call", "length"]
