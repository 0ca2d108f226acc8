import asyncio
import io
import types

import pytest

from chainkit import agents, callbacks, chains, llms, tools
from chainkit.agents import (
    Executor,
    NotFinishedError,
    OneShotAgent,
    OutputParserError,
    ParserErrorHandler,
)
from chainkit.agents.errors import NoReturnError
from chainkit.llms import FakeLLM
from chainkit.memory import ConversationBuffer
from chainkit.prompts import ChatPromptTemplate
from chainkit.schema import AgentStep, Message
from tests.support.event_recorder import EventRecorder
from tests.support.stub_tools import Echo, named


class Failing(tools.Tool):
    name = "failing"
    description = "always fails"

    def __init__(self, error):
        self.error = error

    def call(self, input):
        raise self.error


class Direct(tools.Tool):
    name = "direct"
    description = "answers directly"
    return_direct = True

    def call(self, input):
        return f"direct answer for {input}"


def seen(events: EventRecorder) -> list[str]:
    """The events of a run as these tests read them, one line of text each."""
    return events.described(
        {
            "llm_start": lambda messages, options: "llm_start",
            "llm_end": lambda message: "llm_end",
            "agent_action": lambda action: f"action:{action.tool}:{action.tool_input}",
            "agent_finish": lambda finish: f"finish:{finish.return_values['output']}",
            "tool_start": lambda tool, input, call_id: f"tool_start:{tool}:{input}",
            "tool_end": lambda tool, output, call_id: f"tool_end:{tool}:{output}",
            "tool_error": lambda tool, error, call_id: f"tool_error:{tool}:{error}",
            "chain_start": lambda chain, inputs: f"chain_start:{chain}",
            "chain_end": lambda chain, outputs: f"chain_end:{chain}",
        }
    )


def act(tool, tool_input, thought="I should act"):
    return f" {thought}\nAction: {tool}\nAction Input: {tool_input}"


def final(answer):
    return f" I now know the final answer\nFinal Answer: {answer}"


def run_agent(responses, tool_list=None, **executor_options):
    fake = FakeLLM(responses)
    agent = OneShotAgent(fake, tool_list or [Echo()])
    return Executor(agent, **executor_options), fake


def test_plan_act_loop_and_scratchpad():
    echo = Echo()
    executor, fake = run_agent([act("echo", "hello"), final("done")], [echo])
    assert chains.run(executor, "say hello") == "done"
    assert echo.inputs == ["hello"]
    second_prompt = fake.calls[1].messages[0].content
    assert second_prompt.endswith(
        "Question: say hello\nThought:"
        + act("echo", "hello")
        + "\nObservation: echo: hello\nThought:"
    )


def test_default_stop_and_a_callers_stop_replaces_them():
    executor, fake = run_agent([final("a")])
    chains.run(executor, "q")
    assert list(fake.calls[0].options["stop"]) == ["\nObservation:", "\n\tObservation:"]
    executor, fake = run_agent([final("a")])
    chains.run(executor, "q", stop=["\nSTOP"])
    assert fake.calls[0].options["stop"] == ["\nSTOP"]


OPTIONS = llms.CallOptions(temperature=0, max_tokens=50, top_p=0.5, seed=7, model="m-2")


def test_call_options_reach_the_model_through_the_executor(mode):
    executor, fake = run_agent([act("echo", "x"), final("a")])
    chunks: list[str] = []
    mode.run(executor, "q", **llms.CallOptions(**OPTIONS, streaming_func=chunks.append))
    for call in fake.calls:
        assert {key: call.options[key] for key in OPTIONS} == OPTIONS
    assert "".join(chunks) == act("echo", "x") + final("a")


def test_stop_none_keeps_defaults_and_a_misspelt_option_is_refused_with_a_suggestion():
    executor, fake = run_agent([final("a")])
    chains.run(executor, "q", stop=None)
    assert list(fake.calls[0].options["stop"]) == ["\nObservation:", "\n\tObservation:"]
    executor, fake = run_agent([final("a")])
    with pytest.raises(
        llms.errors.UnknownOptionError, match="'temprature'; did you mean 'temperature'"
    ):
        chains.run(executor, "q", temprature=0.2)  # type: ignore[call-arg]
    assert fake.calls == []


def test_parse_error_raised_without_handler():
    executor, _ = run_agent(["I am rambling with no action"])
    with pytest.raises(OutputParserError) as info:
        chains.run(executor, "q")
    assert info.value.llm_output == "I am rambling with no action"
    assert "Missing 'Action:'" in info.value.observation


