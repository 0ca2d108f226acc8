"""chains.with_history: any chain or pipeline with a history per session."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from chainkit import chains, llms, memory, prompts
from chainkit.agents import Executor, OneShotAgent, ToolCallingAgent
from chainkit.chains.errors import ChainTypeError, ChainWiringError
from chainkit.memory.errors import MemoryKeyError, MemoryValueError
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.modes import Mode
from tests.support.stub_tools import Echo
from tests.support.together import in_threads


def _chat_prompt() -> prompts.ChatPromptTemplate:
    return prompts.ChatPromptTemplate(
        [("system", "Be brief."), prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )


def _contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


def test_two_sessions_interleaved_keep_their_own_conversations(mode: Mode) -> None:
    history = memory.InMemoryHistory()
    model = llms.FakeLLM(["a1", "b1", "a2", "b2"])
    chat = chains.with_history(_chat_prompt() | model | (lambda m: m.content), history)
    assert mode.run(chat.session("alice"), "I am Alice") == "a1"
    assert mode.run(chat.session("bob"), "I am Bob") == "b1"
    assert mode.run(chat.session("alice"), "who am I?") == "a2"
    assert mode.run(chat.session("bob"), "who am I?") == "b2"
    # Each call's prompt held its own session only, before the new question.
    assert _contents(model.calls[2].messages) == ["Be brief.", "I am Alice", "a1", "who am I?"]
    assert _contents(model.calls[3].messages) == ["Be brief.", "I am Bob", "b1", "who am I?"]
    assert _contents(history.messages("alice")) == ["I am Alice", "a1", "who am I?", "a2"]
    assert sorted(history.sessions()) == ["alice", "bob"]


def test_a_models_reply_is_kept_whole_with_its_tool_calls() -> None:
    history = memory.InMemoryHistory()
    call = ToolCall(id="c1", function=FunctionCall("clock", "{}"))
    reply = Message.assistant("let me look", tool_calls=[call])
    chat = chains.with_history(_chat_prompt() | llms.FakeLLM([reply, "later"]), history)
    chains.call(chat.session("s"), {"input": "time?"})
    assert history.messages("s") == [Message.user("time?"), reply]
    model = llms.FakeLLM(["ok"])
    chains.call(chains.with_history(_chat_prompt() | model, history).session("s"), {"input": "?"})
    assert model.calls[0].messages[1:3] == [Message.user("time?"), reply]


def test_a_text_prompt_gets_the_history_as_text(mode: Mode) -> None:
    history = memory.InMemoryHistory()
    prompt = prompts.PromptTemplate.from_template("{history}\nHuman: {input}\nAI:")
    model = llms.FakeLLM(["hello", "fine"])
    chat = chains.with_history(chains.LLMChain(prompt, model), history)
    mode.run(chat.session("s"), "hi")
    mode.run(chat.session("s"), "how are you")
    assert model.calls[1].messages[0].content == "Human: hi\nAI: hello\nHuman: how are you\nAI:"
    with pytest.raises(ChainWiringError, match=r"MessagesPlaceholder\('history'\)"):
        chains.with_history(chains.LLMChain(prompt, model), history, return_messages=True)


def test_a_failed_call_appends_nothing(mode: Mode) -> None:
    history = memory.InMemoryHistory()
    chat = chains.with_history(_chat_prompt() | llms.FakeLLM(["only one"]), history)
    mode.call(chat.session("s"), {"input": "first"})
    with pytest.raises(llms.errors.FakeLLMExhaustedError):
        mode.call(chat.session("s"), {"input": "second"})
    assert _contents(history.messages("s")) == ["first", "only one"]


def test_batch_and_stream_run_a_bound_chain() -> None:
    history = memory.InMemoryHistory()
    chat = chains.with_history(_chat_prompt() | llms.FakeLLM(["one", "two", "three"]), history)
    session = chat.session("s")
    chains.batch(session, [{"input": "q1"}, {"input": "q2"}], max_workers=1)
    events = list(chains.stream(session, {"input": "q3"}))
    assert events[-1].data["outputs"]["output"].content == "three"
    assert _contents(history.messages("s")) == ["q1", "one", "q2", "two", "q3", "three"]


def test_a_window_memory_shows_the_chain_only_the_end_of_the_session() -> None:
    history = memory.InMemoryHistory()
    model = llms.FakeLLM([f"a{n}" for n in range(4)])
    chat = chains.with_history(
        _chat_prompt() | model, history, memory=functools.partial(memory.ConversationWindow, k=1)
    )
    for n in range(4):
        chains.call(chat.session("s"), {"input": f"q{n}"})
    assert _contents(model.calls[-1].messages) == ["Be brief.", "q2", "a2", "q3"]
    assert len(history.messages("s")) == 8


def test_many_threads_on_one_session_keep_each_exchange_together() -> None:
    history = memory.InMemoryHistory()

    def answer(messages: list[Message]) -> str:
        return "re: " + messages[-1].content

    chat = chains.with_history(_chat_prompt() | (lambda ms: answer(ms)), history)

    def talk(worker: int) -> None:
        for turn in range(25):
            chains.call(chat.session("shared"), {"input": f"w{worker} t{turn}"})

    in_threads(talk, 8)
    messages = history.messages("shared")
    assert len(messages) == 8 * 25 * 2
    for question, reply in zip(messages[::2], messages[1::2], strict=True):
        assert (question.role, reply.role) == ("user", "assistant")
        assert reply.content == "re: " + question.content


def test_agents_keep_their_sessions(mode: Mode) -> None:
    history = memory.InMemoryHistory()
    tool_model = llms.FakeLLM(["first answer", "second answer"])
    tool_agent = chains.with_history(Executor(ToolCallingAgent(tool_model, [Echo()])), history)
    mode.run(tool_agent.session("t"), "hello")
    mode.run(tool_agent.session("t"), "again")
    assert _contents(tool_model.calls[1].messages)[-3:] == ["hello", "first answer", "again"]
    mrkl_model = llms.FakeLLM([" Final Answer: one", " Final Answer: two"])
    text_agent = OneShotAgent(
        mrkl_model, [Echo()], suffix="History: {history}\nQuestion: {input}\n{agent_scratchpad}"
    )
    mrkl = chains.with_history(Executor(text_agent), history)  # its text prompt gets text
    mode.run(mrkl.session("m"), "hi")
    mode.run(mrkl.session("m"), "and then")
    assert (
        "History: Human: hi\nAI: one\nQuestion: and then" in mrkl_model.calls[1].messages[0].content
    )


def test_a_chain_that_does_not_read_the_history_is_told_what_to_add() -> None:
    history = memory.InMemoryHistory()
    plain = prompts.ChatPromptTemplate([("user", "{input}")]) | llms.FakeLLM([])
    with pytest.raises(ChainWiringError, match=r"Add MessagesPlaceholder\('history'\)"):
        chains.with_history(plain, history)
    with pytest.raises(ChainWiringError, match="'chat'"):
        chains.with_history(_chat_prompt() | llms.FakeLLM([]), history, history_key="chat")
    own = chains.LLMChain(
        _chat_prompt(), llms.FakeLLM([]), memory=memory.ConversationBuffer(return_messages=True)
    )
    with pytest.raises(ChainWiringError, match="a memory of its own"):
        chains.with_history(own, history)


def test_wrong_arguments_are_named() -> None:
    history = memory.InMemoryHistory()
    chain = _chat_prompt() | llms.FakeLLM([])
    with pytest.raises(ChainTypeError, match="needs a ChatHistory"):
        chains.with_history(chain, {})  # type: ignore[arg-type]
    with pytest.raises(ChainTypeError, match="runs a chain"):
        chains.with_history(llms.FakeLLM([]), history)  # type: ignore[arg-type]
    with pytest.raises(MemoryValueError, match="session id"):
        chains.with_history(chain, history).session("")
    two_inputs = prompts.ChatPromptTemplate(
        [prompts.MessagesPlaceholder("history"), ("user", "{a} {b}")]
    ) | llms.FakeLLM([])
    with pytest.raises(MemoryKeyError, match=r"input_key"):
        chains.with_history(two_inputs, history)
    chains.with_history(two_inputs, history, input_key="a")


def test_a_bound_session_is_kept_for_its_summary() -> None:
    history = memory.InMemoryHistory()
    summariser = llms.FakeLLM([f"summary {n}" for n in range(4)])
    chat = chains.with_history(
        _chat_prompt() | llms.FakeLLM(["a", "b"]),
        history,
        memory=functools.partial(memory.ConversationSummary, summariser),
    )
    assert chat.session("s") is chat.session("s")
    chains.call(chat.session("s"), {"input": "q1"})
    chains.call(chat.session("s"), {"input": "q2"})
    assert "summary 0" in summariser.calls[1].messages[1].content  # built on the last one


def test_many_sessions_bound_keep_a_bounded_number(monkeypatch: Any) -> None:
    from chainkit.chains import history as module

    monkeypatch.setattr(module, "MAX_BOUND_SESSIONS", 3)
    chat = chains.with_history(_chat_prompt() | llms.FakeLLM([]), memory.InMemoryHistory())
    first = chat.session("s0")
    for n in range(1, 5):
        chat.session(f"s{n}")
    assert repr(chat) == "WithHistory(Pipeline, 3 bound sessions)"
    assert chat.session("s0") is not first


class _Recording(memory.InMemoryHistory):
    """Records which of its methods, sync or async, each call used."""

    def __init__(self) -> None:
        super().__init__()
        self.used: list[str] = []

    def messages(self, session_id: str, *, last: int | None = None) -> list[Message]:
        self.used.append("messages")
        return super().messages(session_id, last=last)

    def append(self, session_id: str, messages: Any) -> None:
        self.used.append("append")
        super().append(session_id, messages)

    async def amessages(self, session_id: str, *, last: int | None = None) -> list[Message]:
        self.used.append("amessages")
        return super().messages(session_id, last=last)

    async def aappend(self, session_id: str, messages: Any) -> None:
        self.used.append("aappend")
        super().append(session_id, messages)


@pytest.mark.parametrize(
    "made",
    [
        memory.ConversationBuffer,
        functools.partial(memory.ConversationWindow, k=2),
        memory.ConversationTokenWindow,
        lambda **settings: memory.ConversationSummaryBuffer(
            llms.FakeLLM(["s"] * 9), max_tokens=60, max_summary_tokens=20, **settings
        ),
    ],
    ids=["buffer", "window", "token-window", "summary-buffer"],
)
def test_an_async_call_reads_and_writes_the_history_with_its_async_methods(
    mode: Mode, made: Any
) -> None:
    history = _Recording()
    chat = chains.with_history(
        _chat_prompt() | llms.FakeLLM([f"answer {n} " * 5 for n in range(6)]), history, memory=made
    )
    for n in range(6):
        mode.call(chat.session("s"), {"input": f"question {n} " * 5})
    used = set(history.used)
    assert used == ({"amessages", "aappend"} if mode.is_async else {"messages", "append"})
    assert len(history.messages("s")) == 12


def test_a_batch_checks_its_items_without_reading_the_history(mode: Mode) -> None:
    history = _Recording()
    chat = chains.with_history(_chat_prompt() | llms.FakeLLM(["a", "b", "c"]), history)
    mode.batch(chat.session("s"), [{"input": f"q{n}"} for n in range(3)], max_workers=1)
    reads = history.used.count("amessages" if mode.is_async else "messages")
    assert reads == 3  # one a call, none to check the items first
    with pytest.raises(MemoryKeyError, match="cannot tell which input"):
        mode.batch(chat.session("s"), [{"input": "q"}, {"input": "q", "other": 1}])
    assert len(history.messages("s")) == 6


def test_an_async_stream_runs_a_bound_chain() -> None:
    import asyncio

    history = memory.InMemoryHistory()
    chat = chains.with_history(_chat_prompt() | llms.FakeLLM(["one", "two"]), history)

    async def main() -> list[Any]:
        first = [event async for event in chains.astream(chat.session("s"), {"input": "q1"})]
        await chains.acall(chat.session("s"), {"input": "q2"})
        return first

    events = asyncio.run(main())
    assert events[-1].data["outputs"]["output"].content == "one"
    assert _contents(history.messages("s")) == ["q1", "one", "q2", "two"]
