"""OpenAI backend: odd but legal server replies, sent byte for byte by the loopback server.

One test per class of reply, each streamed and plain where the class exists in both, and
each run sync and async."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainkit import agents, chains, tools
from chainkit.llms import CallOptions
from chainkit.llms.errors import (
    ModelConfigError,
    ModelError,
    ModelRefusalError,
    ModelReplyShapeError,
    ModelRequestError,
    ModelResponseError,
)
from chainkit.llms.openai.chat import OpenAI
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode, run_then_close
from tests.support.openai_server import Fault, OpenAIServer, Raw, Reply, raw_reply

USAGE = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}


# Building replies.


def completion(
    message: dict[str, Any], finish: str | None = "stop", **fields: Any
) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
    return {"id": "chatcmpl-raw", "object": "chat.completion", "choices": [choice], **fields}


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0
) -> dict[str, Any]:
    choice = {"index": index, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-raw", "object": "chat.completion.chunk", "choices": [choice]}


def text_chunks(*pieces: str) -> list[dict[str, Any]]:
    return [chunk({"role": "assistant", "content": ""}), *(chunk({"content": p}) for p in pieces)]


def sse(*events: dict[str, Any] | str, done: bool = True) -> bytes:
    """An SSE body: a dict is one `data:` event of its JSON, a str is sent as it is."""
    parts = [e if isinstance(e, str) else f"data: {json.dumps(e)}\n\n" for e in events]
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def plain(data: dict[str, Any] | str) -> Raw:
    body = data if isinstance(data, str) else json.dumps(data)
    return raw_reply(body.encode(), "application/json")


def stream(*events: dict[str, Any] | str, done: bool = True) -> Raw:
    return raw_reply(sse(*events, done=done))


def ask(llm: OpenAI, mode: Mode, *, streamed: bool, **options: Any) -> tuple[Message, list[str]]:
    """The reply to one question, and the pieces handed to streaming_func (when streamed)."""
    pieces: list[str] = []
    if streamed:
        options["streaming_func"] = pieces.append
    messages = [Message.user("question")]
    return mode.generate(llm, messages, **options), pieces


@pytest.fixture
def llm(make_openai) -> OpenAI:
    model: OpenAI = make_openai(max_attempts=2)
    return model


# 1. Tool-call arguments sent as a JSON object.

ARGUMENTS = {"city": "Zürich", "days": 3}


@pytest.mark.parametrize(
    "reply",
    [
        plain(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": ARGUMENTS},
                        }
                    ],
                },
                "tool_calls",
            )
        ),
        stream(
            chunk({"role": "assistant", "content": None}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": ARGUMENTS},
                        }
                    ]
                }
            ),
            chunk(finish="tool_calls"),
        ),
    ],
    ids=["plain", "streamed"],
)
def test_arguments_sent_as_an_object_are_encoded_as_json_text(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, reply: Raw
) -> None:
    openai_server.push(reply)
    streamed = b"text/event-stream" in reply.data
    message, _ = ask(llm, mode, streamed=streamed)
    [call] = message.tool_calls
    assert (call.id, call.function.name) == ("c1", "weather")
    assert isinstance(call.function.arguments, str)
    assert json.loads(call.function.arguments) == ARGUMENTS
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_an_agent_runs_a_tool_whose_arguments_came_as_an_object(
    openai_server: OpenAIServer, llm: OpenAI, streamed: bool
) -> None:
    seen: list[tuple[str, int]] = []

    @tools.tool
    def weather(city: str, days: int) -> str:
        """Forecast for a city."""
        seen.append((city, days))
        return "sunny"

    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": ARGUMENTS}}
    if streamed:
        openai_server.push(
            stream(chunk({"tool_calls": [{"index": 0, **call}]}), chunk(finish="tool_calls")),
            stream(*text_chunks("Sunny in Zürich."), chunk(finish="stop")),
        )
    else:
        openai_server.push(
            plain(completion({"content": None, "tool_calls": [call]}, "tool_calls")),
            plain(completion({"content": "Sunny in Zürich."})),
        )
    events = EventRecorder()
    executor = agents.Executor(agents.ToolCallingAgent(llm, [weather]))
    options = CallOptions(callbacks=events)
    if streamed:
        options["streaming_func"] = lambda _: None

    answer = chains.run(executor, "Weather?", **options)

    assert answer == "Sunny in Zürich."
    assert seen == [("Zürich", 3)]
    tool_events = events.described(
        {
            "tool_start": lambda tool, input, call_id: ("start", tool),
            "tool_end": lambda tool, output, call_id: ("end", tool),
            "tool_error": lambda tool, error, call_id: ("error", tool),
        }
    )
    assert tool_events == [("start", "weather"), ("end", "weather")]


# 2. Tool-call deltas numbered only in their first chunk.


@pytest.mark.parametrize("later", ["id_only", "nothing", "interleaved_by_id", "fresh_ids"])
def test_tool_call_deltas_merge_by_index_then_id_then_into_the_open_call(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, later: str
) -> None:
    def head(index: int, call_id: str, name: str) -> dict[str, Any]:
        function = {"name": name, "arguments": ""}
        return {"index": index, "id": call_id, "type": "function", "function": function}

    def piece(arguments: str, call_id: str | None) -> dict[str, Any]:
        delta: dict[str, Any] = {"function": {"arguments": arguments}}
        if call_id is not None:
            delta["id"] = call_id
        return delta

    by_id = later != "nothing"
    if later == "fresh_ids":  # a new id in every delta, none of them the call's
        deltas = [
            [head(0, "call_a", "weather")],
            [piece('{"city": ', "x1")],
            [{"index": 0, **piece('"Paris"}', "x2")}],
            [head(1, "call_b", "clock")],
            [piece('{"zone": ', "x3")],
            [{"index": 1, **piece('"CET"}', "x4")}],
        ]
    elif later == "interleaved_by_id":
        deltas = [
            [head(0, "call_a", "weather")],
            [head(1, "call_b", "clock")],
            [piece('{"city": ', "call_a")],
            [piece('{"zone": ', "call_b")],
            [piece('"Paris"}', "call_a")],
            [piece('"CET"}', "call_b")],
        ]
    else:
        deltas = [
            [head(0, "call_a", "weather")],
            [piece('{"city": ', "call_a" if by_id else None)],
            [piece('"Paris"}', "call_a" if by_id else None)],
            [head(1, "call_b", "clock")],
            [piece('{"zone": ', "call_b" if by_id else None)],
            [piece('"CET"}', "call_b" if by_id else None)],
        ]
    openai_server.push(
        stream(*[chunk({"tool_calls": d}) for d in deltas], chunk(finish="tool_calls"))
    )

    message, _ = ask(llm, mode, streamed=True)

    assert message.tool_calls == [
        ToolCall("call_a", FunctionCall("weather", '{"city": "Paris"}')),
        ToolCall("call_b", FunctionCall("clock", '{"zone": "CET"}')),
    ]


def test_parallel_calls_all_numbered_zero_are_told_apart_by_their_ids(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    def delta(call_id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
        function: dict[str, Any] = {"arguments": arguments}
        if name:
            function["name"] = name
        return {"index": 0, "id": call_id, "type": "function", "function": function}

    openai_server.push(
        stream(
            chunk({"tool_calls": [delta("call_a", "weather", "")]}),
            chunk({"tool_calls": [delta(None, None, '{"city": "Oslo"}')]}),
            chunk({"tool_calls": [delta("call_b", "clock", "")]}),
            chunk({"tool_calls": [delta(None, None, "{}")]}),
            chunk(finish="tool_calls"),
        )
    )
    message, _ = ask(llm, mode, streamed=True)
    assert message.tool_calls == [
        ToolCall("call_a", FunctionCall("weather", '{"city": "Oslo"}')),
        ToolCall("call_b", FunctionCall("clock", "{}")),
    ]


def test_a_call_renamed_midway_is_a_shape_error_and_not_retried(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    function = {"name": "weather", "arguments": "{}"}
    renamed = {"name": "clock", "arguments": ""}
    openai_server.push(
        stream(
            chunk({"tool_calls": [{"index": 0, "id": "c1", "function": function}]}),
            chunk({"tool_calls": [{"index": 0, "function": renamed}]}),
            chunk(finish="tool_calls"),
        )
    )
    with pytest.raises(ModelReplyShapeError, match=r"'weather'.*'clock'"):
        ask(llm, mode, streamed=True)
    assert len(openai_server.requests) == 1


# 3. A stream is whole once its finish_reason has arrived.

WHOLE = "abcdefghijkl"


def after_finish(ending: str) -> Raw:
    events = [*text_chunks("abcd", "efgh", "ijkl"), chunk(finish="stop")]
    if ending == "broken_connection":  # the head promises more than is sent
        body = sse(*events, done=False)
        return raw_reply(body, headers={"Content-Length": str(len(body) + 100)})
    if ending == "garbage":
        return stream(*events, 'data: {"choices": [{"index": 0, "delta": {"cont\n\n')
    if ending == "error_event":
        return stream(*events, {"error": {"message": "upstream went away"}}, done=False)
    return stream(*events, done=False)  # ends cleanly, without [DONE]


@pytest.mark.parametrize("ending", ["broken_connection", "garbage", "error_event", "no_done"])
def test_a_stream_cut_after_its_finish_reason_is_whole(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, ending: str
) -> None:
    openai_server.push(after_finish(ending))
    message, pieces = ask(llm, mode, streamed=True)
    assert message.content == "".join(pieces) == WHOLE
    assert message.response_meta is not None
    assert message.response_meta.finish_reason == "stop"
    assert len(openai_server.requests) == 1  # not paid for twice


@pytest.mark.timeout(20)
def test_a_stream_that_stalls_after_its_finish_reason_is_whole(
    openai_server: OpenAIServer, make_openai, mode: Mode
) -> None:
    llm = make_openai(timeout=0.3)
    # The empty first delta, three pieces and the finish chunk, then silence past the timeout.
    openai_server.fail(Fault.stall(after_chunks=5))
    openai_server.push(Reply(WHOLE, chunk_size=4), "a second reply, never wanted")
    message, pieces = ask(llm, mode, streamed=True)
    assert message.content == "".join(pieces) == WHOLE
    assert len(openai_server.requests) == 1


def test_streamed_calls_share_one_kept_alive_connection(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    # A stream read only to its [DONE] left the body's end unread, and the client closed the
    # connection: every streamed call paid for a new one (with a provider, a TLS handshake).
    openai_server.push(Reply(WHOLE), Reply(WHOLE), Reply(WHOLE))

    async def three() -> None:
        for _ in range(3):
            await llm.agenerate([Message.user("question")], streaming_func=lambda piece: None)

    if mode.is_async:
        run_then_close(llm, three())
    else:
        for _ in range(3):
            ask(llm, mode, streamed=True)
    assert len({request.client_port for request in openai_server.chat_requests()}) == 1


# 4. A stream request answered with a plain JSON body.


@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_a_json_error_body_to_a_stream_request_keeps_the_servers_message(
    openai_server: OpenAIServer, make_openai, mode: Mode, content_type: str
) -> None:
    llm = make_openai(max_attempts=1)
    body = {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}}
    openai_server.push(raw_reply(json.dumps(body).encode(), content_type))
    with pytest.raises(ModelResponseError, match="The model `gpt-9` does not exist"):
        ask(llm, mode, streamed=True)


@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_a_server_that_ignores_stream_true_is_read_as_a_reply(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, content_type: str
) -> None:
    body = completion({"content": "Not streamed, but here."}, usage=USAGE)
    openai_server.push(raw_reply(json.dumps(body).encode(), content_type))
    message, pieces = ask(llm, mode, streamed=True)
    assert message.content == "Not streamed, but here."
    assert pieces == ["Not streamed, but here."]  # what the user saw is what came back
    assert message.response_meta is not None and message.response_meta.usage is not None
    assert len(openai_server.requests) == 1


def test_a_server_that_streams_a_plain_request_is_read_all_the_same(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    openai_server.push(stream(*text_chunks("Streamed ", "anyway."), chunk(finish="stop")))
    message, _ = ask(llm, mode, streamed=False)
    assert message.content == "Streamed anyway."
    assert len(openai_server.requests) == 1


# 5. Refusals and legacy function calls.

REFUSAL = "I can't help with that request."


@pytest.mark.parametrize(
    "reply",
    [
        plain(completion({"content": None, "refusal": REFUSAL})),
        plain(completion({"content": [{"type": "refusal", "refusal": REFUSAL}]})),
        stream(
            chunk({"role": "assistant", "content": None, "refusal": ""}),
            *(chunk({"refusal": REFUSAL[i : i + 5]}) for i in range(0, len(REFUSAL), 5)),
            chunk(finish="stop"),
        ),
    ],
    ids=["plain", "plain_part", "streamed"],
)
def test_a_refusal_is_an_error_carrying_its_text(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, reply: Raw
) -> None:
    openai_server.push(reply)
    streamed = b"text/event-stream" in reply.data
    with pytest.raises(ModelRefusalError) as caught:
        ask(llm, mode, streamed=streamed)
    assert caught.value.refusal == REFUSAL
    assert REFUSAL in str(caught.value)
    assert caught.value.reply.content == ""
    assert len(openai_server.requests) == 1  # the model's answer: not retried


@pytest.mark.parametrize(
    "reply",
    [
        plain(
            completion(
                {
                    "content": None,
                    "function_call": {"name": "weather", "arguments": '{"city": "Rome"}'},
                },
                "function_call",
            )
        ),
        stream(
            chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "weather", "arguments": ""},
                }
            ),
            chunk({"function_call": {"arguments": '{"city": '}}),
            chunk({"function_call": {"arguments": '"Rome"}'}}),
            chunk(finish="function_call"),
        ),
    ],
    ids=["plain", "streamed"],
)
def test_a_legacy_function_call_becomes_a_tool_call(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, reply: Raw
) -> None:
    openai_server.push(reply)
    message, _ = ask(llm, mode, streamed=b"text/event-stream" in reply.data)
    assert message.tool_calls == [ToolCall("", FunctionCall("weather", '{"city": "Rome"}'))]
    assert message.response_meta is not None
    assert message.response_meta.finish_reason == "function_call"


# 6. Several choices.


def test_only_choice_zero_of_a_stream_is_the_reply(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    openai_server.push(
        stream(
            chunk({"role": "assistant", "content": ""}, index=0),
            chunk({"role": "assistant", "content": ""}, index=1),
            chunk({"content": "Red "}, index=0),
            chunk({"content": "Blue "}, index=1),
            chunk({"content": "apple."}, index=0),
            chunk({"content": "sky."}, index=1),
            chunk(finish="length", index=1),
            chunk(finish="stop", index=0),
        )
    )
    message, pieces = ask(llm, mode, streamed=True)
    assert message.content == "".join(pieces) == "Red apple."
    assert message.response_meta is not None
    assert message.response_meta.finish_reason == "stop"


def test_only_choice_zero_of_a_plain_reply_is_the_reply(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    body = completion({"content": "Red apple."})
    second = {"index": 1, "message": {"role": "assistant", "content": "Blue sky."}}
    body["choices"].insert(0, {**second, "finish_reason": "length"})
    openai_server.push(plain(body))
    message, _ = ask(llm, mode, streamed=False)
    assert message.content == "Red apple."


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_asking_for_several_choices_is_refused_before_sending(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, streamed: bool
) -> None:
    with pytest.raises(ModelConfigError, match="n=2"):
        ask(llm, mode, streamed=streamed, n=2)
    assert openai_server.requests == []
    openai_server.push("fine")
    assert ask(llm, mode, streamed=streamed, n=1)[0].content == "fine"


# 7. Content as a list of parts.


@pytest.mark.parametrize(
    "reply",
    [
        plain(
            completion(
                {
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "Think. "}]},
                        {"type": "thinking", "thinking": "Then answer."},
                        {"type": "text", "text": "Hello, "},
                        {"type": "text", "text": "world."},
                    ]
                }
            )
        ),
        stream(
            chunk({"role": "assistant", "content": []}),
            chunk(
                {
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "Think. "}]}
                    ]
                }
            ),
            chunk({"content": [{"type": "thinking", "thinking": "Then answer."}]}),
            chunk({"content": [{"type": "text", "text": "Hello, "}]}),
            chunk({"content": [{"type": "text", "text": "world."}]}),
            chunk(finish="stop"),
        ),
    ],
    ids=["plain", "streamed"],
)
def test_content_parts_are_joined_and_thinking_is_kept_as_reasoning(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, reply: Raw
) -> None:
    openai_server.push(reply)
    streamed = b"text/event-stream" in reply.data
    message, pieces = ask(llm, mode, streamed=streamed)
    assert message.content == "Hello, world."
    assert message.reasoning_content == "Think. Then answer."
    assert message.parts == []
    if streamed:
        assert pieces == ["Hello, ", "world."]


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_content_part_of_an_unknown_type_is_a_shape_error_naming_it(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, streamed: bool
) -> None:
    part = {"type": "hologram", "data": "..."}
    if streamed:
        openai_server.push(stream(chunk({"content": [part]}), chunk(finish="stop")))
    else:
        openai_server.push(plain(completion({"content": [part]})))
    with pytest.raises(ModelReplyShapeError, match="'hologram'"):
        ask(llm, mode, streamed=streamed)
    assert len(openai_server.requests) == 1


# 8. SSE as its spec defines it.

SSE_BODIES = {
    # A byte order mark before the first event.
    "bom": b"\xef\xbb\xbf"
    + sse(
        chunk({"role": "assistant", "content": "Hi "}),
        chunk({"content": "there."}),
        chunk(finish="stop"),
    ),
    # One event's data over several lines: joined with newlines, it is one JSON object.
    "multiline_data": (
        b'data: {"choices": [{"index": 0,\ndata:  "delta": {"content": "Hi there."},\n'
        b'data: "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'
    ),
    # Every field the spec has, comments, and a value without the space after the colon.
    "fields_and_comments": (
        b": keep-alive\n\nretry: 3000\nid: 1\nevent: message\n"
        b'data:{"choices": [{"index": 0, "delta": {"content": "Hi "}}]}\n\n'
        b": ping\nid: 2\ndata\n\n"
        b'data: {"choices": [{"index": 0, "delta": {"content": "there."}, '
        b'"finish_reason": "stop"}]}\n\n'
        b"data: [DONE]\n\n"
    ),
    # Lines ended by a lone CR, as old Mac servers end them, and by CRLF.
    "cr_endings": sse(*text_chunks("Hi ", "there."), chunk(finish="stop")).replace(b"\n", b"\r"),
    "crlf_endings": sse(*text_chunks("Hi ", "there."), chunk(finish="stop")).replace(
        b"\n", b"\r\n"
    ),
    # Events ended by one newline instead of a blank line, as some servers send them.
    "single_newlines": sse(*text_chunks("Hi ", "there."), chunk(finish="stop")).replace(
        b"\n\n", b"\n"
    ),
}


@pytest.mark.parametrize("name", sorted(SSE_BODIES))
def test_sse_as_the_spec_defines_it(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, name: str
) -> None:
    openai_server.push(raw_reply(SSE_BODIES[name]))
    message, pieces = ask(llm, mode, streamed=True)
    assert message.content == "".join(pieces) == "Hi there."
    assert message.response_meta is not None
    assert message.response_meta.finish_reason == "stop"
    assert len(openai_server.requests) == 1


def test_events_are_read_as_events_whatever_the_content_type_says(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    body = sse(*text_chunks("Hi ", "there."), chunk(finish="stop"))
    openai_server.push(raw_reply(body, "application/json"))
    message, pieces = ask(llm, mode, streamed=True)
    assert message.content == "".join(pieces) == "Hi there."


def escaped(event: dict[str, Any]) -> str:
    """The event's SSE line with every non-ASCII character escaped, as JSON.stringify and
    Jackson escape them: an astral character becomes two \\uXXXX surrogates."""
    return f"data: {json.dumps(event, ensure_ascii=True)}\n\n"


def test_a_surrogate_pair_split_across_events_is_one_character(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    # JSON text escapes: "\ud83d" in one event and "\ude00" in the next.
    high, low = "\\ud83d", "\\ude00"
    events = [
        'data: {"choices": [{"index": 0, "delta": {"content": "Hi ' + high + '"}}]}\n\n',
        'data: {"choices": [{"index": 0, "delta": {"content": "' + low + ' there"}}]}\n\n',
        'data: {"choices": [{"index": 0, "delta": {"reasoning_content": "' + high + '"}}]}\n\n',
        'data: {"choices": [{"index": 0, "delta": {"reasoning_content": "' + low + '"}}]}\n\n',
        'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", '
        '"function": {"name": "echo", "arguments": "{\\"text\\": \\"' + high + '"}}]}}]}\n\n',
        'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, '
        '"function": {"arguments": "' + low + '\\"}"}}]}}]}\n\n',
        # A lone surrogate never paired: it cannot be sent on, so it is replaced.
        'data: {"choices": [{"index": 0, "delta": {"content": "!' + high + '"}}]}\n\n',
        escaped(chunk(finish="tool_calls")),
    ]
    openai_server.push(stream(*events), "the next reply")

    message, pieces = ask(llm, mode, streamed=True)

    assert message.content == "".join(pieces) == "Hi 😀 there!\ufffd"
    assert pieces == ["Hi ", "😀 there", "!", "\ufffd"]  # the pair handed over whole
    assert message.reasoning_content == "😀"
    assert json.loads(message.tool_calls[0].function.arguments) == {"text": "😀"}
    # The reply goes into the next request, which must not crash on it.
    follow_up = [Message.user("question"), message, Message.tool("ok", "c1")]
    assert llm.generate(follow_up).content == "the next reply"
    sent = openai_server.chat_requests()[1].body["messages"][1]
    assert sent["content"] == "Hi 😀 there!\ufffd"


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_line_separators_inside_json_strings_do_not_split_events(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, streamed: bool
) -> None:
    # U+2028, U+0085 and form feeds are line breaks to str.splitlines, not to SSE or JSON.
    text = "one\u2028two\x85three\x0cfour\x1cfive"
    if streamed:
        events = [*text_chunks(text), chunk(finish="stop")]
        body = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
        openai_server.push(raw_reply((body + "data: [DONE]\n\n").encode()))
    else:
        body = json.dumps(completion({"content": text}), ensure_ascii=False)
        openai_server.push(raw_reply(body.encode(), "application/json"))
    message, _ = ask(llm, mode, streamed=streamed)
    assert message.content == text


def test_an_error_event_is_reported_with_the_servers_message(
    openai_server: OpenAIServer, make_openai, mode: Mode
) -> None:
    llm = make_openai(max_attempts=1)
    openai_server.push(
        stream(
            *text_chunks("Hi "),
            'event: error\ndata: {"error": {"message": "overloaded, try again"}}\n\n',
            done=False,
        )
    )
    with pytest.raises(ModelResponseError, match="overloaded, try again"):
        ask(llm, mode, streamed=True)


def test_a_plain_body_with_a_bom_and_a_lone_surrogate_is_read(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    body = '{"choices": [{"index": 0, "message": {"role": "assistant", "content": "a\\ud83d"}}]}'
    openai_server.push(raw_reply(b"\xef\xbb\xbf" + body.encode(), "application/json"))
    message, _ = ask(llm, mode, streamed=False)
    assert message.content == "a\ufffd"


def test_a_lone_surrogate_in_a_tool_calls_type_is_read_as_valid_text(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    call = {"id": "c1", "type": "\\ud83dfunction", "function": {"name": "f", "arguments": "{}"}}
    body = json.dumps(completion({"content": None, "tool_calls": [call]}, "tool_calls"))
    openai_server.push(raw_reply(body.replace("\\\\", "\\").encode(), "application/json"))
    message, _ = ask(llm, mode, streamed=False)
    assert message.tool_calls[0].type == "\ufffdfunction"
    json.dumps(message.to_dict()).encode("utf-8")  # sendable in the next request


def test_a_body_that_is_no_stream_at_all_says_what_it_was(
    openai_server: OpenAIServer, make_openai, mode: Mode
) -> None:
    llm = make_openai(max_attempts=1)
    openai_server.push(raw_reply(b"<html><body>Bad gateway</body></html>", "text/html"))
    with pytest.raises(ModelResponseError, match="Bad gateway"):
        ask(llm, mode, streamed=True)


# 9. The rest of each class.


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_reasoning_under_either_field_name(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, streamed: bool
) -> None:
    if streamed:
        openai_server.push(
            stream(
                chunk({"role": "assistant", "content": None, "reasoning": "Let me "}),
                # vLLM sends both names with the same text in each delta: once is enough.
                chunk({"reasoning": "think.", "reasoning_content": "think."}),
                chunk({"content": "42"}),
                chunk(finish="stop"),
            )
        )
    else:
        openai_server.push(plain(completion({"content": "42", "reasoning": "Let me think."})))
    message, _ = ask(llm, mode, streamed=streamed)
    assert (message.content, message.reasoning_content) == ("42", "Let me think.")


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_tool_calls_with_null_content_null_id_and_empty_arguments(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, streamed: bool
) -> None:
    call = {"id": None, "type": "function", "function": {"name": "clock", "arguments": ""}}
    if streamed:
        openai_server.push(
            stream(
                chunk({"role": "assistant", "content": None}),
                chunk({"content": None, "tool_calls": [{"index": 0, **call}]}),
                chunk(finish="tool_calls"),
            )
        )
    else:
        openai_server.push(plain(completion({"content": None, "tool_calls": [call]}, "tool_calls")))
    message, _ = ask(llm, mode, streamed=streamed)
    assert message.content == ""
    assert message.tool_calls == [ToolCall("", FunctionCall("clock", "{}"))]


@pytest.mark.parametrize("finish", ["length", "content_filter"])
@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_why_a_reply_stopped_is_visible(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, finish: str, streamed: bool
) -> None:
    if streamed:
        openai_server.push(stream(*text_chunks("The answer is"), chunk(finish=finish)))
    else:
        openai_server.push(plain(completion({"content": "The answer is"}, finish)))
    message, _ = ask(llm, mode, streamed=streamed)
    assert message.content == "The answer is"
    assert message.response_meta is not None
    assert message.response_meta.finish_reason == finish


def test_chunks_without_choices_carry_usage_or_nothing(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    openai_server.push(
        stream(
            {"id": "x", "object": "chat.completion.chunk", "prompt_filter_results": []},
            {"id": "x", "choices": [], "usage": None},
            *text_chunks("ok"),
            chunk(finish="stop"),
            {"id": "x", "choices": [], "usage": USAGE},
            # A trailing chunk of zeros, as some servers send, must not wipe the counts.
            {"id": "x", "choices": [], "usage": dict.fromkeys(USAGE, 0)},
        )
    )
    message, _ = ask(llm, mode, streamed=True)
    assert message.content == "ok"
    assert message.response_meta is not None and message.response_meta.usage is not None
    assert message.response_meta.usage.total_tokens == 8


@pytest.mark.parametrize(
    "reply",
    [
        plain({"id": "x", "object": "chat.completion", "usage": USAGE}),
        plain({"id": "x", "choices": [], "usage": USAGE}),
        stream({"id": "x", "choices": [], "usage": USAGE}),
    ],
    ids=["plain_missing", "plain_empty", "streamed_empty"],
)
def test_a_reply_without_any_choice_is_a_shape_error(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, reply: Raw
) -> None:
    openai_server.push(reply)
    with pytest.raises(ModelReplyShapeError, match="choice"):
        ask(llm, mode, streamed=b"text/event-stream" in reply.data)
    assert len(openai_server.requests) == 1


WRONG_TYPES: dict[str, tuple[dict[str, Any], str]] = {
    "content_number": ({"content": 5}, "content"),
    "tool_calls_not_a_list": ({"tool_calls": {"id": "c1"}}, "tool_calls"),
    "function_not_an_object": ({"tool_calls": [{"id": "c1", "function": "clock"}]}, "function"),
    "name_not_text": ({"tool_calls": [{"id": "c1", "function": {"name": 7}}]}, "name"),
}


@pytest.mark.parametrize("name", sorted(WRONG_TYPES))
@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_field_of_the_wrong_type_is_a_shape_error_naming_it(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, name: str, streamed: bool
) -> None:
    fields, field = WRONG_TYPES[name]
    if streamed:
        openai_server.push(stream(chunk(fields), chunk(finish="stop")))
    else:
        openai_server.push(plain(completion(fields)))
    with pytest.raises(ModelReplyShapeError, match=field):
        ask(llm, mode, streamed=streamed)
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_unreadable_metadata_is_left_out_rather_than_failing_the_reply(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, streamed: bool
) -> None:
    usage = {"prompt_tokens": "many", "completion_tokens": 2.0, "completion_tokens_details": []}
    if streamed:
        openai_server.push(
            stream(*text_chunks("ok"), chunk(finish=7), {"choices": [], "usage": usage})  # type: ignore[arg-type]
        )
    else:
        openai_server.push(plain(completion({"content": "ok"}, 7, usage=usage)))  # type: ignore[arg-type]
    message, _ = ask(llm, mode, streamed=streamed)
    assert message.content == "ok"
    assert message.response_meta is not None
    assert message.response_meta.finish_reason is None
    assert message.response_meta.usage is not None
    assert message.response_meta.usage.prompt_tokens == 0
    assert message.response_meta.usage.completion_tokens == 2


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_json_nested_deeper_than_the_parser_goes_is_a_chainkit_error(
    openai_server: OpenAIServer, make_openai, mode: Mode, streamed: bool
) -> None:
    llm = make_openai(max_attempts=1)
    deep = "[" * 100_000 + "]" * 100_000
    if streamed:
        body = f'data: {{"choices": [{{"index": 0, "delta": {{"content": {deep}}}}}]}}\n\n'
        openai_server.push(raw_reply(body.encode()))
    else:
        body = f'{{"choices": [{{"index": 0, "message": {{"content": {deep}}}}}]}}'
        openai_server.push(raw_reply(body.encode(), "application/json"))
    with pytest.raises(ModelResponseError, match="not valid JSON"):
        ask(llm, mode, streamed=streamed)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_body_whose_content_encoding_is_wrong_is_a_chainkit_error(
    openai_server: OpenAIServer, make_openai, mode: Mode, streamed: bool
) -> None:
    llm = make_openai(max_attempts=1)
    body = sse(*text_chunks("Hi"), chunk(finish="stop")) if streamed else b'{"choices": []}'
    openai_server.push(raw_reply(body, headers={"Content-Encoding": "gzip"}))
    with pytest.raises(ModelError, match=r"(?i)decod|decompress"):
        ask(llm, mode, streamed=streamed)


@pytest.mark.parametrize("header", ["retry-after-ms", "Retry-After"])
def test_a_retry_after_that_is_not_a_number_waits_nothing(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, header: str
) -> None:
    openai_server.fail(Fault.http(429, headers={header: "nan"}))
    openai_server.push("after the wait")
    assert ask(llm, mode, streamed=False)[0].content == "after the wait"


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_message_that_is_not_valid_unicode_is_refused_with_a_chainkit_error(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode, streamed: bool
) -> None:
    messages = [Message.user("broken \ud83d text")]
    options: dict[str, Any] = {"streaming_func": lambda _: None} if streamed else {}
    with pytest.raises(ModelRequestError, match=r"'\\ud83d'.*lone surrogate"):
        mode.generate(llm, messages, **options)
    assert openai_server.requests == []


def test_several_choices_asked_for_through_extra_body_are_refused_too(
    openai_server: OpenAIServer, llm: OpenAI, mode: Mode
) -> None:
    with pytest.raises(ModelConfigError, match="n=3"):
        ask(llm, mode, streamed=False, extra_body={"n": 3})
    assert openai_server.requests == []
