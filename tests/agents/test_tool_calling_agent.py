import asyncio
import json
import threading

import pytest

from chainkit import chains, tools
from chainkit.agents import Executor, NotFinishedError, ToolCallingAgent
from chainkit.llms import FakeLLM
from chainkit.memory import ConversationBuffer
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.concurrency_peak import Peak
from tests.support.stub_tools import named


def call(name, arguments, call_id):
    return ToolCall(call_id, FunctionCall(name, json.dumps(arguments, ensure_ascii=False)))


class Weather(tools.Tool):
    name = "get_weather"
    description = "weather for a city"

    def __init__(self, barrier=None):
        self.barrier = barrier
        self.threads = set()

    def call(self, input):
        self.threads.add(threading.get_ident())
        if self.barrier is not None:
            self.barrier.wait(timeout=5)  # only passes if the calls run at the same time
        return f"{input}: sunny"


class Direct(tools.Tool):
    name = "direct"
    description = "answers directly"
    return_direct = True

    def call(self, input):
        return f"direct {input}"


def test_parallel_calls_run_concurrently_and_results_keep_call_order():
    weather = Weather(barrier=threading.Barrier(3))
    reply = Message.assistant(
        "checking three cities",
        [
            call("get_weather", {"input": "北京"}, "c1"),
            call("get_weather", {"input": "上海"}, "c2"),
            call("get_weather", {"input": "广州"}, "c3"),
        ],
    )
    fake = FakeLLM([reply, "北京、上海、广州都是晴天"])
    executor = Executor(ToolCallingAgent(fake, [weather]), return_intermediate_steps=True)
    outputs = chains.call(executor, {"input": "三个城市天气"})
    assert outputs["output"] == "北京、上海、广州都是晴天"
    assert len(weather.threads) == 3
    second = fake.calls[1].messages
    assert second[2] is reply  # the assistant message with its tool calls is kept
    assert [(m.role, m.tool_call_id, m.tool_name, m.content) for m in second[3:]] == [
        ("tool", "c1", "get_weather", "北京: sunny"),
        ("tool", "c2", "get_weather", "上海: sunny"),
        ("tool", "c3", "get_weather", "广州: sunny"),
    ]
    assert [s.action.tool_call_id for s in outputs["intermediate_steps"]] == ["c1", "c2", "c3"]


def test_tools_are_sent_as_json_schemas_and_loop_ends_without_calls():
    fake = FakeLLM(["no tools needed"])
    agent = ToolCallingAgent(fake, [Weather()], system_prompt="你是助手")
    assert chains.run(Executor(agent), "hi") == "no tools needed"
    [info] = fake.calls[0].options["tools"]
    assert info.name == "get_weather"
    assert info.parameters["properties"]["input"]["type"] == "string"
    assert fake.calls[0].messages == [Message.system("你是助手"), Message.user("hi")]


def test_max_parallel_tools_limits_concurrency():
    running, peak = 0, 0
    lock = threading.Lock()

    pairs = threading.Barrier(2)  # passes only when two calls run at the same time

    class Counting(Weather):
        def call(self, input):
            nonlocal running, peak
            with lock:
                running += 1
                peak = max(peak, running)
            pairs.wait(timeout=5)
            with lock:
                running -= 1
            return super().call(input)

    calls = [call("get_weather", {"input": str(i)}, f"c{i}") for i in range(6)]
    fake = FakeLLM([Message.assistant("", calls), "ok"])
    chains.run(Executor(ToolCallingAgent(fake, [Counting()], max_parallel_tools=2)), "q")
    assert peak == 2
    with pytest.raises(ValueError, match="max_parallel_tools"):
        ToolCallingAgent(fake, [Weather()], max_parallel_tools=0)


def test_malformed_arguments_become_an_observation():
    truncated = ToolCall("c1", FunctionCall("get_weather", '{"input": "北'))
    fake = FakeLLM([Message.assistant("", [truncated]), "sorry"])
    executor = Executor(ToolCallingAgent(fake, [Weather()]), return_intermediate_steps=True)
    outputs = chains.call(executor, {"input": "q"})
    observation = outputs["intermediate_steps"][0].observation
    assert observation.startswith("Invalid arguments for tool get_weather: not valid JSON")
    assert fake.calls[1].messages[-1].content == observation


