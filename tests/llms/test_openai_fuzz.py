"""No raw exception escapes `llms.OpenAI`: whatever a server sends, a call ends in a Message
or a chainkit error (a `ModelError`), within its timeout.

Replies start legal (plain and streamed, of every shape chainkit reads) and are mutated at the
JSON level (a field replaced, dropped, added, wrapped or turned into text; an event dropped,
repeated or swapped) and at the byte level (bytes flipped, inserted, deleted, cut; line
endings, BOMs, escapes), under a head that is sometimes wrong about the body (its encoding,
length or framing). The loopback server sends the result byte for byte.
"""

from __future__ import annotations

import asyncio
import copy
import gzip
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chainkit.llms.errors import ModelError
from chainkit.llms.openai.chat import OpenAI
from chainkit.schema import Message, ToolInfo
from tests.conftest import FAST_BACKOFF
from tests.support.openai_server import (
    TEST_API_KEY,
    Call,
    OpenAIServer,
    Raw,
    Reply,
    completion_of,
    raw_reply,
    stream_events_of,
)

TIMEOUT = 2.0
TOOLS = [ToolInfo("weather", "Weather in a city"), ToolInfo("clock", "The time")]
CALLS = [Call("weather", '{"city": "Paris"}', id="call_a"), Call("clock", "{}", id="call_b")]
REPLIES = [
    Reply("The answer is 42."),
    Reply("随机数是 1024 🎲", chunk_size=3, reasoning_content="Let me think."),
    Reply("", tool_calls=CALLS),
    Reply("", tool_calls=CALLS, tool_call_index="zero"),
    Reply("", tool_calls=CALLS, tool_call_index="omitted"),
    Reply("Both.", tool_calls=CALLS, tool_calls_in_one_chunk=True, usage=None),
    Reply("", tool_calls=[Call("weather", '{"city": "San')], finish_reason="length"),
    Reply("No finish reason.", sends_finish_reason=False),
]


def _message(**fields: Any) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", **fields}, "finish_reason": "stop"}
    return {"object": "chat.completion", "choices": [choice]}


def _chunks(*deltas: dict[str, Any]) -> list[dict[str, Any]]:
    choices = [[{"index": 0, "delta": delta}] for delta in deltas]
    return [{"choices": c} for c in choices] + [
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    ]


PLAIN = [completion_of(reply, "m") for reply in REPLIES] + [
    _message(content=[{"type": "thinking", "thinking": "Hm."}, {"type": "text", "text": "Hi"}]),
    _message(content=None, refusal="I can't."),
    _message(content=None, function_call={"name": "clock", "arguments": "{}"}),
    _message(
        content=None, tool_calls=[{"id": "c", "function": {"name": "clock", "arguments": {}}}]
    ),
]
STREAMED = [[event for event, _ in stream_events_of(reply, "m", True)] for reply in REPLIES] + [
    _chunks({"content": [{"type": "text", "text": "Hi"}]}, {"reasoning": "Hm."}),
    _chunks({"refusal": "I can't."}),
    _chunks({"function_call": {"name": "clock"}}, {"function_call": {"arguments": "{}"}}),
    _chunks({"content": "\ud83d"}, {"content": "\ude00"}),
]

