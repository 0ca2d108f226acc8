"""FinalAnswerStream over event lists and async streams built here: which way of iterating
each kind of stream allows, what a bad stream is told, and that a reply's end forgets it; and
over real runs: the answer the run returns, for every form of it the MRKL parser reads and for
a tool-calling agent, and a restart when a retried model call writes another answer.
(tests/chains/test_stream.py runs it over more real runs.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit import agents, chains, tools
from chainkit.callbacks import AnswerRestart, Event, FinalAnswerStream
from chainkit.callbacks.errors import HandlerTypeError
from chainkit.callbacks.events import EventKind
from chainkit.callbacks.final_answer import Piece
from chainkit.llms import FakeLLM, OpenAI
from chainkit.llms.model import BaseModel, ModelRequest
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.openai_server import OpenAIServer
from tests.support.retried_stream import ANSWER, BROKEN_REPLY, break_then_answer, mrkl_executor


def event(kind: EventKind, data: dict[str, object], run_id: str = "r1") -> Event:
    return Event(kind, run_id, "root", "llm", "m", data, 0.0)


def tokens(*texts: str, run_id: str = "r1") -> list[Event]:
    return [event("token", {"text": text}, run_id) for text in texts]


async def as_async(events: Iterable[Event]) -> AsyncIterator[Event]:
    for each in events:
        await asyncio.sleep(0)
        yield each


def collect_async(stream: FinalAnswerStream) -> list[Piece]:
    async def consume() -> list[Piece]:
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


def test_events_of_other_runs_between_tokens_change_nothing():
    kinds: list[EventKind] = ["chain_start", "tool_start", "tool_end", "chain_end"]
    others = [event(kind, {}, run_id=f"other {kind}") for kind in kinds]
    events = [*tokens("Final "), *others, *tokens("Answer: 7")]
    assert list(FinalAnswerStream(events)) == ["7"]


def test_the_first_keyword_of_a_reply_decides_where_the_answer_starts():
    events = tokens("Final Answer: say Final Answer: twice")
    assert list(FinalAnswerStream(events)) == ["say Final Answer: twice"]


# --- Over real runs --------------------------------------------------------------------------


def pieces_of_run(executor: agents.Executor) -> tuple[list[Piece], str]:
    """What FinalAnswerStream yields over a stream of the run, and the answer the run returns."""
    events: list[Event] = []

    def kept() -> Iterator[Event]:
        for each in chains.stream(executor, "q"):
            events.append(each)
            yield each

    pieces = list(FinalAnswerStream(kept()))
    return pieces, events[-1].data["outputs"]["output"]


def mrkl(*replies: str, chunk_size: int = 3) -> agents.Executor:
    llm = FakeLLM(list(replies), chunk_size=chunk_size)
    return agents.Executor(agents.OneShotAgent(llm, [tools.Calculator()]))


ACTION = "Thought: I need the final answer first\nAction: calculator\nAction Input: 6*7"
# Final answers in every form the MRKL parser reads, and what comes around them.
_FINAL_KEYWORDS = st.sampled_from(
    [
        "Final Answer:",
        "**Final Answer:**",
        "**Final Answer**:",
        "Final answer:",
        "final answer :",
        "Final Answer：",
        "The final answer is:",
        "> Final Answer:",
        "I know it now. Final Answer:",
    ]
)
_ANSWER_TEXT = st.lists(
    st.sampled_from(
        [
            "It is 42.",
            " ",
            "\n",
            "The reason",
            "the",
            "*",
            "```",
            "```python\nprint(1)\n```",
            "Observation: made up",
            "Action: calculator\nAction Input: 1",
            "Final Answer: again",
            "İ",
            "：",
            "final",
        ]
    ),
    max_size=8,
).map("".join)
_BEFORE = st.sampled_from(
    ["", "Thought: I now know the final answer\n", "Thought: the final answer is near.\n"]
)


@settings(max_examples=150, deadline=None)
@given(before=_BEFORE, keyword=_FINAL_KEYWORDS, answer=_ANSWER_TEXT, chunk=st.integers(1, 9))
def test_the_pieces_add_up_to_the_answer_the_run_returns(before, keyword, answer, chunk):
    reply = f"{before}{keyword} {answer}"
    pieces, returned = pieces_of_run(mrkl(ACTION, reply, chunk_size=chunk))
    assert all(isinstance(piece, str) and piece for piece in pieces)
    assert "".join(map(str, pieces)) == returned


def test_the_answer_streams_while_the_reply_is_written():
    reply = "Thought: done\n**Final Answer:** It is 42, as the calculator said."
    pieces, returned = pieces_of_run(mrkl(ACTION, reply, chunk_size=4))
    assert "".join(map(str, pieces)) == returned == "It is 42, as the calculator said."
    assert len(pieces) > 5


def test_a_thought_that_mentions_the_final_answer_before_an_action_yields_nothing_of_it():
    pieces, returned = pieces_of_run(mrkl(ACTION, "Final Answer: 42"))
    assert "".join(map(str, pieces)) == returned == "42"


class AnswersAfterOneTool(BaseModel):
    """A model calling tools natively: one call to the calculator, then `answer` as text."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def _generate(self, request: ModelRequest) -> Message:
        if request.messages[-1].role == "tool":
            reply = Message.assistant(self.answer)
        else:
            call = ToolCall("call_1", FunctionCall("calculator", '{"expression": "6*7"}'))
            reply = Message.assistant("Let me compute. Final Answer: soon", tool_calls=[call])
        if request.streaming_func is not None:
            request.streaming_func(reply.content)
        return reply


