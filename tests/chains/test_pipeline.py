"""Pipelines: `|` joins prompts, models, parsers, chains, tools and functions into a Chain that
every chains.* function takes; the rule mapping a pipeline's inputs and outputs to its steps'
values; the conversions between steps."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, TypedDict

import pytest

from chainkit import agents, chains, llms, prompts, tools
from chainkit.chains.errors import InputsTypeError, OutputNotStringError
from chainkit.llms import OpenAI
from chainkit.schema import Message
from tests.support.modes import Mode
from tests.support.openai_server import OpenAIServer

P = prompts.PromptTemplate.from_template


def words(text: str) -> list[str]:
    return text.split()


def test_prompt_model_function_runs_over_http_and_returns_the_last_value(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("red green blue")
    pipeline = P("Name three {kind}") | openai_llm | words
    assert isinstance(pipeline, chains.Pipeline)
    assert pipeline.input_keys == ["kind"]
    assert pipeline.output_keys == ["output"]
    assert mode.call(pipeline, {"kind": "colours"}) == {"output": ["red", "green", "blue"]}
    (request,) = openai_server.requests
    assert request.body["messages"] == [{"role": "user", "content": "Name three colours"}]


def test_a_pipeline_takes_call_options_to_its_models(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("ok")
    pipeline = P("{q}") | openai_llm | (lambda reply: reply.content)
    assert mode.run(pipeline, "hi", temperature=0.25, max_tokens=7) == "ok"
    body = openai_server.requests[0].body
    assert (body["temperature"], body["max_tokens"]) == (0.25, 7)


def test_a_first_step_taking_one_value_takes_the_input_key(mode: Mode) -> None:
    pipeline = chains.pipe(lambda number: number + 1, lambda number: number * 10)
    assert pipeline.input_keys == ["input"]
    assert mode.call(pipeline, {"input": 4}) == {"output": 50}


def test_a_last_step_giving_a_dict_gives_the_outputs(mode: Mode) -> None:
    pipeline = P("{q}") | {
        "length": lambda messages: len(messages[0].content),
        "role": lambda messages: messages[0].role,
    }
    assert pipeline.output_keys == ["length", "role"]
    assert mode.call(pipeline, {"q": "four"}) == {"length": 4, "role": "user"}


def test_a_function_annotated_dict_takes_the_inputs_dict(mode: Mode) -> None:
    def both(inputs: dict[str, Any]) -> str:
        return f"{inputs['a']}+{inputs['b']}"

    pipeline = chains.pipe(both, str.upper)
    assert pipeline.input_keys == []  # any dict: what it reads is known when it runs
    assert mode.call(pipeline, {"a": "x", "b": "y"}) == {"output": "X+Y"}


class Order(TypedDict):
    item: str
    count: int


def test_a_typed_dict_parameter_names_the_inputs_the_pipeline_needs(mode: Mode) -> None:
    def describe(order: Order) -> str:
        return f"{order['count']} x {order['item']}"

    pipeline = chains.pipe(describe, str.upper)
    assert sorted(pipeline.input_keys) == ["count", "item"]
    assert mode.call(pipeline, {"item": "tea", "count": 2}) == {"output": "2 X TEA"}


def test_a_reply_message_goes_on_as_its_text_to_str_steps_and_prompt_variables(
    mode: Mode,
) -> None:
    seen: list[object] = []

    def keep(text: str) -> str:
        seen.append(text)
        return text

    pipeline = (
        P("{q}")
        | llms.FakeLLM(["first", "second"])
        | keep
        | {"answer": P("say {q}") | llms.FakeLLM(["again"])}
        | P("{answer}!")
        | llms.FakeLLM(["done"])
        | keep
    )
    assert mode.run(pipeline, "go") == "done"
    assert seen == ["first", "done"]


def test_run_refuses_a_pipeline_ending_in_a_model_before_any_call(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    pipeline = P("{q}") | openai_llm
    with pytest.raises(OutputNotStringError, match=r"gives Message \(its last step is"):
        chains.run(pipeline, "hi")
    assert openai_server.requests == []


def test_batch_runs_a_pipeline_on_each_input(mode: Mode) -> None:
    pipeline = P("{n}") | llms.FakeLLM(["a", "b", "c"]) | (lambda reply: reply.content)
    outputs = mode.drive("batch", pipeline, [{"n": 1}, {"n": 2}, {"n": 3}], max_workers=1)
    assert sorted(item["output"] for item in outputs) == ["a", "b", "c"]


def test_chains_and_pipelines_nest(mode: Mode) -> None:
    llm_chain = chains.LLMChain(P("{topic}"), llms.FakeLLM(["a joke"]))
    inner = P("rate: {text}") | llms.FakeLLM(["7"]) | (lambda reply: int(reply.content))
    pipeline = llm_chain | {"rating": inner, "joke": chains.pick("text")}
    assert pipeline.input_keys == ["topic"]
    assert mode.call(pipeline, {"topic": "cats"}) == {"rating": 7, "joke": "a joke"}


def test_piping_a_pipeline_on_extends_it() -> None:
    head = P("{q}") | llms.FakeLLM(["x"])
    longer = head | (lambda reply: reply.content)
    assert len(longer.steps) == 3
    assert repr(longer) == "Pipeline(PromptTemplate | FakeLLM | <lambda>)"
    assert len(head.steps) == 2  # pipelines do not change once built


def test_a_pipeline_in_an_llm_chain_sequence(mode: Mode) -> None:
    shout = chains.Pipeline([chains.pick("text"), str.upper], name="shout")
    sequence = chains.SequentialChain(
        [chains.LLMChain(P("{q}"), llms.FakeLLM(["hey"])), shout],
        input_variables=["q"],
    )
    assert mode.call(sequence, {"q": "?"})["output"] == "HEY"


def test_a_pipeline_is_a_tool_body_for_an_agent(mode: Mode) -> None:
    summarise = P("Summarise: {input}") | llms.FakeLLM(["short"]) | (lambda r: r.content)

    @tools.tool
    def summary(text: str) -> str:
        """Summarises a text."""
        return chains.run(summarise, text)

    agent_llm = llms.FakeLLM(
        [
            "Thought: summarise\nAction: summary\nAction Input: a long text",
            "Thought: done\nFinal Answer: it says short",
        ]
    )
    executor = agents.Executor(agents.OneShotAgent(agent_llm, [summary]))
    pipeline = executor | chains.pick("output") | str.upper
    assert mode.run(pipeline, "what does it say?") == "IT SAYS SHORT"


def test_async_functions_run_in_sync_and_async_pipelines(mode: Mode) -> None:
    async def double(number: int) -> int:
        await asyncio.sleep(0)
        return number * 2

    pipeline = chains.pipe(double, double)
    assert mode.call(pipeline, {"input": 3}) == {"output": 12}


def test_sync_functions_run_off_the_event_loop_unless_they_never_block() -> None:
    threads: dict[str, int] = {}

    def blocking(value: int) -> int:
        threads["blocking"] = threading.get_ident()
        return value

    def quick(value: int) -> int:
        threads["quick"] = threading.get_ident()
        return value

    pipeline = chains.pipe(blocking, chains.step(quick, blocking=False))

    async def main() -> int:
        threads["loop"] = threading.get_ident()
        outputs = await chains.acall(pipeline, {"input": 1})
        return int(outputs["output"])

    assert asyncio.run(main()) == 1
    assert threads["blocking"] != threads["loop"]
    assert threads["quick"] == threads["loop"]


def test_a_tool_is_a_step_taking_text_or_its_arguments(mode: Mode) -> None:
    @tools.tool
    def add(a: int, b: int) -> str:
        """Adds two numbers."""
        return str(a + b)

    class Echo(tools.Tool):
        name = "echo"
        description = "echoes"

        def call(self, input: str) -> str:
            return input * 2

    assert mode.call({"a": chains.pick("x"), "b": chains.pick("y")} | add, {"x": 2, "y": 5}) == {
        "output": "7"
    }
    assert mode.run(chains.pipe(str.strip, Echo()), " ab ") == "abab"


def test_a_value_of_a_type_left_open_is_checked_when_it_comes(mode: Mode) -> None:
    pipeline = chains.pipe(lambda value: value, P("{a} {b}"))
    with pytest.raises(
        InputsTypeError, match=r"PromptTemplate takes a dict of \['a', 'b'\], got int"
    ):
        mode.call(pipeline, {"input": 5})


def test_a_model_step_refuses_what_is_not_text_or_messages(mode: Mode) -> None:
    pipeline = chains.pipe(lambda value: value, llms.FakeLLM(["x"]))
    with pytest.raises(InputsTypeError, match=r"FakeLLM takes text or messages, got int"):
        mode.call(pipeline, {"input": 5})


def test_a_model_takes_text_a_message_or_messages(mode: Mode) -> None:
    llm = llms.FakeLLM(["a", "b", "c"])
    for given in ("hi", Message.user("hi"), [Message.system("s"), Message.user("hi")]):
        pipeline = chains.pipe(lambda _, given=given: given, llm, lambda reply: reply.content)
        assert mode.run(pipeline, "x") in {"a", "b", "c"}
    assert [len(call.messages) for call in llm.calls] == [1, 1, 2]


def test_memory_reads_and_saves_around_a_pipeline(mode: Mode) -> None:
    from chainkit import memory

    history = memory.ConversationBuffer(memory_key="history")
    pipeline = chains.Pipeline(
        [P("{history}|{input}"), llms.FakeLLM(["one", "two"]), lambda reply: reply.content],
        memory=history,
    )
    mode.run(pipeline, "first")
    assert mode.run(pipeline, "second") == "two"
    assert "first" in history.load_memory_variables({})["history"]


def test_dumped_outputs_are_json_for_a_typical_pipeline(mode: Mode) -> None:
    pipeline = P("{q}") | llms.FakeLLM(['{"a": 1}']) | (lambda reply: json.loads(reply.content))
    assert mode.call(pipeline, {"q": "?"}) == {"output": {"a": 1}}
