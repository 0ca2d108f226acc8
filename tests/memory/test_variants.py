"""The conversation memories besides the buffer: windows by exchanges and by tokens, summaries;
each kept in itself or in a ChatHistory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from chainkit import chains, llms, memory, prompts
from chainkit._tokens import message_tokens
from chainkit.memory.errors import MemoryKeyError, MemoryTypeError, MemoryValueError
from chainkit.schema import FunctionCall, ImagePart, Message, TextPart, ToolCall
from chainkit.schema.message import ContentPart
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode

Kept = Callable[..., Any]


def _in_itself(kind: Kept, **settings: Any) -> Any:
    return kind(**settings)


def _in_history(kind: Kept, **settings: Any) -> Any:
    return kind(history=memory.InMemoryHistory(), session_id="s", **settings)


WHERE = pytest.mark.parametrize("made", [_in_itself, _in_history], ids=["itself", "history"])


def _talk(kept: Any, turns: int, size: int = 1) -> None:
    for turn in range(turns):
        kept.save_context({"input": f"q{turn}" * size}, {"output": f"a{turn}" * size})


def _summariser(replies: int, text: str = "the user asked questions") -> llms.FakeLLM:
    return llms.FakeLLM([f"{text} ({n})" for n in range(replies)])


@WHERE
def test_the_window_shows_the_last_k_whole_exchanges(made: Callable[..., Any]) -> None:
    window = made(memory.ConversationWindow, k=2, return_messages=True)
    assert window.load_memory_variables({}) == {"history": []}
    _talk(window, 5)
    assert [m.content for m in window.load_memory_variables({})["history"]] == [
        "q3",
        "a3",
        "q4",
        "a4",
    ]
    assert len(window.messages) == 10  # only what is shown is bounded


@WHERE
def test_the_window_keeps_an_exchange_with_tool_calls_whole(made: Callable[..., Any]) -> None:
    window = made(memory.ConversationWindow, k=1, return_messages=True)
    call = ToolCall(id="c1", function=FunctionCall("clock", "{}"))
    window.save_context({"input": "q0"}, {"output": "a0"})
    answer = [
        Message.assistant("", tool_calls=[call]),
        Message.tool("12:00", tool_call_id="c1", tool_name="clock"),
        Message.assistant("noon"),
    ]
    window.save_context({"input": "what time is it"}, {"output": answer})
    shown = window.load_memory_variables({})["history"]
    assert [m.role for m in shown] == ["user", "assistant", "tool", "assistant"]
    assert shown[1].tool_calls == [call]
    window.return_messages = False
    assert window.buffer_text() == (
        "Human: what time is it\nAI: called clock({})\nTool (clock): 12:00\nAI: noon"
    )


def test_a_long_history_is_read_to_its_end_only_when_needed() -> None:
    history = memory.InMemoryHistory()
    history.append("s", [Message.user("q"), Message.assistant("a"), Message.assistant("more")])
    history.append("s", [Message.user("last"), Message.assistant("reply")])
    window = memory.ConversationWindow(k=2, history=history, session_id="s")
    assert window.buffer_text() == "Human: q\nAI: a\nAI: more\nHuman: last\nAI: reply"


@WHERE
def test_the_token_window_stays_under_its_bound(made: Callable[..., Any]) -> None:
    window = made(memory.ConversationTokenWindow, max_tokens=60, return_messages=True)
    for turn in range(30):
        window.save_context({"input": f"question {turn} " * 3}, {"output": f"answer {turn}"})
        shown = window.load_memory_variables({})["history"]
        assert message_tokens(shown) <= 60
        assert shown[-1].content == f"answer {turn}"  # the newest exchange is always shown
        assert shown[0].role == "user"  # whole exchanges only
    assert 2 <= len(shown) // 2 < 30


def test_the_token_window_counts_with_the_models_counter() -> None:
    counted: list[int] = []

    class Counting(llms.FakeLLM):
        def count_tokens(self, messages: Sequence[Message]) -> int:
            counted.append(len(messages))
            return 10 * len(messages)  # ten tokens a message, whatever it says

    window = memory.ConversationTokenWindow(max_tokens=45, llm=Counting([]))
    _talk(window, 4, size=50)  # long text: the estimate would keep none
    assert window.buffer_text().count("Human:") == 2
    assert counted
    by_function = memory.ConversationTokenWindow(max_tokens=45, count_tokens=lambda ms: 45)
    _talk(by_function, 3)
    assert by_function.buffer_text().count("Human:") == 1
    assert memory.ConversationTokenWindow(llm=object()).count_tokens is message_tokens


def test_an_exchange_larger_than_the_bound_is_not_shown() -> None:
    window = memory.ConversationTokenWindow(max_tokens=20)
    window.save_context({"input": "x" * 400}, {"output": "y"})
    assert window.buffer_text() == ""
    window.save_context({"input": "short"}, {"output": "ok"})
    assert window.buffer_text() == "Human: short\nAI: ok"


def test_a_counter_that_returns_no_count_is_named() -> None:
    window = memory.ConversationTokenWindow(count_tokens=lambda ms: "many")  # type: ignore[arg-type,return-value]
    _talk(window, 1)
    with pytest.raises(MemoryTypeError, match=r"must return a count.*'many'"):
        window.buffer_text()


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: memory.ConversationWindow(k=0), MemoryValueError, "k must be at least 1"),
        (lambda: memory.ConversationWindow(k="3"), MemoryTypeError, "k must be an int"),  # type: ignore[arg-type]
        (lambda: memory.ConversationTokenWindow(max_tokens=True), MemoryTypeError, "max_tokens"),
        (lambda: memory.ConversationTokenWindow(count_tokens=3), MemoryTypeError, "count_tokens"),  # type: ignore[arg-type]
        (lambda: memory.ConversationSummary("model"), MemoryTypeError, "needs a model"),
        (
            lambda: memory.ConversationSummary(llms.FakeLLM([]), max_summary_tokens=8),
            MemoryValueError,
            "max_summary_tokens must be at least 16",
        ),
        (
            lambda: memory.ConversationSummaryBuffer(
                llms.FakeLLM([]), max_tokens=100, max_summary_tokens=100
            ),
            MemoryValueError,
            r"max_tokens \(100\) must be more than max_summary_tokens \(100\)",
        ),
        (
            lambda: memory.ConversationWindow(session_id="s"),
            MemoryTypeError,
            "session_id but no history",
        ),
        (
            lambda: memory.ConversationBuffer(history=memory.InMemoryHistory()),
            MemoryTypeError,
            "give session_id",
        ),
        (
            lambda: memory.ConversationBuffer(history={}, session_id="s"),  # type: ignore[arg-type]
            MemoryTypeError,
            "history must be a ChatHistory",
        ),
        (
            lambda: memory.ConversationBuffer(history=memory.InMemoryHistory(), session_id=""),
            MemoryValueError,
            "session id must not be empty",
        ),
        (
            lambda: memory.ConversationBuffer(return_messages="yes"),  # type: ignore[arg-type]
            MemoryTypeError,
            "return_messages must be True or False",
        ),
    ],
)
def test_settings_that_cannot_work_are_named(
    build: Callable[[], Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        build()


@WHERE
def test_the_summary_folds_every_exchange_into_one_bounded_summary(
    made: Callable[..., Any],
) -> None:
    summariser = _summariser(3)
    summary = made(memory.ConversationSummary, llm=summariser, max_summary_tokens=64)
    assert summary.buffer_text() == ""
    _talk(summary, 2)
    assert summary.buffer_text() == (
        "System: Summary of the conversation so far:\nthe user asked questions (1)"
    )
    first, second = summariser.calls
    assert (
        "(none yet)" in first.messages[1].content
        and "Human: q0\nAI: a0" in first.messages[1].content
    )
    # Incremental: the second call gets the first summary and only the new exchange.
    assert "the user asked questions (0)" in second.messages[1].content
    assert (
        "q0" not in second.messages[1].content and "Human: q1\nAI: a1" in second.messages[1].content
    )
    assert second.options["max_tokens"] == 64
    assert len(summary.messages) == 4  # the conversation itself is all kept


def test_a_summary_longer_than_its_bound_is_cut_to_it() -> None:
    summary = memory.ConversationSummary(
        _summariser(1, text="word " * 500), max_summary_tokens=50, return_messages=True
    )
    _talk(summary, 1)
    (shown,) = summary.load_memory_variables({})["history"]
    assert shown.role == "system" and 45 <= message_tokens([shown]) <= 50


def _chat_prompt() -> prompts.ChatPromptTemplate:
    return prompts.ChatPromptTemplate(
        [("system", "Be brief."), prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )


def test_a_200_turn_conversation_stays_under_the_bound_with_each_summary_an_llm_run(
    mode: Mode, events: EventRecorder
) -> None:
    turns, bound = 200, 300
    summariser = _summariser(turns, text="they talk about numbers " * 12)
    summary_buffer = memory.ConversationSummaryBuffer(
        summariser, max_tokens=bound, max_summary_tokens=100, return_messages=True
    )
    model = llms.FakeLLM([f"answer number {n} " * 4 for n in range(turns)])
    chain = chains.LLMChain(_chat_prompt(), model, memory=summary_buffer, callbacks=[events])
    for turn in range(turns):
        mode.run(chain, f"question number {turn} " * 4)
        shown = summary_buffer.load_memory_variables({})["history"]
        assert message_tokens(shown) <= bound
    # What the model got as history each time kept to the bound too (its prompt: system,
    # history, question).
    assert all(message_tokens(call.messages[1:-1]) <= bound for call in model.calls)
    assert shown[0].content.startswith("Summary of the conversation so far:")
    assert shown[-1].content == f"answer number {turns - 1} " * 4
    assert len(summary_buffer.messages) == 2 * turns
    folds = len(summariser.calls)
    # A fold takes the recent exchanges down to half their budget: one every few exchanges.
    assert turns // 10 < folds < turns // 2
    llm_runs = [run for _, run in events.runs("llm_start")]
    assert len(llm_runs) == turns + folds
    # Each summary call is an llm run of its own inside the chain run that saved the exchange.
    assert all(run is not None and run.parent is not None for run in llm_runs)
    assert {run.parent.kind for run in llm_runs if run and run.parent} == {"chain"}
    summary_requests = [
        messages
        for _, messages, _ in events.heard("llm_start")
        if messages[0].content.startswith("You keep a running summary")
    ]
    assert len(summary_requests) == folds


@WHERE
def test_the_summary_buffer_keeps_recent_exchanges_as_they_are(
    made: Callable[..., Any],
) -> None:
    summariser = _summariser(10)
    kept = made(
        memory.ConversationSummaryBuffer,
        llm=summariser,
        max_tokens=80,
        max_summary_tokens=30,
        return_messages=True,
    )
    _talk(kept, 2)
    assert summariser.calls == []  # all still fits
    _talk(kept, 6, size=3)
    shown = kept.load_memory_variables({})["history"]
    assert shown[0].role == "system" and shown[1].role == "user"
    assert shown[-1].content == "a5a5a5"
    assert message_tokens(shown) <= 80


def test_clearing_forgets_the_summary_too() -> None:
    summary = memory.ConversationSummary(_summariser(2))
    _talk(summary, 1)
    summary.clear()
    assert summary.buffer_text() == "" and summary.messages == []


def test_a_history_cleared_elsewhere_starts_the_summary_again() -> None:
    history = memory.InMemoryHistory()
    summary = memory.ConversationSummary(_summariser(2), history=history, session_id="s")
    _talk(summary, 1)
    history.clear("s")
    assert summary.buffer_text() == ""


def test_a_memory_over_a_history_shares_the_conversation() -> None:
    history = memory.InMemoryHistory()
    one = memory.ConversationBuffer(history=history, session_id="s")
    other = memory.ConversationWindow(k=1, history=history, session_id="s")
    _talk(one, 2)
    assert other.buffer_text() == "Human: q1\nAI: a1"
    assert history.sessions() == ["s"]
    assert repr(other) == "ConversationWindow(memory_key='history', session 's')"
    other.clear()
    assert one.messages == []


def test_messages_and_content_blocks_survive_a_round_trip() -> None:
    kept = memory.ConversationBuffer(return_messages=True)
    question: list[ContentPart] = [
        TextPart("what is this"),
        ImagePart(url="https://example.com/cat.png"),
    ]
    call = ToolCall(id="c1", function=FunctionCall("look", '{"x": 1}'))
    reply = Message.assistant("", tool_calls=[call])
    kept.save_context({"input": question}, {"output": reply})
    assert kept.load_memory_variables({})["history"] == [Message.user(question), reply]
    kept.return_messages = False
    assert kept.load_memory_variables({})["history"] == (
        'Human: what is this [image https://example.com/cat.png]\nAI: called look({"x": 1})'
    )
    kept.save_context({"input": {"a": 1}}, {"output": ["é"]})
    assert kept.buffer_text().endswith('Human: {"a": 1}\nAI: ["é"]')


def test_a_prompt_without_the_memory_key_is_told_which_key_to_add() -> None:
    prompt = prompts.PromptTemplate.from_template("{input}")
    for kept in (
        memory.ConversationWindow(memory_key="chat"),
        memory.ConversationSummary(_summariser(1), memory_key="chat"),
    ):
        with pytest.raises(chains.errors.ChainWiringError, match=r"Add \{chat\} to the prompt"):
            chains.LLMChain(prompt, llms.FakeLLM([]), memory=kept)


def test_key_errors_name_the_variant() -> None:
    with pytest.raises(MemoryKeyError, match=r"set ConversationWindow\(input_key=...\)"):
        memory.ConversationWindow().save_context({"a": 1, "b": 2}, {"output": "x"})


def test_a_pipeline_with_a_memory_is_checked_as_an_llm_chain_is() -> None:
    chat = _chat_prompt() | llms.FakeLLM(["a", "b"])
    kept = memory.ConversationWindow(k=1, return_messages=True)
    pipeline = chains.Pipeline(list(chat.steps), memory=kept)
    chains.call(pipeline, {"input": "q1"})
    chains.call(pipeline, {"input": "q2"})
    assert [m.content for m in kept.load_memory_variables({})["history"]] == ["q2", "b"]
    # A pipeline that does not read the memory's key lost the history without a word.
    with pytest.raises(chains.errors.ChainWiringError, match=r"Add \{history\}"):
        chains.Pipeline([llms.FakeLLM([])], memory=memory.ConversationBuffer())
    text = prompts.PromptTemplate.from_template("{history}\n{input}")
    with pytest.raises(chains.errors.ChainWiringError, match="return_messages=True"):
        chains.Pipeline([text, llms.FakeLLM([])], memory=kept)


@pytest.mark.parametrize("agent_kind", ["tool-calling", "mrkl"])
def test_agents_with_each_memory(mode: Mode, agent_kind: str) -> None:
    from chainkit.agents import Executor, OneShotAgent, ToolCallingAgent
    from tests.support.stub_tools import Echo

    for kept in (
        memory.ConversationWindow(k=1),
        memory.ConversationTokenWindow(max_tokens=200),
        memory.ConversationSummaryBuffer(_summariser(5), max_tokens=100, max_summary_tokens=30),
    ):
        if agent_kind == "mrkl":
            model = llms.FakeLLM([" Final Answer: one", " Final Answer: two"])
            suffix = "History: {history}\nQuestion: {input}\n{agent_scratchpad}"
            executor = Executor(OneShotAgent(model, [Echo()], suffix=suffix), memory=kept)
        else:
            kept.return_messages = True
            model = llms.FakeLLM(["one", "two"])
            executor = Executor(ToolCallingAgent(model, [Echo()]), memory=kept)
        mode.run(executor, "first")
        mode.run(executor, "second")
        sent = "\n".join(str(m.content) for m in model.calls[1].messages)
        assert "first" in sent and "one" in sent, type(kept).__name__


def test_a_fresh_summary_memory_over_a_long_history_folds_it_at_its_first_save() -> None:
    history = memory.InMemoryHistory()
    for turn in range(50):
        history.append("s", [Message.user(f"q{turn} " * 5), Message.assistant(f"a{turn} " * 5)])
    summariser = _summariser(2)
    kept = memory.ConversationSummaryBuffer(
        summariser,
        max_tokens=120,
        max_summary_tokens=40,
        history=history,
        session_id="s",
        return_messages=True,
    )
    kept.save_context({"input": "one more"}, {"output": "ok"})
    assert len(summariser.calls) == 1
    assert "Human: q0" in summariser.calls[0].messages[1].content
    shown = kept.load_memory_variables({})["history"]
    assert message_tokens(shown) <= 120
    assert kept.text_of(shown).endswith("Human: one more\nAI: ok")


def test_a_summary_that_fails_keeps_the_exchange_and_is_made_at_the_next_save() -> None:
    summariser = llms.FakeLLM([])  # exhausted at once: every call fails
    kept = memory.ConversationSummary(summariser)
    with pytest.raises(llms.errors.FakeLLMExhaustedError):
        kept.save_context({"input": "q0"}, {"output": "a0"})
    assert len(kept.messages) == 2 and kept.summary == ""
    summariser.responses += ["(the failed call's turn)", "all of it"]
    kept.save_context({"input": "q1"}, {"output": "a1"})
    assert "Human: q0" in summariser.calls[-1].messages[1].content  # both exchanges folded
    assert kept.buffer_text().endswith("all of it")