def test_a_tool_calling_agents_answer_is_the_text_of_its_reply_that_calls_no_tool():
    answer = "It is 42.\nFinal Answer: not a keyword here"
    agent = agents.ToolCallingAgent(AnswersAfterOneTool(answer), [tools.Calculator()])
    pieces, returned = pieces_of_run(agents.Executor(agent))
    assert returned == answer
    assert pieces == [answer]


class AgentTool(tools.Tool):
    """A tool that runs an agent of its own, whose answer is not the run's."""

    name = "helper"
    description = "asks another agent"

    def call(self, input: str) -> str:
        return chains.run(mrkl("Final Answer: the helper's answer"), input)


def test_agents_run_by_tools_are_not_followed():
    llm = FakeLLM(["Action: helper\nAction Input: x", "Final Answer: mine"], chunk_size=5)
    executor = agents.Executor(agents.OneShotAgent(llm, [AgentTool()]))
    pieces, returned = pieces_of_run(executor)
    assert "".join(map(str, pieces)) == returned == "mine"


@pytest.mark.timeout(60)
def test_a_retry_that_writes_another_answer_restarts_it_sync_and_async(
    openai_server: OpenAIServer, openai_llm: OpenAI, arun
):
    # The first attempt streams "Final Answer: The answer is 85, " and breaks; the retry says
    # "It is 84.": what was yielded is withdrawn, and the pieces after it are the answer.
    executor = mrkl_executor(openai_llm)
    break_then_answer(openai_server)
    pieces = list(FinalAnswerStream(chains.stream(executor, "q")))
    assert AnswerRestart("The answer is 85,") in pieces
    restart = pieces.index(AnswerRestart("The answer is 85,"))
    assert "".join(map(str, pieces[:restart])) == "The answer is 85,"
    assert "".join(map(str, pieces[restart + 1 :])) == ANSWER

    async def consume() -> list[Piece]:
        return [piece async for piece in FinalAnswerStream(chains.astream(executor, "q"))]

    break_then_answer(openai_server)
    assert arun(openai_llm, consume()) == pieces


@pytest.mark.timeout(60)
def test_a_retry_that_writes_the_same_answer_goes_on_where_it_broke(
    openai_server: OpenAIServer, openai_llm: OpenAI
):
    break_then_answer(openai_server, reply=BROKEN_REPLY)
    pieces = list(FinalAnswerStream(chains.stream(mrkl_executor(openai_llm), "q")))
    assert "".join(map(str, pieces)) == "The answer is 85, I believe."
