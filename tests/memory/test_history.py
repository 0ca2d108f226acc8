"""The ChatHistory contract, on the in-memory history."""

from __future__ import annotations

import asyncio

import pytest

from chainkit import memory
from chainkit.memory.errors import MemoryTypeError, MemoryValueError
from chainkit.schema import FunctionCall, ImagePart, Message, TextPart, ToolCall
from tests.support.together import in_threads


def _exchange(n: int) -> list[Message]:
    return [Message.user(f"q{n}"), Message.assistant(f"a{n}")]


def test_sessions_keep_their_own_messages_in_order() -> None:
    history = memory.InMemoryHistory()
    assert isinstance(history, memory.ChatHistory)
    assert history.messages("a") == [] and history.sessions() == []
    history.append("a", _exchange(1))
    history.append("b", _exchange(9))
    history.append("a", _exchange(2))
    assert history.messages("a") == _exchange(1) + _exchange(2)
    assert history.messages("a", last=3) == _exchange(1)[1:] + _exchange(2)
    assert history.messages("a", last=0) == []
    assert history.messages("a", last=99) == _exchange(1) + _exchange(2)
    assert history.sessions() == ["a", "b"]
    history.clear("a")
    history.clear("never")
    assert history.sessions() == ["b"] and history.messages("a") == []
    assert repr(history) == "InMemoryHistory(1 session)"


def test_a_loaded_list_is_a_copy() -> None:
    history = memory.InMemoryHistory()
    history.append("s", _exchange(1))
    history.messages("s").clear()
    assert history.messages("s") == _exchange(1)


def test_rich_messages_come_back_as_they_went_in() -> None:
    history = memory.InMemoryHistory()
    call = ToolCall(id="call_1", function=FunctionCall("lookup", '{"q": "x"}'))
    rich = [
        Message.user([TextPart("look"), ImagePart(url="https://example.com/a.png")], name="ann"),
        Message.assistant("", tool_calls=[call]),
        Message.tool("found", tool_call_id="call_1", tool_name="lookup"),
    ]
    history.append("s", rich)
    assert history.messages("s") == rich


@pytest.mark.parametrize("bad", [None, 3, b"x", ["s"]])
def test_a_session_id_of_the_wrong_type_is_named(bad: object) -> None:
    history = memory.InMemoryHistory()
    with pytest.raises(MemoryTypeError, match="session id must be a str"):
        history.messages(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "x" * 257])
def test_an_empty_or_overlong_session_id_is_refused(bad: str) -> None:
    history = memory.InMemoryHistory()
    with pytest.raises(MemoryValueError, match="session id"):
        history.append(bad, _exchange(1))
    history.append("x" * 256, _exchange(1))  # the longest allowed


def test_an_append_with_one_bad_message_keeps_none() -> None:
    history = memory.InMemoryHistory()
    with pytest.raises(MemoryTypeError, match=r"messages\[1\] must be a Message, got str"):
        history.append("s", [Message.user("q"), "a"])  # type: ignore[list-item]
    with pytest.raises(MemoryTypeError, match="sequence of Message"):
        history.append("s", Message.user("q"))  # type: ignore[arg-type]
    with pytest.raises(MemoryValueError, match="last must be >= 0"):
        history.messages("s", last=-1)
    with pytest.raises(MemoryTypeError, match="last must be an int"):
        history.messages("s", last=True)
    assert history.sessions() == []


def test_concurrent_appends_keep_each_call_together() -> None:
    history = memory.InMemoryHistory()

    def talk(worker: int) -> None:
        for turn in range(200):
            history.append("s", _exchange(worker * 1000 + turn))

    in_threads(talk, 8)
    messages = history.messages("s")
    assert len(messages) == 8 * 200 * 2
    for question, answer in zip(messages[::2], messages[1::2], strict=True):
        assert answer.content == "a" + question.content[1:]


def test_async_twins() -> None:
    history = memory.InMemoryHistory()

    async def main() -> list[Message]:
        await history.aappend("s", _exchange(1))
        return await history.amessages("s", last=1)

    assert asyncio.run(main()) == _exchange(1)[1:]
