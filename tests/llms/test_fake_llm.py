import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from chainkit import llms
from chainkit.callbacks import Handler
from chainkit.llms import FakeLLM
from chainkit.llms.errors import FakeLLMExhaustedError
from chainkit.schema import FunctionCall, Message, ToolCall, ToolInfo
from tests.support.event_recorder import EventRecorder


def seen(events: EventRecorder) -> list[tuple[Any, ...]]:
    """The model's events as these tests read them."""
    return events.described(
        {
            "llm_start": lambda messages, options: (
                "start",
                [m.content for m in messages],
                options,
            ),
            "llm_end": lambda message: ("end", message.content),
            "llm_error": lambda error: ("error", type(error).__name__),
            "streaming_func": lambda chunk: ("chunk", chunk),
        }
    )


def test_returns_responses_in_order_and_records_calls():
    call = ToolCall("c1", FunctionCall("f", "{}"))
    fake = FakeLLM(["one", Message.assistant("", [call])])
    info = ToolInfo("f", "does f")
    first = fake.generate([Message.user("a")], stop=["\nObservation:"], temperature=0.2)
    second = fake.generate([Message.user("b")], tools=[info])
    assert first.content == "one" and first.role == "assistant"
    assert second.tool_calls == [call]
    assert [c.messages[0].content for c in fake.calls] == ["a", "b"]
    assert fake.calls[0].options["stop"] == ["\nObservation:"]
    assert fake.calls[0].options["temperature"] == 0.2
    assert fake.calls[1].options["tools"] == [info]


def test_streams_in_small_chunks():
    chunks: list[str] = []
    reply = FakeLLM(["Final Answer: 1024"], chunk_size=4).generate(
        [Message.user("q")], streaming_func=chunks.append
    )
    assert chunks == ["Fina", "l An", "swer", ": 10", "24"]
    assert "".join(chunks) == reply.content


def test_exhausted_raises_clear_error():
    fake = FakeLLM(["only"])
    fake.generate([Message.user("q")])
    with pytest.raises(FakeLLMExhaustedError, match="1 scripted response and was called 2 times"):
        fake.generate([Message.user("q")])


def test_invalid_chunk_size():
    with pytest.raises(ValueError, match="chunk_size"):
        FakeLLM([], chunk_size=0)


def test_llms_call_sends_one_user_message():
    fake = FakeLLM(["hi there"])
    assert llms.call(fake, "hello", max_tokens=5) == "hi there"
    assert fake.calls[0].messages == [Message.user("hello")]
    assert fake.calls[0].options["max_tokens"] == 5
    assert asyncio.run(llms.acall(FakeLLM(["async hi"]), "hello")) == "async hi"


def test_base_model_fires_llm_callbacks_and_streams_to_handler(events):
    user_chunks: list[str] = []
    FakeLLM(["abcdef"], chunk_size=3).generate(
        [Message.user("q")], stop=["X"], callbacks=events, streaming_func=user_chunks.append, seed=1
    )
    assert seen(events)[0] == ("start", ["q"], {"stop": ["X"], "seed": 1})
    assert seen(events)[1:] == [("chunk", "abc"), ("chunk", "def"), ("end", "abcdef")]
    assert user_chunks == ["abc", "def"]


def test_base_model_fires_error_and_reraises(events):
    with pytest.raises(FakeLLMExhaustedError):
        FakeLLM([]).generate([Message.user("q")], callbacks=events)
    assert seen(events)[-1] == ("error", "FakeLLMExhaustedError")


def test_async_generate_fires_callbacks(events):
    reply = asyncio.run(FakeLLM(["x"]).agenerate([Message.user("q")], callbacks=events))
    assert reply.content == "x"
    assert [e[0] for e in seen(events)] == ["start", "end"]


def test_fake_llm_satisfies_model_protocol():
    assert isinstance(FakeLLM([]), llms.Model)
    assert isinstance(llms.OfflineModel(), llms.Model)


def test_concurrent_calls_each_get_their_own_response():
    import sys
    from concurrent.futures import ThreadPoolExecutor

    fake = FakeLLM([str(i) for i in range(400)])
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        with ThreadPoolExecutor(16) as pool:
            replies = list(
                pool.map(lambda _: fake.generate([Message.user("q")]).content, range(400))
            )
    finally:
        sys.setswitchinterval(interval)
    assert sorted(replies, key=int) == [str(i) for i in range(400)]


def test_async_streaming_func_is_refused():
    async def on_chunk(chunk: str) -> None:
        pass

    with pytest.raises(TypeError, match="streaming_func must be a plain function"):
        FakeLLM(["x"]).generate([Message.user("q")], streaming_func=on_chunk)  # type: ignore[arg-type]


class BrokenStart(Handler):
    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        raise RuntimeError("handler bug")


def test_failed_sync_call_fires_llm_error(events):
    with pytest.raises(FakeLLMExhaustedError) as raised:
        FakeLLM([]).generate([Message.user("hi")], callbacks=events)
    assert events.heard("llm_error") == [("llm_error", raised.value)]


def test_raw_handler_raising_in_llm_start_does_not_break_the_call():
    reply = FakeLLM(["ok"]).generate([Message.user("hi")], callbacks=BrokenStart())
    assert reply.content == "ok"


def test_llm_start_options_show_stop_as_list_and_tools_by_name(events):
    infos = [ToolInfo("alpha", "first"), ToolInfo("beta", "second")]
    FakeLLM(["ok"]).generate(
        [Message.user("hi")], stop=("\nObservation:", "END"), tools=infos, callbacks=events
    )
    [(_, _, options)] = events.heard("llm_start")
    assert options["stop"] == ["\nObservation:", "END"]
    assert type(options["stop"]) is list
    assert options["tools"] == ["alpha", "beta"]


def test_fake_llm_records_a_copy_of_the_messages():
    fake = FakeLLM(["ok"])
    messages = [Message.user("first")]
    fake.generate(messages)
    messages.append(Message.user("added later"))
    messages[0] = Message.user("replaced")
    assert fake.calls[0].messages == [Message.user("first")]
