"""Behaviour a mutation run showed no test pinned down: chains, sequences, the Executor,
the agents, handler joining and memory."""

import asyncio
import threading

import pytest

from chainkit import chains, tools
from chainkit.agents import Executor, OneShotAgent, ToolCallingAgent
from chainkit.callbacks import CombiningHandler, Handler, join
from chainkit.chains import Chain, ChainWiringError, LLMChain, SequentialChain, SingleKeyError
from chainkit.llms import FakeLLM
from chainkit.memory import ConversationBuffer
from chainkit.prompts import PromptTemplate
from chainkit.schema import FunctionCall, Message, ToolCall


class Events(Handler):
    def __init__(self):
        self.events: list[tuple[str, ...]] = []

    def handle_chain_error(self, chain, error):
        self.events.append(("chain_error", chain, type(error).__name__))

    def handle_tool_start(self, tool, input):
        self.events.append(("tool_start", tool))

    def handle_tool_error(self, tool, error):
        self.events.append(("tool_error", tool, type(error).__name__))


class Peak:
    """Counts how many calls run at once."""

    def __init__(self):
        self.running = 0
        self.peak = 0
        self.lock = threading.Lock()

    def enter(self):
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)

    def leave(self):
        with self.lock:
            self.running -= 1


class KeyedChain(Chain):
    """A test chain whose keys are class attributes."""

    keys_in: tuple[str, ...] = ()
    keys_out: tuple[str, ...] = ()

    @property
    def input_keys(self):
        return list(self.keys_in)

    @property
    def output_keys(self):
        return list(self.keys_out)


class Interrupting(KeyedChain):
    keys_in = ("x",)
    keys_out = ("y",)

    def _call(self, inputs, **options):
        raise KeyboardInterrupt

    async def _acall(self, inputs, **options):
        raise KeyboardInterrupt


# --- chains.api -------------------------------------------------------------------------------


def test_memory_never_overwrites_an_input_the_caller_gave():
    memory = ConversationBuffer()
    memory.save_context({"input": "old"}, {"text": "older"})
    fake = FakeLLM(["r"])
    chain = LLMChain(PromptTemplate.from_template("{history}|{input}"), fake, memory=memory)
    chains.call(chain, {"input": "q", "history": "given by caller"})
    assert fake.calls[0].messages[0].content == "given by caller|q"


@pytest.mark.parametrize("use_async", [False, True])
def test_an_interrupted_chain_still_reports_its_error(use_async):
    events = Events()
    chain = Interrupting()
    chain.callbacks = events
    with pytest.raises(KeyboardInterrupt):
        if use_async:
            asyncio.run(chains.acall(chain, {"x": 1}))
        else:
            chains.call(chain, {"x": 1})
    assert events.events == [("chain_error", "Interrupting", "KeyboardInterrupt")]


def test_batch_runs_nothing_queued_after_a_failure_and_caps_workers():
    ran: list[int] = []
    peak = Peak()

    class Counting(KeyedChain):
        keys_in = ("n",)
        keys_out = ("n",)

        def _call(self, inputs, **options):
            peak.enter()
            try:
                ran.append(inputs["n"])
                if inputs["n"] == 0:
                    raise RuntimeError("first fails")
                return dict(inputs)
            finally:
                peak.leave()

    with pytest.raises(RuntimeError, match="first fails"):
        chains.batch(Counting(), [{"n": i} for i in range(6)], max_workers=1)
    assert ran == [0]
    ran.clear()
    chains.batch(Counting(), [{"n": i} for i in range(1, 9)], max_workers=2)
    assert sorted(ran) == list(range(1, 9)) and peak.peak <= 2
    with pytest.raises(ValueError, match="max_workers must be at least 1"):
        chains.batch(Counting(), [{"n": 1}], max_workers=0)


