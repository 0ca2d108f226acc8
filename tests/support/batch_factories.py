"""Chains for `chainkit batch --agent tests.support.batch_factories:...` in the batch and
Ray tests."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from chainkit import agents, chains, llms, prompts
from chainkit.llms import OpenAI
from tests.support.stub_chains import InputOutputChain

BASE_URL_VARIABLE = "CHAINKIT_TEST_BASE_URL"
"""Where `loopback_agent` finds the loopback OpenAI server of the test that runs it."""


class Echo(InputOutputChain):
    """Answers "echo: <input>", after `delay` seconds of awaiting (so runs overlap); an
    input of "fail" raises, and "nan" answers a float that JSON has no form for."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        if inputs["input"] == "fail":
            raise ValueError("asked to fail, with key sk-abcdefghijklmnopqrstuvwxyz")
        if inputs["input"] == "nan":
            return {"output": float("nan")}
        return {"output": f"echo: {inputs['input']}"}

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._call(inputs, **options)


def echo() -> Echo:
    return Echo()


def slow_echo() -> Echo:
    return Echo(delay=0.05)


def two_inputs() -> chains.Chain:
    return chains.LLMChain(
        prompts.PromptTemplate.from_template("{a} and {b}"), llms.FakeLLM(["ok"] * 1000)
    )


def not_a_chain() -> list[int]:
    return [1, 2, 3]


def broken() -> chains.Chain:
    raise RuntimeError("the factory could not start")


def loopback_agent() -> agents.Executor:
    """A MRKL agent over the built-in tools, on the loopback server's OpenAI endpoint."""
    from chainkit import tools

    llm = OpenAI("loopback-model", base_url=os.environ[BASE_URL_VARIABLE], api_key="sk-test-key")
    return agents.Executor(agents.OneShotAgent(llm, tools.builtin_tools()))


def with_memory() -> chains.Chain:
    from chainkit import memory

    return chains.LLMChain(
        prompts.PromptTemplate.from_template("{history}\nHuman: {input}\nAI:"),
        llms.FakeLLM(["hello"] * 100),
        memory=memory.ConversationBuffer(),
    )


CALLS_VARIABLE = "CHAINKIT_TEST_CALLS_FILE"
"""A file to which `counting_echo` adds one line per run it makes, to count the runs."""


class CountingEcho(Echo):
    """An Echo that notes each of its runs in the file `CALLS_VARIABLE` names, as a paid
    model call would be billed."""

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        with open(os.environ[CALLS_VARIABLE], "a", encoding="utf-8") as calls:
            calls.write(f"{inputs['input']}\n")
        return await super()._acall(inputs, **options)


def counting_echo() -> Echo:
    return CountingEcho(delay=0.01)
