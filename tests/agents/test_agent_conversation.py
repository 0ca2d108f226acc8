"""The conversation an agent sends is the conversation that happened: every assistant turn,
every history item in a form it understands, or a clear error naming the item."""

import asyncio
from types import MappingProxyType

import pytest

from chainkit import chains
from chainkit.agents import Executor, OneShotAgent, ToolCallingAgent
from chainkit.llms import FakeLLM
from chainkit.memory import ConversationBuffer
from chainkit.prompts import (
    ChatPromptTemplate,
    MessagesPlaceholder,
    PromptError,
    PromptTemplate,
)
from chainkit.prompts.placeholder import to_messages
from chainkit.schema import AgenticMessage, FunctionCall, Message, ToolCall
from tests.support.stub_tools import Echo


def echo_call(call_id, text):
    return ToolCall(call_id, FunctionCall("echo", f'{{"input": "{text}"}}'))


def run_both(make_executor, inputs):
    """Runs a fresh executor sync, then another async; returns both models' recorded calls."""
    executor, sync_fake = make_executor()
    sync_out = chains.call(executor, inputs)
    executor, async_fake = make_executor()
    async_out = asyncio.run(asyncio.wait_for(chains.acall(executor, inputs), 5))
    assert sync_out == async_out
    return sync_fake.calls, async_fake.calls


# --- the same reply object on two turns -------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("calls_per_reply", [1, 2])
def test_the_same_reply_object_twice_is_sent_as_two_assistant_turns(calls_per_reply):
    # A cache or a scripted model hands back the very same Message on two turns.
    reply = Message.assistant("", [echo_call(f"c{i}", f"x{i}") for i in range(calls_per_reply)])

    def make():
        fake = FakeLLM([reply, reply, "done"])
        return Executor(ToolCallingAgent(fake, [Echo()], system_prompt="")), fake

    for calls in run_both(make, {"input": "q"}):
        tool_turn = [Message.tool(f"echo: x{i}", f"c{i}", "echo") for i in range(calls_per_reply)]
        assert calls[2].messages == [Message.user("q"), reply, *tool_turn, reply, *tool_turn]


def test_one_reply_with_several_calls_is_one_assistant_turn():
    reply = Message.assistant("two", [echo_call("a", "1"), echo_call("b", "2")])
    other = Message.assistant("one more", [echo_call("c", "3")])
    fake = FakeLLM([reply, other, "done"])
    chains.run(Executor(ToolCallingAgent(fake, [Echo()], system_prompt="")), "q")
    assert [m.role for m in fake.calls[2].messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]


# --- history in the forms LangChain users write -----------------------------------------------

HISTORY_FORMS = [
    ("Message", Message.user("hi"), [Message.user("hi")]),
    ("human pair", ("human", "hi"), [Message.user("hi")]),
    ("ai pair", ("ai", "hello"), [Message.assistant("hello")]),
    ("user pair", ("user", "hi"), [Message.user("hi")]),
    ("assistant pair", ("assistant", "hello"), [Message.assistant("hello")]),
    ("system pair", ("system", "be brief"), [Message.system("be brief")]),
    ("developer pair", ("developer", "be brief"), [Message.system("be brief")]),
    ("list pair", ["human", "嗨"], [Message.user("嗨")]),
    ("openai dict", {"role": "user", "content": "hi"}, [Message.user("hi")]),
    ("langchain dict", {"type": "ai", "content": "hello"}, [Message.assistant("hello")]),
    ("mapping", MappingProxyType({"role": "user", "content": "hi"}), [Message.user("hi")]),
    (
        "dict with tool calls",
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
            ],
        },
        [Message.assistant("", [ToolCall("c1", FunctionCall("echo", "{}"))])],
    ),
    (
        "tool dict",
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
        [Message("tool", "42", tool_call_id="c1")],
    ),
    ("agentic", AgenticMessage.user("hi"), [Message.user("hi")]),
]


@pytest.mark.parametrize(
    ("item", "expected"), [f[1:] for f in HISTORY_FORMS], ids=[f[0] for f in HISTORY_FORMS]
)
def test_each_history_form_is_understood_by_placeholder_and_agent_alike(item, expected):
    for container in (list, tuple):
        history = container([Message.system("first"), item])
        want = [Message.system("first"), *expected]
        assert to_messages(history, "history") == want
        assert MessagesPlaceholder("history").messages({"history": history}) == want
        agent = ToolCallingAgent(FakeLLM([]), [Echo()], system_prompt="")
        sent = agent.messages([], {"input": "q", "history": history})
        assert sent == [*want, Message.user("q")]


def test_message_items_are_passed_on_as_they_are():
    first = Message.user("hi")
    assert to_messages([first, ("ai", "x")], "history")[0] is first


@pytest.mark.timeout(60)
def test_pairs_and_dicts_reach_the_model_through_the_executor_sync_and_async():
    history = (("human", "my name is 李雷"), {"role": "assistant", "content": "hello 李雷"})

    def make():
        fake = FakeLLM(["your name is 李雷"])
        return Executor(ToolCallingAgent(fake, [Echo()], system_prompt="")), fake

    for calls in run_both(make, {"input": "who am I?", "history": history}):
        assert calls[0].messages == [
            Message.user("my name is 李雷"),
            Message.assistant("hello 李雷"),
            Message.user("who am I?"),
        ]