def test_abatch_raises_the_real_error_not_a_cancellation():
    class Mixed(KeyedChain):
        keys_in = ("n",)
        keys_out = ("n",)

        def _call(self, inputs, **options):
            raise NotImplementedError

        async def _acall(self, inputs, **options):
            if inputs["n"] == 0:
                await asyncio.sleep(5)  # still running when item 1 fails
            raise RuntimeError(f"item {inputs['n']} failed")

    with pytest.raises(RuntimeError, match="item 1 failed"):
        asyncio.run(chains.abatch(Mixed(), [{"n": 0}, {"n": 1}]))


def test_arun_names_run_in_its_error():
    two = SequentialChain(
        [LLMChain(PromptTemplate.from_template("{a}"), FakeLLM([]), output_key="o")],
        input_variables=["a", "b"],
    )
    with pytest.raises(SingleKeyError, match=r"^run\(\)"):
        asyncio.run(chains.arun(two, "x"))


# --- SequentialChain ----------------------------------------------------------------------


def test_sequence_memory_is_known_to_its_chains_and_may_not_shadow_inputs():
    memory = ConversationBuffer(input_key="x", output_key="t")
    reads_history = LLMChain(
        PromptTemplate.from_template("{history}/{x}"), FakeLLM(["one", "two"]), output_key="t"
    )
    seq = SequentialChain([reads_history], input_variables=["x"], memory=memory)
    chains.call(seq, {"x": "a"})
    chains.call(seq, {"x": "b"})
    assert reads_history.llm.calls[1].messages[0].content == "Human: a\nAI: one/b"  # type: ignore[attr-defined]
    with pytest.raises(ChainWiringError, match=r"\['history'\] are also memory variables"):
        SequentialChain([reads_history], input_variables=["x", "history"], memory=memory)


def test_async_sequence_forwards_options():
    first = LLMChain(PromptTemplate.from_template("{x}"), FakeLLM(["s"]), output_key="s")
    seq = SequentialChain([first], input_variables=["x"])
    asyncio.run(chains.acall(seq, {"x": "1"}, stop=["STOP"], seed=9))
    assert first.llm.calls[0].options["stop"] == ["STOP"]  # type: ignore[attr-defined]
    assert first.llm.calls[0].options["seed"] == 9  # type: ignore[attr-defined]


# --- Executor ---------------------------------------------------------------------------------


def calls_to(name, count):
    return [ToolCall(f"c{i}", FunctionCall(name, f'{{"input": "{i}"}}')) for i in range(count)]


@pytest.mark.parametrize("use_async", [False, True])
def test_agent_max_parallel_tools_caps_concurrency(use_async):
    peak = Peak()

    class Slow(tools.Tool):
        name = "slow"
        description = "slow"

        def call(self, input):
            peak.enter()
            threading.Event().wait(0.02)
            peak.leave()
            return input

        async def acall(self, input):
            peak.enter()
            await asyncio.sleep(0.02)
            peak.leave()
            return input

    fake = FakeLLM([Message.assistant("", calls_to("slow", 6)), "done"])
    executor = Executor(ToolCallingAgent(fake, [Slow()], max_parallel_tools=2))
    if use_async:
        asyncio.run(chains.arun(executor, "q"))
    else:
        chains.run(executor, "q")
    assert peak.peak == 2


def named(tool_name, result, direct=False):
    class Named(tools.Tool):
        name = tool_name
        description = tool_name
        return_direct = direct

        def call(self, input):
            return result

    return Named()


def test_case_insensitive_lookup_reports_the_tools_own_name():
    events = Events()
    fake = FakeLLM([" x\nAction: SEARCH\nAction Input: q", " Final Answer: ok"])
    agent = OneShotAgent(fake, [named("Search", "found"), named("other", "not this")])
    outputs = chains.call(
        Executor(agent, return_intermediate_steps=True, callbacks=events), {"input": "q"}
    )
    assert outputs["intermediate_steps"][0].observation == "found"
    assert ("tool_start", "Search") in events.events
    with pytest.raises(ValueError, match="'search' and 'Search' clash"):
        OneShotAgent(fake, [named("Search", "first"), named("search", "second")])


