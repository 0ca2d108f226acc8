"""OpenAI backend: requests and replies, over real HTTP to the loopback server."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
import warnings

import pytest

from chainkit.callbacks import Handler
from chainkit.llms.errors import ModelConfigError
from chainkit.llms.openai.chat import OpenAI
from chainkit.llms.openai.embeddings import OpenAIEmbeddings
from chainkit.schema import FunctionCall, Message, TokenUsage, ToolCall, ToolInfo
from chainkit.schema.message import ResponseMeta
from tests.support.openai_server import TEST_API_KEY, Call, OpenAIServer, Reply, embedding_of

USAGE = TokenUsage(
    prompt_tokens=11, completion_tokens=7, total_tokens=18, reasoning_tokens=3, cached_tokens=2
)
SERVED = ("loopback-model", "chatcmpl-loopback")
"""The model and response id the loopback server names in its replies."""
WEATHER = ToolInfo(
    "weather",
    "Current weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CLOCK = ToolInfo("clock", "The current time")

REPLIES = {
    "text": Reply("The answer is 42, as always."),
    "tool_calls": Reply(
        "",
        tool_calls=[
            Call("weather", '{"city": "Paris"}', id="call_a"),
            Call("clock", "{}", id="call_b"),
        ],
    ),
    "text_and_tool_call": Reply("Let me check.", tool_calls=[Call("weather", '{"city": "Oslo"}')]),
    "reasoning": Reply("Yes.", reasoning_content="The user asks; I think it over."),
    "no_usage": Reply("short", usage=None),
    "truncated_arguments": Reply(
        "", tool_calls=[Call("weather", '{"city": "San Fr')], finish_reason="length"
    ),
    "unicode": Reply("随机数是 1024 🎲, ok", chunk_size=3),
    "no_finish_reason": Reply(
        "Some servers never say why they stopped.", sends_finish_reason=False
    ),
    "tool_calls_without_index": Reply(
        "",
        tool_calls=[
            Call("weather", '{"city": "Paris"}', id="call_a"),
            Call("clock", '{"zone": "CET"}', id="call_b"),
        ],
        tool_call_index="omitted",
    ),
    # A server bug: parallel calls all numbered 0 in the stream, told apart by their ids.
    "tool_calls_all_at_index_zero": Reply(
        "",
        tool_calls=[
            Call("weather", '{"city": "Paris"}', id="call_a"),
            Call("clock", '{"zone": "CET"}', id="call_b"),
        ],
        tool_call_index="zero",
    ),
    "tool_calls_in_one_chunk": Reply(
        "Both at once.",
        tool_calls=[
            Call("weather", '{"city": "Paris"}', id="call_a"),
            Call("clock", "{}", id="call_b"),
        ],
        tool_calls_in_one_chunk=True,
    ),
}


def ask(text: str = "hi") -> list[Message]:
    return [Message.user(text)]


def test_plain_completion(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    openai_server.push("Hello from the server")

    reply = openai_llm.generate([Message.system("Be brief."), Message.user("Say hello")])

    assert reply == Message.assistant(
        "Hello from the server", response_meta=ResponseMeta("stop", USAGE, *SERVED)
    )
    (request,) = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {TEST_API_KEY}"
    assert request.body["model"] == "loopback-model"
    assert request.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
    ]
    assert "stream" not in request.body


def test_options_pass_through_and_server_only_options_reach_the_server_in_extra_body(
    openai_server: OpenAIServer, make_openai
) -> None:
    llm = make_openai(temperature=0.5, extra_body={"top_k": 3}, max_tokens=99)
    openai_server.push("ok")

    llm.generate(
        ask(),
        stop=["\nObservation:", "END"],
        temperature=0.1,
        top_p=0.9,
        seed=7,
        model="other-model",
        presence_penalty=0.2,
        extra_body={"min_p": 0.05, "repetition_penalty": 1.1},
        max_tokens=None,  # None means "not set": the default from the constructor stays
        callbacks=Handler(),
    )

    body = openai_server.requests[0].body
    assert body["stop"] == ["\nObservation:", "END"]
    assert body["temperature"] == 0.1  # the call's option wins over the default
    assert body["top_p"] == 0.9
    assert body["seed"] == 7
    assert body["model"] == "other-model"
    assert body["max_tokens"] == 99
    assert body["presence_penalty"] == 0.2
    assert body["repetition_penalty"] == 1.1  # an option only this server understands
    assert body["min_p"] == 0.05
    assert "extra_body" not in body
    assert "callbacks" not in body


def test_a_default_stop_word_may_be_one_string(openai_server: OpenAIServer, make_openai) -> None:
    openai_server.push("ok", "ok")
    llm = make_openai(stop="END")
    llm.generate(ask())
    llm.generate(ask(), stop=["HALT"])
    assert [r.body["stop"] for r in openai_server.requests] == [["END"], ["HALT"]]


def test_options_left_out_are_not_sent(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    openai_server.push("ok")
    openai_llm.generate(ask())
    assert set(openai_server.requests[0].body) == {"model", "messages"}


def test_conversation_with_tool_calls_is_sent_in_wire_shape(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    call = ToolCall("call_1", FunctionCall("weather", '{"city": "Paris"}'), index=0)
    messages = [
        Message.system("sys"),
        Message.user("Weather in Paris?"),
        Message.assistant("", [call], reasoning_content="not sent"),
        Message.tool("sunny", "call_1", "weather"),
    ]
    openai_server.push("It is sunny.")

    openai_llm.generate(messages)

    assert openai_server.requests[0].body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
    ]


def test_tools_are_sent_and_tool_calls_parsed(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(REPLIES["tool_calls"])

    reply = openai_llm.generate(ask("Weather and time?"), tools=[WEATHER, CLOCK])

    assert openai_server.requests[0].body["tools"] == [WEATHER.to_dict(), CLOCK.to_dict()]
    assert reply.content == ""
    assert reply.tool_calls == [
        ToolCall("call_a", FunctionCall("weather", '{"city": "Paris"}')),
        ToolCall("call_b", FunctionCall("clock", "{}")),
    ]
    assert reply.response_meta == ResponseMeta("tool_calls", USAGE, *SERVED)


def test_reasoning_content_is_kept(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    openai_server.push(REPLIES["reasoning"], REPLIES["reasoning"])
    plain = openai_llm.generate(ask())
    streamed = openai_llm.generate(ask(), streaming_func=lambda _: None)
    assert (
        plain.reasoning_content == streamed.reasoning_content == "The user asks; I think it over."
    )
    assert plain.content == streamed.content == "Yes."


def test_malformed_tool_arguments_are_returned_as_sent(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(REPLIES["truncated_arguments"], REPLIES["truncated_arguments"])
    for reply in (
        openai_llm.generate(ask(), tools=[WEATHER]),
        openai_llm.generate(ask(), tools=[WEATHER], streaming_func=lambda _: None),
    ):
        assert reply.tool_calls[0].function.arguments == '{"city": "San Fr'
        assert reply.response_meta is not None
        assert reply.response_meta.finish_reason == "length"


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_streamed_reply_equals_plain_reply(
    openai_server: OpenAIServer, openai_llm: OpenAI, name: str
) -> None:
    reply = REPLIES[name]
    openai_server.push(reply, reply)
    pieces: list[str] = []

    plain = openai_llm.generate(ask(), tools=[WEATHER, CLOCK])
    streamed = openai_llm.generate(ask(), tools=[WEATHER, CLOCK], streaming_func=pieces.append)

    assert streamed == plain
    # Each delta handed over as sent: nothing merged, nothing empty, nothing lost.
    size = reply.chunk_size
    assert pieces == [reply.content[i : i + size] for i in range(0, len(reply.content), size)]


def test_a_stream_without_finish_reason_is_complete_at_done(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    reply = REPLIES["no_finish_reason"]
    openai_server.push(reply, reply)

    plain = openai_llm.generate(ask())
    streamed = openai_llm.generate(ask(), streaming_func=lambda _: None)

    assert (
        streamed
        == plain
        == Message.assistant(reply.content, response_meta=ResponseMeta(None, USAGE, *SERVED))
    )
    assert len(openai_server.requests) == 2  # neither was retried


def test_tool_call_deltas_are_joined_however_the_server_numbers_them(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    expected = [
        ToolCall("call_a", FunctionCall("weather", '{"city": "Paris"}')),
        ToolCall("call_b", FunctionCall("clock", '{"zone": "CET"}')),
    ]
    calls = [
        Call("weather", '{"city": "Paris"}', id="call_a"),
        Call("clock", '{"zone": "CET"}', id="call_b"),
    ]
    openai_server.push(
        Reply("", tool_calls=calls, tool_call_index="omitted", chunk_size=3),
        Reply("", tool_calls=calls, tool_calls_in_one_chunk=True),
        Reply("", tool_calls=calls, tool_calls_in_one_chunk=True, tool_call_index="omitted"),
    )
    for _ in range(3):
        reply = openai_llm.generate(ask(), tools=[WEATHER, CLOCK], streaming_func=lambda _: None)
        assert reply.tool_calls == expected


def test_per_call_request_options_reach_headers_query_and_body(
    openai_server: OpenAIServer, make_openai
) -> None:
    llm = make_openai()
    openai_server.push("plain", "streamed")
    options = {
        "extra_headers": {"X-Tenant": "tenant-7", "X-Api-Token": "token-not-for-the-body"},
        "extra_query": {"api-version": "2024-06-01"},
        "extra_body": {"min_p": 0.05, "top_k": 2},
        "timeout": 3,
    }

    llm.generate(ask(), **options)
    llm.generate(ask(), streaming_func=lambda _: None, **options)

    for request in openai_server.requests:
        assert request.headers["x-tenant"] == "tenant-7"
        assert request.headers["x-api-token"] == "token-not-for-the-body"
        assert request.query == {"api-version": "2024-06-01"}
        assert request.body["min_p"] == 0.05
        assert request.body["top_k"] == 2
        assert not {"extra_headers", "extra_query", "extra_body", "timeout"} & set(request.body)
        assert "token-not-for-the-body" not in str(request.body)


def test_default_request_options_reach_the_headers_like_any_default(
    openai_server: OpenAIServer, make_openai
) -> None:
    llm = make_openai(extra_headers={"X-Default": "d"})
    openai_server.push("default", "replaced")

    llm.generate(ask())
    llm.generate(ask(), extra_headers={"X-Call": "c"})  # a call's option replaces the default

    first, second = openai_server.requests
    assert first.headers["x-default"] == "d"
    assert (second.headers["x-call"], "x-default" in second.headers) == ("c", False)
    assert "extra_headers" not in first.body


def test_stream_request_asks_for_usage(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    openai_server.push("streamed")
    reply = openai_llm.generate(ask(), streaming_func=lambda _: None)
    body = openai_server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert reply.response_meta == ResponseMeta("stop", USAGE, *SERVED)


def test_stream_hands_text_over_as_it_arrives(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    # The server stops after the first piece until the callback has seen it: a client that
    # buffered would leave the server waiting until its pause timed out.
    openai_server.push(Reply("first second third", chunk_size=6, pause_after=1))
    seen: list[str] = []

    def on_text(text: str) -> None:
        seen.append(text)
        openai_server.resume.set()

    reply = openai_llm.generate(ask(), streaming_func=on_text)

    assert openai_server.resumed == [True]
    assert "".join(seen) == reply.content == "first second third"


def test_streaming_func_chunks_reach_the_callbacks_too(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    class Chunks(Handler):
        def __init__(self) -> None:
            self.chunks: list[str] = []

        def handle_streaming_func(self, chunk: str) -> None:
            self.chunks.append(chunk)

    handler = Chunks()
    openai_server.push(Reply("abcdefgh", chunk_size=4))
    openai_llm.generate(ask(), streaming_func=lambda _: None, callbacks=handler)
    assert handler.chunks == ["abcd", "efgh"]


def test_one_connection_is_reused_across_calls(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("one", "two", "three")
    for _ in range(3):
        openai_llm.generate(ask())
    assert len({r.client_port for r in openai_server.requests}) == 1


def test_environment_fallbacks(openai_server: OpenAIServer, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-123")
    openai_server.push("ok")

    llm = OpenAI()
    llm.generate(ask())

    (request,) = openai_server.requests
    assert request.body["model"] == "env-model"
    assert request.headers["authorization"] == "Bearer sk-from-the-environment-123"
    assert llm.base_url == openai_server.base_url
    llm.close()


def test_base_url_without_key_works(openai_server: OpenAIServer, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    openai_server.push("ok")

    llm = OpenAI(base_url=openai_server.base_url)

    assert llm.generate(ask()).content == "ok"
    assert openai_server.requests[0].headers["authorization"] == "Bearer not-needed"
    assert openai_server.requests[0].body["model"] == "gpt-4o-mini"
    assert "api_key=None" in repr(llm)
    llm.close()


def test_neither_key_nor_base_url_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for make in (OpenAI, OpenAIEmbeddings):
        with pytest.raises(ModelConfigError) as caught:
            make()
        assert "OPENAI_API_KEY" in str(caught.value)
        assert "OPENAI_BASE_URL" in str(caught.value)


def test_repr_shows_model_and_url_and_masks_the_key(openai_server: OpenAIServer) -> None:
    llm = OpenAI("m", base_url=openai_server.base_url, api_key=TEST_API_KEY)
    embeddings = OpenAIEmbeddings(base_url=openai_server.base_url, api_key=TEST_API_KEY)
    assert repr(llm) == f"OpenAI(model='m', base_url='{openai_server.base_url}', api_key='sk-l***')"
    for text in (repr(llm), str(llm), repr(embeddings), str(embeddings)):
        assert TEST_API_KEY not in text
        assert "sk-l***" in text


def test_importing_and_constructing_loads_no_heavy_dependency() -> None:
    code = textwrap.dedent(
        """
        import sys
        import chainkit.llms, chainkit.llms.openai.chat, chainkit.llms.openai.embeddings
        chainkit.llms.openai.chat.OpenAI(base_url="http://127.0.0.1:9/v1")
        print(sorted(m for m in ("openai", "tenacity", "httpx2", "asyncio") if m in sys.modules))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# Async twins.