FIELDS = [
    *("choices", "index", "message", "delta", "content", "finish_reason", "usage", "error"),
    *("tool_calls", "id", "type", "function", "name", "arguments", "function_call"),
    *("refusal", "reasoning", "reasoning_content", "text", "thinking", "prompt_tokens"),
]
WORDS = ["", "[DONE]", "stop", "length", "text", "thinking", "refusal", "\ud83d", "\ude00", "{"]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 2**40)
    | st.floats(allow_nan=False)
    | st.sampled_from(WORDS)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), inner),
    max_leaves=6,
)
FRAGMENTS = [
    *(b"\r", b"\n", b"\r\n", b"\n\n", b"\xef\xbb\xbf", b"\x00", b"\xff", b"\xe2\x80\xa8"),
    *(b'"', b"{", b"}", b"[", b"\\", b"\\ud83d", b": ping\n", b"event: error\n", b"data: "),
    *(b"data: [DONE]\n\n", b"id: 7\n", b"retry: x\n", b"data:\n\n", b"null", b"[]"),
    b"[" * 1500,  # nested deeper than the JSON parser goes
]


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every node in a JSON value, the value itself first."""
    found = [path]
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        found += _nodes(child, (*path, key))
    return found


def _mutate_json(draw: st.DrawFn, value: Any) -> Any:
    value = copy.deepcopy(value)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_nodes(value)))
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        node = parent[path[-1]] if path else value
        action = draw(st.sampled_from(["replace", "drop", "add", "wrap", "as_text"]))
        if action == "add" and isinstance(node, dict):
            node[draw(st.sampled_from(FIELDS))] = draw(json_values)
            continue
        if action == "add" and isinstance(node, list):
            node.insert(draw(st.integers(0, len(node))), draw(json_values))
            continue
        if action == "drop" and path:
            del parent[path[-1]]
            continue
        new: Any
        if action == "wrap":
            new = [node]
        elif action == "as_text":
            new = json.dumps(node)
        else:
            new = draw(json_values)
        if path:
            parent[path[-1]] = new
        else:
            value = new
    return value


def _dump(value: Any, draw: st.DrawFn) -> str:
    return json.dumps(value, ensure_ascii=draw(st.booleans()))


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate makes invalid UTF-8


@st.composite
def plain_bodies(draw: st.DrawFn) -> bytes:
    value = draw(st.sampled_from(PLAIN))
    if draw(st.booleans()):
        value = _mutate_json(draw, value)
    return _encode(_dump(value, draw))


@st.composite
def stream_bodies(draw: st.DrawFn) -> bytes:
    events: list[Any] = list(draw(st.sampled_from(STREAMED)))
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(events) - 1))
        action = draw(st.sampled_from(["mutate", "drop", "repeat", "swap"]))
        if action == "mutate":
            events[position] = _mutate_json(draw, events[position])
        elif action == "drop":
            del events[position]
        elif action == "repeat":
            events.insert(position, events[position])
        else:
            other = draw(st.integers(0, len(events) - 1))
            events[position], events[other] = events[other], events[position]
        if not events:
            break
    field = draw(st.sampled_from(["data: ", "data:"]))
    end = draw(st.sampled_from(["\n\n", "\r\n\r\n", "\r\r", "\n"]))
    done = [f"{field}[DONE]{end}"] if draw(st.booleans()) or not events else []
    return _encode("".join([*(f"{field}{_dump(e, draw)}{end}" for e in events), *done]))


@st.composite
def mutated_bytes(draw: st.DrawFn, body: bytes) -> bytes:
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(body)))
        action = draw(st.sampled_from(["flip", "insert", "delete", "cut", "repeat"]))
        if action == "flip" and at < len(body):
            body = body[:at] + bytes([body[at] ^ draw(st.integers(1, 255))]) + body[at + 1 :]
        elif action == "insert":
            body = body[:at] + draw(st.sampled_from(FRAGMENTS)) + body[at:]
        elif action == "delete":
            body = body[:at] + body[at + draw(st.integers(1, 8)) :]
        elif action == "cut":
            body = body[:at]
        else:
            body = body[:at] + body[at : at + 16] + body[at:]
    return body


def _chunked(body: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:7], body[7:])) + (
        b"0\r\n\r\n"
    )


@st.composite
def heads(draw: st.DrawFn, body: bytes) -> bytes:
    """The whole response: a head, sometimes wrong about the body, and the body."""
    content_type = draw(
        st.sampled_from(
            [
                "text/event-stream",
                "application/json",
                "text/plain",
                "text/event-stream; charset=latin-1",
            ]
        )
    )
    status = draw(st.sampled_from([200] * 6 + [201, 400, 429, 500]))
    framing = draw(
        st.sampled_from(["close"] * 4 + ["gzip", "bad_gzip", "length", "chunked", "bad_chunked"])
    )
    headers: dict[str, str] = {}
    if status != 200 and draw(st.booleans()):
        name = draw(st.sampled_from(["Retry-After", "retry-after-ms"]))
        headers[name] = draw(st.sampled_from(["nan", "inf", "-1", "1e309", "0.001", "soon"]))
    if framing in ("gzip", "bad_gzip"):
        headers["Content-Encoding"] = "gzip"
        if framing == "gzip":
            body = gzip.compress(body)
    elif framing == "length":
        headers["Content-Length"] = str(max(0, len(body) + draw(st.integers(-5, 5))))
    elif framing in ("chunked", "bad_chunked"):
        headers["Transfer-Encoding"] = "chunked"
        if framing == "chunked":
            body = _chunked(body)
    return raw_reply(body, content_type, status=status, headers=headers).data


@dataclass(frozen=True)
class Case:
    mode: str
    streamed: bool
    response: bytes


@st.composite
def cases(draw: st.DrawFn) -> Case:
    streamed = draw(st.booleans())
    # Mostly the kind of body the request asked for, sometimes the other kind.
    stream_body = streamed != draw(st.sampled_from([False] * 4 + [True]))
    body = draw(stream_bodies() if stream_body else plain_bodies())
    body = draw(mutated_bytes(body))
    return Case(draw(st.sampled_from(["sync", "async"])), streamed, draw(heads(body)))


def _check(reply: Message, pieces: list[str] | None) -> None:
    """A reply is well formed: text that can be sent back, tool calls with text arguments."""
    assert isinstance(reply, Message) and reply.role == "assistant"
    assert isinstance(reply.content, str) and isinstance(reply.reasoning_content, str)
    for call in reply.tool_calls:
        assert isinstance(call.id, str) and call.function.name
        assert isinstance(call.function.arguments, str) and call.function.arguments
    json.dumps(reply.to_dict(request=True), ensure_ascii=False).encode("utf-8")
    if pieces is not None:
        assert "".join(pieces) == reply.content  # what the user saw is what came back


@pytest.mark.timeout(120)
def test_every_reply_ends_in_a_message_or_a_chainkit_error() -> None:
    with OpenAIServer() as server:
        llm = OpenAI(
            "fuzz",
            base_url=server.base_url,
            api_key=TEST_API_KEY,
            timeout=TIMEOUT,
            max_attempts=2,  # a retry finds no reply queued: the server answers 400
            backoff=FAST_BACKOFF,
        )
        loop = asyncio.new_event_loop()

        @settings(
            max_examples=200,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(cases())
        def check(case: Case) -> None:
            server.push(Raw(case.response))
            pieces: list[str] | None = [] if case.streamed else None
            options: dict[str, Any] = {"tools": TOOLS}
            if pieces is not None:
                options["streaming_func"] = pieces.append
            messages = [Message.user("question")]
            call: Callable[[], Message]
            if case.mode == "async":
                call = lambda: loop.run_until_complete(llm.agenerate(messages, **options))  # noqa: E731
            else:
                call = lambda: llm.generate(messages, **options)  # noqa: E731
            started = time.monotonic()
            try:
                reply = call()
            except ModelError as error:
                str(error).encode("utf-8")  # it can be logged
            else:
                _check(reply, pieces)
            # Generous, for a loaded machine: what it catches is a call that ignores its timeout.
            assert time.monotonic() - started < TIMEOUT + 10

        try:
            check()
        finally:
            loop.run_until_complete(llm.aclose())
            loop.close()
            llm.close()