def test_first_return_direct_tool_wins_under_the_agents_output_key():
    calls = [
        ToolCall("a", FunctionCall("one", '{"input": ""}')),
        ToolCall("b", FunctionCall("two", '{"input": ""}')),
    ]
    agent = ToolCallingAgent(
        FakeLLM([Message.assistant("", calls)]),
        [named("one", "from one", True), named("two", "from two", True)],
        output_key="answer",
    )
    assert chains.call(Executor(agent), {"input": "q"}) == {"answer": "from one"}


def test_handle_tool_errors_never_swallows_an_interrupt():
    class Interrupt(tools.Tool):
        name = "stop"
        description = "stop"

        def call(self, input):
            raise KeyboardInterrupt

    fake = FakeLLM([" x\nAction: stop\nAction Input: now"])
    executor = Executor(OneShotAgent(fake, [Interrupt()]), handle_tool_errors=True)
    with pytest.raises(KeyboardInterrupt):
        chains.run(executor, "q")


def test_a_cancelled_async_tool_reports_its_error():
    events = Events()
    started: asyncio.Event | None = None  # made inside the event loop, below

    class Waits(tools.Tool):
        name = "waits"
        description = "waits"

        async def acall(self, input):
            assert started is not None
            started.set()
            await asyncio.sleep(5)
            return "late"

    fake = FakeLLM([" x\nAction: waits\nAction Input: now"])
    executor = Executor(OneShotAgent(fake, [Waits()]), callbacks=events)

    async def main():
        nonlocal started
        started = asyncio.Event()
        run = asyncio.ensure_future(chains.arun(executor, "q"))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert ("tool_error", "waits", "CancelledError") in events.events


# --- agents -------------------------------------------------------------------------------


def test_explicit_stop_none_keeps_the_default_stop_words():
    fake = FakeLLM([" Final Answer: ok"])
    chains.run(Executor(OneShotAgent(fake, [named("t", "r")])), "q", stop=None)
    assert list(fake.calls[0].options["stop"]) == ["\nObservation:", "\n\tObservation:"]


def test_async_generate_early_stop_asks_for_the_final_answer_and_strips_it():
    fake = FakeLLM([" x\nAction: t\nAction Input: 1", "  the answer \n"])
    executor = Executor(
        OneShotAgent(fake, [named("t", "r")]), max_iterations=1, early_stopping_method="generate"
    )
    assert asyncio.run(chains.arun(executor, "q")) == "the answer"
    assert "I must now give my final answer" in fake.calls[1].messages[0].content


def test_tool_calling_agent_history_text_and_non_messages():
    agent = ToolCallingAgent(FakeLLM([]), [named("t", "r")], system_prompt="")
    text = agent.messages([], {"input": "q", "history": "Human: hi\nAI: hello"})
    assert text == [Message.system("Conversation so far:\nHuman: hi\nAI: hello"), Message.user("q")]
    with pytest.raises(TypeError, match=r"history\[1\] is a str"):  # refused, not dropped
        agent.messages([], {"input": "q", "history": [Message.user("a"), "not a message"]})


def test_tool_calling_agent_renames_repeated_ids():
    calls = [
        ToolCall("x", FunctionCall("t", '{"input": "1"}')),
        ToolCall("x", FunctionCall("t", '{"input": "2"}')),
    ]
    fake = FakeLLM([Message.assistant("", calls), "done"])
    chains.run(Executor(ToolCallingAgent(fake, [named("t", "r")])), "q")
    results = [m for m in fake.calls[1].messages if m.role == "tool"]
    assert len({m.tool_call_id for m in results}) == 2


# --- callbacks.join and memory ---------------------------------------------------------------


def test_join_keeps_every_own_handler():
    a, b = Handler(), Handler()
    joined = join(CombiningHandler([a]), CombiningHandler([a, b]))
    assert joined is not None and joined.handlers == [a, b]


def test_loaded_history_is_a_copy():
    memory = ConversationBuffer(return_messages=True)
    memory.save_context({"input": "q"}, {"output": "a"})
    loaded = memory.load_memory_variables({})["history"]
    loaded.clear()
    assert len(memory.messages) == 2
