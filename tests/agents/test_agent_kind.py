"""A new kind of agent is two methods on BaseAgent: what to send the model, and what its reply
decides. The plans, sync and async, the final answer at a limit and tool retrieval come with it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from chainkit import agents, chains, tools
from chainkit.llms import FakeLLM
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Message


class LineAgent(agents.BaseAgent):
    """Asks in one line per step; the model replies `<tool> <input>` or `answer <text>`."""

    def plan_request(
        self,
        steps: Sequence[AgentStep],
        inputs: Mapping[str, Any],
        offered: Sequence[tools.Tool] | None,
        final: bool,
    ) -> agents.PlanRequest:
        names = [tool.name for tool in (self.tools if offered is None else offered)]
        lines = [f"tools: {' '.join(names)}", f"question: {inputs['input']}"]
        lines += [f"{s.action.tool} {s.action.tool_input} -> {s.observation}" for s in steps]
        if final:
            lines.append("answer now")
        return agents.PlanRequest([Message.user("\n".join(lines))], stop=["\n"])

    def read_reply(self, reply: Message, final: bool) -> list[AgentAction] | AgentFinish:
        word, _, rest = reply.content.partition(" ")
        if final or word == "answer":
            return AgentFinish({self.output_key: rest}, reply.content)
        return [AgentAction(word, rest, reply.content)]


class Upper(tools.Tool):
    name = "upper"
    description = "puts text in capitals"
    blocking = False

    def call(self, input: str) -> str:
        return input.upper()


class Reverse(tools.Tool):
    name = "reverse"
    description = "reverses text"
    blocking = False

    def call(self, input: str) -> str:
        return input[::-1]


def run(executor: agents.Executor, question: str, asynchronous: bool) -> dict[str, Any]:
    if asynchronous:
        return asyncio.run(chains.acall(executor, {"input": question}))
    return chains.call(executor, {"input": question})


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_new_agent_kind_of_two_methods_runs_under_the_executor(asynchronous):
    llm = FakeLLM(["upper abc", "reverse ABC", "answer CBA"])
    executor = agents.Executor(LineAgent(llm, [Upper(), Reverse()]), return_intermediate_steps=True)
    outputs = run(executor, "shout it backwards", asynchronous)
    assert outputs["output"] == "CBA"
    assert [step.observation for step in outputs["intermediate_steps"]] == ["ABC", "CBA"]
    assert llm.calls[2].messages[0].content == (
        "tools: upper reverse\nquestion: shout it backwards\nupper abc -> ABC\nreverse ABC -> CBA"
    )
    assert all(call.options["stop"] == ["\n"] for call in llm.calls)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_new_agent_kind_answers_at_a_limit_and_offers_what_a_retriever_selects(asynchronous):
    llm = FakeLLM(["reverse abc", "all done"])
    tool_list = [Upper(), Reverse()]
    retriever = tools.ToolRetriever(tool_list, top_k=1)
    agent = LineAgent(llm, tool_list, tool_retriever=retriever)
    executor = agents.Executor(agent, max_iterations=1, early_stopping_method="generate")
    outputs = run(executor, "reverses text", asynchronous)
    assert outputs["output"] == "done"  # read with final=True: the whole reply is the answer
    assert llm.calls[0].messages[0].content.startswith("tools: reverse\n")
    assert llm.calls[1].messages[0].content.endswith("reverse abc -> cba\nanswer now")


def test_an_agent_kind_missing_either_method_cannot_be_built():
    class RequestOnly(agents.BaseAgent):
        def plan_request(
            self,
            steps: Sequence[AgentStep],
            inputs: Mapping[str, Any],
            offered: Sequence[tools.Tool] | None,
            final: bool,
        ) -> agents.PlanRequest:
            return agents.PlanRequest([])

    with pytest.raises(TypeError, match="read_reply"):
        RequestOnly(FakeLLM([]), [Upper()])  # type: ignore[abstract]


def test_a_kind_that_reads_actions_from_a_final_reply_does_not_finish():
    class NeverDone(LineAgent):
        def read_reply(self, reply: Message, final: bool) -> list[AgentAction] | AgentFinish:
            return [AgentAction("upper", reply.content, reply.content)]

    llm = FakeLLM(["upper a", "upper b"])
    executor = agents.Executor(
        NeverDone(llm, [Upper()]), max_iterations=1, early_stopping_method="generate"
    )
    with pytest.raises(agents.NotFinishedError, match="NeverDone reads as actions") as stopped:
        chains.run(executor, "q")
    assert [step.observation for step in stopped.value.steps] == ["UPPER A"]