def test_repeated_call_ids_are_made_unique():
    calls = [
        call("get_weather", {"input": "a"}, "call_1"),
        call("get_weather", {"input": "b"}, ""),
        call("get_weather", {"input": "c"}, "call_1"),
    ]
    fake = FakeLLM([Message.assistant("", calls), "ok"])
    chains.run(Executor(ToolCallingAgent(fake, [Weather()])), "q")
    assistant, *results = fake.calls[1].messages[-4:]
    ids = [c.id for c in assistant.tool_calls]
    assert ids[0] == "call_1" and len(set(ids)) == 3
    assert [r.tool_call_id for r in results] == ids


def test_missing_call_ids_are_assigned():
    fake = FakeLLM([Message.assistant("", [call("get_weather", {"input": "x"}, "")]), "ok"])
    chains.run(Executor(ToolCallingAgent(fake, [Weather()])), "q")
    assistant, result = fake.calls[1].messages[-2:]
    assert assistant.tool_calls[0].id == "call_0" and result.tool_call_id == "call_0"


def test_unknown_tool_return_direct_and_limits():
    fake = FakeLLM([Message.assistant("", [call("nope", {}, "c1")]), "done"])
    executor = Executor(ToolCallingAgent(fake, [Weather()]), return_intermediate_steps=True)
    outputs = chains.call(executor, {"input": "q"})
    assert outputs["intermediate_steps"][0].observation == (
        "nope is not a valid tool, try one of [get_weather]."
    )
    fake = FakeLLM([Message.assistant("", [call("direct", {"input": "x"}, "c1")])])
    assert chains.run(Executor(ToolCallingAgent(fake, [Weather(), Direct()])), "q") == "direct x"
    looping = [Message.assistant("", [call("get_weather", {"input": "x"}, "c")])] * 2
    fake = FakeLLM(looping)
    with pytest.raises(NotFinishedError):
        chains.run(Executor(ToolCallingAgent(fake, [Weather()]), max_iterations=2), "q")
    fake = FakeLLM([*looping, "final after limit"])
    executor = Executor(
        ToolCallingAgent(fake, [Weather()]), max_iterations=2, early_stopping_method="generate"
    )
    assert chains.run(executor, "q") == "final after limit"
    assert fake.calls[2].options.get("tools") is None
    assert fake.calls[2].messages[-1].role == "user"


def test_callbacks_fire_per_tool_call(events):
    calls = [call("get_weather", {"input": "a"}, "c1"), call("get_weather", {"input": "b"}, "c2")]
    fake = FakeLLM([Message.assistant("", calls), "ok"])
    chains.run(Executor(ToolCallingAgent(fake, [Weather()]), callbacks=events), "q")
    heard = events.described(
        {
            "tool_start": lambda tool, input, call_id: ("start", tool, input, call_id),
            "agent_action": lambda action: ("action", action.tool_call_id),
        }
    )
    assert heard[:2] == [("action", "c1"), ("action", "c2")]
    assert sorted(heard[2:]) == [
        ("start", "get_weather", '{"input": "a"}', "c1"),
        ("start", "get_weather", '{"input": "b"}', "c2"),
    ]


def test_async_parallel_calls_use_tasks():
    started = []

    class AsyncWeather(Weather):
        async def acall(self, input):
            started.append(input)
            await asyncio.sleep(0.01)
            assert len(started) == 3  # all three started before any finished
            return f"{input}: rainy"

    calls = [call("get_weather", {"input": c}, f"c{i}") for i, c in enumerate("abc")]
    fake = FakeLLM([Message.assistant("", calls), "all rainy"])
    executor = Executor(ToolCallingAgent(fake, [AsyncWeather()]))
    assert asyncio.run(chains.arun(executor, "q")) == "all rainy"
    assert [m.content for m in fake.calls[1].messages[-3:]] == ["a: rainy", "b: rainy", "c: rainy"]


def test_history_from_memory_comes_before_the_question():
    memory = ConversationBuffer(return_messages=True)
    fake = FakeLLM(["first answer", "second answer"])
    executor = Executor(ToolCallingAgent(fake, [Weather()], system_prompt=""), memory=memory)
    chains.run(executor, "first")
    chains.run(executor, "second")
    assert fake.calls[1].messages == [
        Message.user("first"),
        Message.assistant("first answer"),
        Message.user("second"),
    ]


def calls_to(name, count):
    return [ToolCall(f"c{i}", FunctionCall(name, f'{{"input": "{i}"}}')) for i in range(count)]


def test_agent_max_parallel_tools_caps_concurrency(mode):
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
    mode.run(executor, "q")
    assert peak.peak == 2


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