BAD_ITEMS = [
    ("int", 5, TypeError, r"history\[1\] is a int"),
    ("bare str", "hi", TypeError, r"history\[1\] is a str.*\('user', text\)"),
    ("triple", ("user", "hi", "extra"), TypeError, r"history\[1\] is a tuple of 3 items"),
    ("role not a str", (1, "hi"), TypeError, r"history\[1\] is a tuple"),
    ("unknown role", ("bot", "hi"), ValueError, r"history\[1\] has role 'bot'; expected one of"),
    ("unicode role", ("人类", "hi"), ValueError, r"history\[1\] has role '人类'"),
    ("dict without role", {"content": "hi"}, ValueError, r"history\[1\] has role None"),
    ("tool pair", ("tool", "42"), ValueError, r"history\[1\].*tool_call_id"),
    ("tool dict without id", {"role": "tool", "content": "42"}, ValueError, r"tool_call_id"),
    ("pair content", ("user", 5), TypeError, r"history\[1\].*must be a str or a list.*int"),
    ("nested list", [Message.user("a"), Message.user("b")], TypeError, r"history\[1\] is a list"),
    ("none item", None, TypeError, r"history\[1\] is a NoneType"),
]


@pytest.mark.parametrize(
    ("item", "error", "message"), [b[1:] for b in BAD_ITEMS], ids=[b[0] for b in BAD_ITEMS]
)
def test_an_item_not_understood_is_named_by_index_and_type_everywhere(item, error, message):
    history = [Message.user("fine"), item]
    with pytest.raises(error, match=message):
        to_messages(history, "history")
    with pytest.raises(PromptError, match=message) as caught:
        MessagesPlaceholder("history").messages({"history": history})
    assert caught.value.variable == "history"
    agent = ToolCallingAgent(FakeLLM([]), [Echo()], system_prompt="")
    with pytest.raises(error, match=message):
        agent.messages([], {"input": "q", "history": history})


@pytest.mark.parametrize("history", [{"role": "user", "content": "hi"}, Message.user("hi"), 42])
def test_a_history_that_is_not_a_list_is_refused_not_dropped(history):
    agent = ToolCallingAgent(FakeLLM([]), [Echo()], system_prompt="")
    kind = type(history).__name__
    with pytest.raises(TypeError, match=f"history must be a list or tuple of messages, got {kind}"):
        agent.messages([], {"input": "q", "history": history})


@pytest.mark.timeout(60)
def test_a_bad_history_item_fails_the_run_before_the_model_is_called_sync_and_async():
    fake = FakeLLM(["never"])
    executor = Executor(ToolCallingAgent(fake, [Echo()]))
    inputs = {"input": "q", "history": [("human", "hi"), object()]}
    with pytest.raises(TypeError, match=r"history\[1\] is a object"):
        chains.call(executor, inputs)
    with pytest.raises(TypeError, match=r"history\[1\] is a object"):
        asyncio.run(chains.acall(executor, inputs))
    assert fake.calls == []


def test_text_and_absent_history_still_work():
    agent = ToolCallingAgent(FakeLLM([]), [Echo()], system_prompt="")
    assert agent.messages([], {"input": "q"}) == [Message.user("q")]
    assert agent.messages([], {"input": "q", "history": ""}) == [Message.user("q")]
    assert agent.messages([], {"input": "q", "history": None}) == [Message.user("q")]
    assert agent.messages([], {"input": "q", "history": []}) == [Message.user("q")]


# --- OneShotAgent's history -----------------------------------------------------------------


def mrkl_with_history(prompt_kind):
    if prompt_kind == "text":
        return OneShotAgent(
            FakeLLM([" Final Answer: a", " Final Answer: b"]),
            [Echo()],
            suffix="History: {history}\nQuestion: {input}\n{agent_scratchpad}",
        )
    prompt = ChatPromptTemplate(
        [
            ("system", "Tools: {tool_names}"),
            MessagesPlaceholder("history"),
            ("user", "{input}\n{agent_scratchpad}"),
        ]
    )
    return OneShotAgent(FakeLLM([" Final Answer: a", " Final Answer: b"]), [Echo()], prompt=prompt)


@pytest.mark.timeout(60)
def test_message_history_in_a_text_mrkl_prompt_is_refused_not_pasted_as_a_repr(mode):
    agent = mrkl_with_history("text")
    executor = Executor(agent, memory=ConversationBuffer(return_messages=True))
    with pytest.raises(
        TypeError, match=r"OneShotAgent's prompt is text.*'history'.*MessagesPlaceholder"
    ):
        mode.run(executor, "hi")
    assert agent.llm.calls == []


@pytest.mark.timeout(60)
def test_pairs_in_a_chat_mrkl_prompt_reach_the_model(mode):
    agent = mrkl_with_history("chat")
    inputs = {"input": "q", "history": [("human", "hi"), ("ai", "hello")]}
    mode.call(Executor(agent), inputs)
    sent = agent.llm.calls[0].messages
    assert sent[1:3] == [Message.user("hi"), Message.assistant("hello")]


def test_text_history_in_a_text_mrkl_prompt_is_unchanged():
    agent = mrkl_with_history("text")
    executor = Executor(agent, memory=ConversationBuffer())
    chains.run(executor, "hi")
    chains.run(executor, "again")
    assert "History: Human: hi\nAI: a\nQuestion: again" in agent.llm.calls[1].messages[0].content


def test_a_text_prompt_still_takes_text_variables():
    prompt = PromptTemplate.from_template("{input} {extra}\n{agent_scratchpad}")
    fake = FakeLLM([" Final Answer: ok"])
    chains.call(Executor(OneShotAgent(fake, [Echo()], prompt=prompt)), {"input": "q", "extra": "x"})
    assert fake.calls[0].messages[0].content.startswith("q x")
