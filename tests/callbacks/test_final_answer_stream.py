"""FinalAnswerStream over event lists and async streams built here: which way of iterating
each kind of stream allows, what a bad stream is told, and that a reply's end forgets it.
(tests/chains/test_stream.py runs it over real runs.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable

import pytest

from chainkit.callbacks import Event, FinalAnswerStream, HandlerTypeError
from chainkit.callbacks.events import EventKind


def event(kind: EventKind, data: dict[str, object], run_id: str = "r1") -> Event:
    return Event(kind, run_id, "root", "llm", "m", data, 0.0)


def tokens(*texts: str, run_id: str = "r1") -> list[Event]:
    return [event("token", {"text": text}, run_id) for text in texts]


async def as_async(events: Iterable[Event]) -> AsyncIterator[Event]:
    for each in events:
        await asyncio.sleep(0)
        yield each


def collect_async(stream: FinalAnswerStream) -> list[str]:
    async def consume() -> list[str]:
        return [text async for text in stream]

    return asyncio.run(consume())


REPLY = tokens("Thought: sure\nFinal Ans", "wer: 4", "2")


def test_async_for_reads_a_sync_stream_too():
    assert collect_async(FinalAnswerStream(REPLY)) == ["4", "2"]


def test_async_for_reads_an_async_stream():
    assert collect_async(FinalAnswerStream(as_async(REPLY))) == ["4", "2"]


def test_for_over_an_async_stream_says_to_use_async_for():
    stream = FinalAnswerStream(as_async(REPLY))
    with pytest.raises(HandlerTypeError) as raised:
        list(stream)
    assert str(raised.value) == "these events are async: iterate with `async for`"


@pytest.mark.parametrize("events", [3, None, object()])
def test_what_is_no_stream_is_refused_by_its_type(events):
    with pytest.raises(HandlerTypeError) as raised:
        FinalAnswerStream(events)
    assert str(raised.value) == (
        "FinalAnswerStream reads the events of chains.stream or chains.astream, got "
        f"{type(events).__name__}"
    )


@pytest.mark.parametrize("end", ["llm_end", "llm_error"])
def test_a_reply_that_ended_is_forgotten(end):
    """The beginning of the keyword in an ended reply never joins text that comes after it,
    even under the same run id."""
    events = [*tokens("Final "), event(end, {}), *tokens("Answer: no")]
    assert list(FinalAnswerStream(events)) == []


@pytest.mark.parametrize("end", ["llm_end", "llm_error"])
def test_a_reply_without_tokens_may_end(end):
    """A model that does not stream ends its run with no token before."""
    events = [event(end, {}, run_id="quiet"), *tokens("Final Answer: yes")]
    assert list(FinalAnswerStream(events)) == ["yes"]


def test_other_events_between_tokens_change_nothing():
    kinds: list[EventKind] = ["llm_start", "chain_start", "tool_start", "tool_end", "chain_end"]
    events = [*tokens("Final "), *(event(kind, {}) for kind in kinds), *tokens("Answer: 7")]
    assert list(FinalAnswerStream(events)) == ["7"]


def test_the_first_keyword_of_a_reply_decides_where_the_answer_starts():
    events = tokens("Final Answer: say Final Answer: twice")
    assert list(FinalAnswerStream(events)) == ["say Final Answer: twice"]