def test_parse_error_goes_back_to_the_model_with_handler():
    executor, fake = run_agent(
        ["no format here", final("recovered")], error_handler=ParserErrorHandler()
    )
    outputs = chains.call(executor, {"input": "q"})
    assert outputs == {"output": "recovered"}
    second_prompt = fake.calls[1].messages[0].content
    assert "no format here\nObservation: Invalid Format: Missing 'Action:' after 'Thought:'" in (
        second_prompt
    )


def test_parse_error_formatter():
    handler = ParserErrorHandler(formatter=lambda text: f"Please fix: {text}")
    executor, fake = run_agent(["oops", final("ok")], error_handler=handler)
    chains.run(executor, "q")
    assert "Observation: Please fix: Invalid Format" in fake.calls[1].messages[0].content


def test_unknown_tool_observation_and_case_insensitive_lookup():
    echo = Echo()
    executor, _ = run_agent(
        [act("search", "x"), act("ECHO", "found"), final("ok")],
        [echo, Direct()],
        return_intermediate_steps=True,
    )
    outputs = chains.call(executor, {"input": "q"})
    steps = outputs["intermediate_steps"]
    assert steps[0].observation == "search is not a valid tool, try one of [echo, direct]."
    assert steps[1].observation == "echo: found" and echo.inputs == ["found"]


def test_callbacks_fire_for_llm_agent_and_tools(events):
    executor, _ = run_agent([act("echo", "x"), final("ok")], callbacks=events)
    chains.run(executor, "q")
    assert seen(events) == [
        "chain_start:Executor",
        "llm_start",
        "llm_end",
        "action:echo:x",
        "tool_start:echo:x",
        "tool_end:echo:echo: x",
        "llm_start",
        "llm_end",
        "finish:ok",
        "chain_end:Executor",
    ]


def test_agent_own_handler_also_sees_llm_events():
    own, outer = EventRecorder(), EventRecorder()
    fake = FakeLLM([final("ok")])
    agent = OneShotAgent(fake, [Echo()], callbacks=own)
    chains.run(Executor(agent, callbacks=outer), "q")
    assert seen(own) == ["llm_start", "llm_end"]
    assert "llm_start" in seen(outer)


def test_max_iterations_force_raises_with_steps():
    executor, _ = run_agent([act("echo", str(i)) for i in range(3)], max_iterations=3)
    with pytest.raises(NotFinishedError, match="max_iterations=3") as info:
        chains.run(executor, "q")
    assert [s.observation for s in info.value.steps] == ["echo: 0", "echo: 1", "echo: 2"]


def test_max_iterations_generate_asks_for_final_answer():
    executor, fake = run_agent(
        [act("echo", "1"), act("echo", "2"), "the best answer is 2"],
        max_iterations=2,
        early_stopping_method="generate",
    )
    assert chains.run(executor, "q") == "the best answer is 2"
    assert len(fake.calls) == 3
    assert "I must now give my final answer" in fake.calls[2].messages[0].content
    executor, _ = run_agent(
        [act("echo", "1"), final("parsed final")],
        max_iterations=1,
        early_stopping_method="generate",
    )
    assert chains.run(executor, "q") == "parsed final"