def test_async_plain_and_streamed(openai_server: OpenAIServer, openai_llm: OpenAI, arun) -> None:
    reply = REPLIES["text_and_tool_call"]
    openai_server.push(reply, reply)
    pieces: list[str] = []

    async def run() -> tuple[Message, Message]:
        plain = await openai_llm.agenerate(ask(), tools=[WEATHER])
        streamed = await openai_llm.agenerate(ask(), tools=[WEATHER], streaming_func=pieces.append)
        return plain, streamed

    plain, streamed = arun(openai_llm, run())

    assert plain == streamed
    assert plain.content == "Let me check."
    assert plain.tool_calls == [ToolCall("call_0", FunctionCall("weather", '{"city": "Oslo"}'))]
    assert pieces == ["Let ", "me c", "heck", "."]
    assert openai_server.requests[0].body["tools"] == [WEATHER.to_dict()]


def test_async_client_works_across_event_loops(
    openai_server: OpenAIServer, openai_llm: OpenAI, arun
) -> None:
    openai_server.push("first loop", "second loop")
    # The first loop ends with the client's connections still open: unusable in the next loop,
    # whose call must open its own.
    first = asyncio.run(openai_llm.agenerate(ask()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # the first loop's sockets, reclaimed
        second = arun(openai_llm, openai_llm.agenerate(ask()))
        gc.collect()
    assert (first.content, second.content) == ("first loop", "second loop")
    assert len({r.client_port for r in openai_server.requests}) == 2


# Embeddings.


def make_embeddings(server: OpenAIServer, **overrides) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(base_url=server.base_url, api_key=TEST_API_KEY, **overrides)


def test_embeddings_are_batched_and_kept_in_order(openai_server: OpenAIServer) -> None:
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    embeddings = make_embeddings(openai_server, model="embed-small", batch_size=2)

    vectors = embeddings.embed_documents(texts)

    # The server lists each batch's vectors in reverse; the index puts them back in order.
    assert vectors == [embedding_of(t) for t in texts]
    assert [r.path for r in openai_server.requests] == ["/v1/embeddings"] * 3
    assert [r.body["input"] for r in openai_server.requests] == [
        ["alpha", "beta"],
        ["gamma", "delta"],
        ["epsilon"],
    ]
    assert {r.body["model"] for r in openai_server.requests} == {"embed-small"}
    assert {r.body["encoding_format"] for r in openai_server.requests} == {"float"}
    embeddings.close()


def test_embed_query_and_empty_input(openai_server: OpenAIServer) -> None:
    embeddings = make_embeddings(openai_server)
    assert embeddings.embed_query("hello") == embedding_of("hello")
    assert embeddings.embed_documents([]) == []
    assert len(openai_server.requests) == 1
    embeddings.close()


def test_embed_documents_refuses_a_bare_string(openai_server: OpenAIServer, arun) -> None:
    embeddings = make_embeddings(openai_server)
    with pytest.raises(TypeError, match="embed_query"):
        embeddings.embed_documents("hello")
    with pytest.raises(TypeError, match="aembed_query"):
        arun(embeddings, embeddings.aembed_documents("hello"))
    assert openai_server.requests == []
    embeddings.close()


def test_async_embeddings(openai_server: OpenAIServer, arun) -> None:
    embeddings = make_embeddings(openai_server, batch_size=3)
    texts = [f"text {i}" for i in range(7)]

    async def run() -> tuple[list[list[float]], list[float]]:
        return await embeddings.aembed_documents(texts), await embeddings.aembed_query("question")

    vectors, query = arun(embeddings, run())

    assert vectors == [embedding_of(t) for t in texts]
    assert query == embedding_of("question")
    assert [len(r.body["input"]) for r in openai_server.requests] == [3, 3, 1, 1]


def test_repr_hides_credentials_in_the_base_url() -> None:
    secret = "sk-proj-SECRETSECRETSECRET"
    llm = OpenAI(
        "m", base_url=f"http://user:{secret}@127.0.0.1:8/v1?api-key={secret}", api_key=secret
    )
    assert repr(llm) == "OpenAI(model='m', base_url='http://127.0.0.1:8/v1', api_key='sk-p***')"


def test_models_are_context_managers(openai_server: OpenAIServer) -> None:
    openai_server.push("sync reply", "async reply")
    with OpenAI("m", base_url=openai_server.base_url) as llm:
        assert llm.generate([Message.user("q")]).content == "sync reply"
    assert llm._connection._client is None  # closed on exit

    async def main() -> str:
        async with OpenAI("m", base_url=openai_server.base_url) as allm:
            return (await allm.agenerate([Message.user("q")])).content

    assert asyncio.run(main()) == "async reply"


def test_models_pickle_without_their_clients(openai_server: OpenAIServer) -> None:
    import pickle

    openai_server.push("before", "after")
    llm = OpenAI("m", base_url=openai_server.base_url)
    assert llm.generate([Message.user("q")]).content == "before"
    clone = pickle.loads(pickle.dumps(llm))
    assert clone.generate([Message.user("q")]).content == "after"
    llm.close()
    clone.close()


def test_repr_keeps_ipv6_brackets() -> None:
    assert "base_url='http://[::1]:8000/v1'" in repr(OpenAI("m", base_url="http://[::1]:8000/v1"))
