"""An agent never "succeeds" with an empty answer taken from a reply it could not use.

At a limit, `early_stopping_method="generate"` asks for a final answer without offering tools;
a reply that still calls tools, or holds no text, raises NotFinishedError carrying the steps
(as "force" does). In the loop, a ToolCallingAgent reply with neither text nor a tool call is
a parse error, as an empty MRKL reply is: raised, or sent back with a ParserErrorHandler.
"""

import pytest

from chainkit.agents import (
    Executor,
    NotFinishedError,
    OneShotAgent,
    OutputParserError,
    ParserErrorHandler,
    ToolCallingAgent,
)
from chainkit.agents.tool_calling import FINAL_ANSWER_REQUEST
from chainkit.llms import FakeLLM
from chainkit.schema import FunctionCall, Message, ToolCall
from chainkit.schema.message import ResponseMeta
from tests.support.stub_tools import Echo


def echo_reply(call_id="c1", text=""):
    return Message.assistant(text, [ToolCall(call_id, FunctionCall("echo", '{"input": "x"}'))])


def tool_calling(replies, **options):
    fake = FakeLLM(replies)
    agent = ToolCallingAgent(fake, [Echo()], system_prompt="")
    return Executor(agent, max_iterations=1, early_stopping_method="generate", **options), fake


def mrkl(replies, **options):
    fake = FakeLLM(replies)
    executor = Executor(
        OneShotAgent(fake, [Echo()]), max_iterations=1, early_stopping_method="generate", **options
    )
    return executor, fake


# --- ToolCallingAgent at a limit ---------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["", "Let me check once more."], ids=["no text", "with text"])
def test_a_final_reply_that_calls_tools_is_not_an_answer(mode, text):
    executor, fake = tool_calling([echo_reply("c1"), echo_reply("c2", text)])
    with pytest.raises(NotFinishedError, match="called echo instead") as caught:
        mode.run(executor, "q")
    assert [step.observation for step in caught.value.steps] == ["echo: x"]
    final_request = fake.calls[1]
    assert final_request.options["tools"] is None  # no tools offered for the final answer
    assert final_request.messages[-1] == Message.user(FINAL_ANSWER_REQUEST)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("empty", ["", " \n\t"])
def test_a_final_reply_without_text_is_not_an_answer(mode, empty):
    length_cut = Message.assistant(
        empty, reasoning_content="thinking…", response_meta=ResponseMeta("length")
    )
    executor, _ = tool_calling([echo_reply(), length_cut])
    with pytest.raises(NotFinishedError, match=r"no text \(finish_reason 'length'\)") as caught:
        mode.run(executor, "q")
    assert len(caught.value.steps) == 1


@pytest.mark.timeout(60)
def test_a_final_reply_with_text_is_the_answer(mode):
    executor, _ = tool_calling([echo_reply(), "北京晴"])
    assert mode.run(executor, "q") == "北京晴"


@pytest.mark.timeout(60)
def test_many_tool_names_in_a_final_reply_are_cut_in_the_error(mode):
    calls = [ToolCall(f"c{i}", FunctionCall("x" * 100 + str(i), "{}")) for i in range(50)]
    executor, _ = tool_calling([echo_reply(), Message.assistant("", calls)])
    with pytest.raises(NotFinishedError) as caught:
        mode.run(executor, "q")
    assert len(str(caught.value)) < 400


# --- ToolCallingAgent in the loop ------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("empty", ["", "   "])
def test_a_reply_with_neither_text_nor_calls_is_a_parse_error(mode, empty):
    executor = Executor(ToolCallingAgent(FakeLLM([empty]), [Echo()]))
    with pytest.raises(OutputParserError, match="neither text nor a tool call"):
        mode.run(executor, "q")


@pytest.mark.timeout(60)
def test_an_empty_reply_is_sent_back_with_a_parser_error_handler(mode):
    fake = FakeLLM(["", "the answer"])
    agent = ToolCallingAgent(fake, [Echo()], system_prompt="")
    executor = Executor(agent, error_handler=ParserErrorHandler())
    assert mode.run(executor, "q") == "the answer"
    [question, feedback] = fake.calls[1].messages
    assert question == Message.user("q")
    assert feedback.role == "user" and "neither text nor a tool call" in feedback.content


# --- OneShotAgent at a limit -------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "final",
    [Message.assistant(""), Message.assistant("\n  "), echo_reply()],
    ids=["empty", "blank", "native tool call"],
)
def test_a_mrkl_final_reply_holding_no_answer_raises(mode, final):
    executor, _ = mrkl([" x\nAction: echo\nAction Input: a", final])
    with pytest.raises(NotFinishedError, match="asked for a final answer") as caught:
        mode.run(executor, "q")
    assert [step.observation for step in caught.value.steps] == ["echo: a"]


@pytest.mark.timeout(60)
def test_a_mrkl_final_reply_that_is_an_action_is_returned_whole_as_langchain_does(mode):
    executor, _ = mrkl([" x\nAction: echo\nAction Input: a", "Action: echo\nAction Input: b"])
    assert mode.run(executor, "q") == "Action: echo\nAction Input: b"


@pytest.mark.timeout(60)
def test_an_empty_mrkl_reply_in_the_loop_stays_a_parse_error(mode):
    executor = Executor(OneShotAgent(FakeLLM([""]), [Echo()]))
    with pytest.raises(OutputParserError):
        mode.run(executor, "q")