class FakeClock:
    """time.monotonic for the executor: each tool call takes 10 seconds."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_max_execution_time(monkeypatch, mode):
    clock = FakeClock()
    # The executor's clock only: the event loop keeps the real one, so no step is cut short.
    monkeypatch.setattr("chainkit.agents._deadline.time", types.SimpleNamespace(monotonic=clock))

    class Slow(Echo):
        def call(self, input):
            clock.now += 10
            return super().call(input)

    executor, fake = run_agent(
        [act("echo", str(i)) for i in range(10)],
        [Slow()],
        max_iterations=None,
        max_execution_time=25,
    )
    with pytest.raises(NotFinishedError, match="max_execution_time=25s") as info:
        mode.run(executor, "q")
    assert len(info.value.steps) == 3 and len(fake.calls) == 3


def test_return_intermediate_steps():
    executor, _ = run_agent([act("echo", "a"), final("ok")], return_intermediate_steps=True)
    outputs = chains.call(executor, {"input": "q"})
    assert outputs["output"] == "ok"
    [step] = outputs["intermediate_steps"]
    assert isinstance(step, AgentStep)
    assert (step.action.tool, step.action.tool_input, step.observation) == ("echo", "a", "echo: a")
    assert executor.output_keys == ["output", "intermediate_steps"]


def test_return_direct_ends_the_run():
    executor, fake = run_agent([act("direct", "x")], [Echo(), Direct()])
    assert chains.run(executor, "q") == "direct answer for x"
    assert len(fake.calls) == 1


def test_tool_error_becomes_observation(events):
    tool = Failing(tools.ToolError("city not found"))
    executor, fake = run_agent([act("failing", "x"), final("sorry")], [tool], callbacks=events)
    assert chains.run(executor, "q") == "sorry"
    assert "Observation: city not found\n" in fake.calls[1].messages[0].content
    assert "tool_error:failing:city not found" in seen(events)


def test_other_tool_exceptions_propagate_unless_handled():
    executor, _ = run_agent([act("failing", "x")], [Failing(KeyError("k"))])
    with pytest.raises(KeyError):
        chains.run(executor, "q")
    executor, fake = run_agent(
        [act("failing", "x"), final("ok")],
        [Failing(RuntimeError("disk full"))],
        handle_tool_errors=True,
    )
    assert chains.run(executor, "q") == "ok"
    assert "Observation: Tool error: RuntimeError: disk full\n" in fake.calls[1].messages[0].content


def test_no_return_from_agent():
    class Empty(OneShotAgent):
        def plan(self, steps, inputs, **options):
            return []

    with pytest.raises(NoReturnError):
        chains.run(Executor(Empty(FakeLLM([]), [Echo()])), "q")


def test_memory_on_executor():
    memory = ConversationBuffer()
    fake = FakeLLM([final("first"), final("second")])
    prompt_suffix = "History:\n{history}\n\nQuestion: {input}\nThought:{agent_scratchpad}"
    agent = OneShotAgent(fake, [Echo()], suffix=prompt_suffix)
    executor = Executor(agent, memory=memory)
    chains.run(executor, "one")
    chains.run(executor, "two")
    assert "History:\nHuman: one\nAI: first\n\nQuestion: two" in fake.calls[1].messages[0].content


def test_async_run_uses_tool_acall(events):
    class AsyncEcho(Echo):
        async def acall(self, input):
            await asyncio.sleep(0)
            self.inputs.append(f"async:{input}")
            return f"async echo: {input}"

        def call(self, input):
            raise AssertionError("sync call used in async run")

    tool = AsyncEcho()
    executor, _ = run_agent([act("echo", "x"), final("ok")], [tool], callbacks=events)
    assert asyncio.run(chains.arun(executor, "q")) == "ok"
    assert tool.inputs == ["async:x"]
    assert "tool_end:echo:async echo: x" in seen(events)
    outputs = asyncio.run(chains.acall(run_agent([final("z")])[0], {"input": "q"}))
    assert outputs == {"output": "z"}


def test_async_limits_and_errors_match_sync():
    executor, _ = run_agent([act("echo", "1")], max_iterations=1)
    with pytest.raises(NotFinishedError):
        asyncio.run(chains.arun(executor, "q"))
    executor, fake = run_agent(
        ["bad", act("failing", "x"), final("ok")],
        [Failing(tools.ToolError("nope"))],
        error_handler=ParserErrorHandler(),
    )
    assert asyncio.run(chains.arun(executor, "q")) == "ok"
    assert "Observation: nope\n" in fake.calls[2].messages[0].content
    executor, _ = run_agent(
        [act("e", "1"), "final"], max_iterations=1, early_stopping_method="generate"
    )
    assert asyncio.run(chains.arun(executor, "q")) == "final"


def test_executor_validates_options():
    agent = OneShotAgent(FakeLLM([]), [Echo()])
    with pytest.raises(ValueError, match="early_stopping_method"):
        Executor(agent, early_stopping_method="stop")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_iterations"):
        Executor(agent, max_iterations=0)


def test_log_handler_trace_of_a_run():
    out = io.StringIO()
    executor, _ = run_agent([act("echo", "x"), final("ok")], callbacks=callbacks.LogHandler(out))
    chains.run(executor, "q")
    trace = out.getvalue()
    assert "llm start: user: Answer the following questions" in trace
    assert "agent action: tool='echo' input='x'" in trace
    assert "tool end: echo output='echo: x'" in trace
    assert "agent finish: {'output': 'ok'}" in trace


def test_unknown_tool_and_parse_errors_show_in_callbacks(events):
    executor, _ = run_agent(
        ["gibberish", act("nope", "x"), final("ok")],
        callbacks=events,
        error_handler=ParserErrorHandler(),
    )
    chains.run(executor, "q")
    texts = [text for _, text in events.heard("text")]
    assert texts == [
        "unparsable reply, sent back to the model: "
        "Invalid Format: Missing 'Action:' after 'Thought:'"
    ]
    # The run is not named what the model wrote, which may be anything; its error says it.
    assert "tool_start:(unknown tool):x" in seen(events)
    assert "tool_error:(unknown tool):nope is not a valid tool, try one of [echo]." in seen(events)


def test_same_handler_on_agent_and_executor_hears_each_event_once(events):
    fake = FakeLLM([final("ok")])
    agent = OneShotAgent(fake, [Echo()], callbacks=events)
    chains.run(Executor(agent, callbacks=events), "q")
    assert seen(events).count("llm_start") == 1 and seen(events).count("llm_end") == 1


def test_per_call_callbacks_join_the_executor_handler():
    outer, per_call = EventRecorder(), EventRecorder()
    executor, _ = run_agent([act("echo", "x"), final("ok")], callbacks=outer)
    chains.run(executor, "q", callbacks=per_call)
    assert seen(outer).count("llm_start") == 2 and seen(per_call).count("llm_start") == 2
    assert "tool_end:echo:echo: x" in seen(outer)


def test_tool_returning_a_non_string_is_observed_as_text(events):
    class Number(Echo):
        def call(self, input):
            return {"n": 42, "城市": "北京"} if input == "dict" else 42

    script = [act("echo", "x"), act("echo", "dict"), final("ok")]
    executor, fake = run_agent(script, [Number()], callbacks=events)
    assert chains.run(executor, "q") == "ok"
    assert "Observation: 42\n" in fake.calls[1].messages[0].content
    assert 'Observation: {"n": 42, "城市": "北京"}\n' in fake.calls[2].messages[0].content
    assert "tool_end:echo:42" in seen(events)


def test_bad_inputs_are_named():
    executor, _ = run_agent([final("ok")])
    with pytest.raises(TypeError, match=r"needs its inputs as a dict.*got str"):
        chains.call(executor, "q")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'agent_scratchpad' is filled in by the agent"):
        chains.call(executor, {"input": "q", "agent_scratchpad": "x"})
    with pytest.raises(ValueError, match="max_execution_time must be a positive"):
        Executor(OneShotAgent(FakeLLM([]), [Echo()]), max_execution_time=0)


def test_async_branches_match_sync():
    executor, fake = run_agent([act("direct", "x")], [Echo(), Direct()])
    assert asyncio.run(chains.arun(executor, "q")) == "direct answer for x"
    executor, fake = run_agent(
        [act("failing", "x"), final("ok")],
        [Failing(RuntimeError("disk full"))],
        handle_tool_errors=True,
    )
    assert asyncio.run(chains.arun(executor, "q")) == "ok"
    assert "Observation: Tool error: RuntimeError: disk full\n" in fake.calls[1].messages[0].content
    executor, _ = run_agent([act("failing", "x")], [Failing(KeyError("k"))])
    with pytest.raises(KeyError):
        asyncio.run(chains.arun(executor, "q"))
    executor, _ = run_agent(["no format"])
    with pytest.raises(OutputParserError):
        asyncio.run(chains.arun(executor, "q"))
    executor, _ = run_agent([act("nope", "x"), final("ok")], return_intermediate_steps=True)
    outputs = asyncio.run(chains.acall(executor, {"input": "q"}))
    assert outputs["intermediate_steps"][0].observation.startswith("nope is not a valid tool")


def test_async_callback_order_matches_sync():
    sync_events, async_events = EventRecorder(), EventRecorder()
    script = [act("echo", "x"), final("ok")]
    chains.run(run_agent(script, callbacks=sync_events)[0], "q")
    asyncio.run(chains.arun(run_agent(script, callbacks=async_events)[0], "q"))
    assert seen(async_events) == seen(sync_events)


def test_error_handler_must_be_a_parser_error_handler():
    with pytest.raises(TypeError, match=r"use error_handler=agents\.ParserErrorHandler"):
        Executor(OneShotAgent(FakeLLM([]), [Echo()]), error_handler=True)  # type: ignore[arg-type]


def test_memory_the_agent_does_not_read_is_refused():
    agent = OneShotAgent(FakeLLM([]), [Echo()])
    with pytest.raises(ValueError, match=r"does not read memory variable\(s\) \['history'\]"):
        Executor(agent, memory=ConversationBuffer())
    tool_agent = agents.ToolCallingAgent(FakeLLM([]), [Echo()])
    with pytest.raises(ValueError, match=r"\['chat_history'\]"):
        Executor(tool_agent, memory=ConversationBuffer(memory_key="chat_history"))
    Executor(tool_agent, memory=ConversationBuffer(return_messages=True))  # reads "history"


def test_per_call_callbacks_hear_agent_and_tool_events(events):
    executor, _ = run_agent([act("echo", "x"), final("ok")])
    chains.run(executor, "q", callbacks=events)
    assert "tool_end:echo:echo: x" in seen(events) and "finish:ok" in seen(events)
    assert seen(events)[0] == "chain_start:Executor"


def test_a_model_raising_stop_iteration_is_not_taken_for_the_loops_end():
    class Broken(FakeLLM):
        def _generate(self, request):
            raise StopIteration

    executor = Executor(OneShotAgent(Broken([]), [Echo()]))
    with pytest.raises(RuntimeError, match="model Broken raised StopIteration") as caught:
        chains.run(executor, "q")
    assert isinstance(caught.value.__cause__, StopIteration)


def test_chat_prompt_keeps_its_roles_in_a_mrkl_agent():
    prompt = ChatPromptTemplate(
        [("system", "Tools:\n{tool_descriptions}"), ("user", "{input}\n{agent_scratchpad}")]
    )
    fake = FakeLLM([final("ok")])
    chains.run(Executor(OneShotAgent(fake, [Echo()], prompt=prompt)), "hi")
    assert fake.calls[0].messages == [
        Message.system("Tools:\necho: repeats its input"),
        Message.user("hi\n"),
    ]


def test_cancelled_async_siblings_have_stopped_when_the_run_fails():
    stopped: list[str] = []
    finished: list[str] = []

    class Slow(tools.Tool):
        name = "slow"
        description = "slow"

        async def acall(self, input):
            try:
                await asyncio.sleep(5)
                finished.append(input)
            finally:
                stopped.append(input)
            return "late"

    class Bad(tools.Tool):
        name = "bad"
        description = "bad"

        async def acall(self, input):
            await asyncio.sleep(0)
            raise KeyError(input)

    from chainkit.schema import FunctionCall, ToolCall

    calls = [
        ToolCall("c1", FunctionCall("slow", '{"input": "a"}')),
        ToolCall("c2", FunctionCall("bad", '{"input": "b"}')),
    ]
    executor = Executor(
        agents.ToolCallingAgent(FakeLLM([Message.assistant("", calls)]), [Slow(), Bad()])
    )

    async def main():
        with pytest.raises(KeyError):
            await chains.arun(executor, "q")
        assert stopped == ["a"]  # already stopped when the error reached the caller
        assert finished == []  # and cancelled, not run to its end

    asyncio.run(main())


def test_models_and_agents_copy_and_pickle():
    import copy
    import pickle

    executor, fake = run_agent([final("copied")])
    clone = copy.deepcopy(executor)
    assert chains.run(clone, "q") == "copied" and fake.calls == []
    assert pickle.loads(pickle.dumps(FakeLLM(["x"]))).responses == ["x"]


def test_case_insensitive_lookup_reports_the_tools_own_name(events):
    fake = FakeLLM([" x\nAction: SEARCH\nAction Input: q", " Final Answer: ok"])
    agent = OneShotAgent(fake, [named("Search", "found"), named("other", "not this")])
    outputs = chains.call(
        Executor(agent, return_intermediate_steps=True, callbacks=events), {"input": "q"}
    )
    assert outputs["intermediate_steps"][0].observation == "found"
    assert "Search" in [tool for _, tool, *_ in events.heard("tool_start")]
    with pytest.raises(ValueError, match="differ only in case, 'Search' and 'search'"):
        OneShotAgent(fake, [named("Search", "first"), named("search", "second")])


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


def test_a_cancelled_async_tool_reports_its_error(events):
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
    errors = [
        (name, tool, type(error).__name__) for name, tool, error, _ in events.heard("tool_error")
    ]
    assert ("tool_error", "waits", "CancelledError") in errors


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
