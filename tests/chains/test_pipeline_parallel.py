"""A dict step runs its branches side by side, sync (threads) and async (tasks): three model
calls of 100 ms each take about 100 ms, not 300 (issue 31; bench/bench_pipeline_parallel.py
measures it)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from chainkit import chains
from chainkit.llms import BaseModel, OpenAI
from chainkit.llms.model import ModelRequest
from chainkit.prompts import ChatPromptTemplate
from chainkit.schema import Message
from tests.support.modes import Mode, run_then_close
from tests.support.openai_server import LATE_REPLY, Fault, OpenAIServer

PROMPT = ChatPromptTemplate([("user", "Tell me about {topic}.")])
BRANCHES = ("summary", "facts", "joke")
MODEL_SECONDS = 0.1
BOUND_SECONDS = 0.25
"""Side by side the calls take about 0.1 s, one after another 0.3 s: the bound leaves a
loaded machine 150 ms of slack and still tells the two apart."""


def test_three_model_calls_of_100_ms_in_a_dict_step_take_about_100_ms(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    pipeline = PROMPT | dict.fromkeys(BRANCHES, openai_llm)
    outputs, elapsed = warmed_then_timed(mode, openai_server, openai_llm, pipeline)
    assert {key: reply.content for key, reply in outputs.items()} == dict.fromkeys(
        BRANCHES, LATE_REPLY
    )
    assert len(openai_server.chat_requests()) == 2 * len(BRANCHES)
    assert elapsed < BOUND_SECONDS, f"3 calls of 100 ms took {elapsed * 1000:.0f} ms"


def warmed_then_timed(
    mode: Mode, server: OpenAIServer, model: OpenAI, pipeline: chains.Pipeline
) -> tuple[dict[str, Any], float]:
    """The pipeline's outputs and wall time when each model call takes MODEL_SECONDS, after
    a first run that leaves out of the time what happens once: the SDK's import, the
    client's set-up and its connections (an async run's belong to its event loop: both
    runs share one)."""
    inputs = {"topic": "owls"}

    def slow_calls() -> float:
        server.fail(*[Fault.slow(MODEL_SECONDS)] * len(BRANCHES))
        return time.monotonic()

    server.push(*["warm"] * len(BRANCHES))
    if not mode.is_async:
        chains.call(pipeline, inputs)
        start = slow_calls()
        return chains.call(pipeline, inputs), time.monotonic() - start

    async def both() -> tuple[dict[str, Any], float]:
        await chains.acall(pipeline, inputs)
        start = slow_calls()
        return await chains.acall(pipeline, inputs), time.monotonic() - start

    return run_then_close(model, both())


class MeetingModel(BaseModel):
    """Answers only once every branch's call has begun: called one after another, the first
    call waits in vain and fails."""

    def __init__(self, callers: int) -> None:
        self.callers = callers
        self.threads = threading.Barrier(callers, timeout=5)
        self.tasks: asyncio.Barrier | None = None  # made in the event loop that waits on it

    def _generate(self, request: ModelRequest) -> Message:
        self.threads.wait()
        return Message.assistant("met")

    async def _agenerate(self, request: ModelRequest) -> Message:
        if self.tasks is None:
            self.tasks = asyncio.Barrier(self.callers)
        async with asyncio.timeout(5):
            await self.tasks.wait()
        return Message.assistant("met")


@pytest.mark.parametrize("branches", [2, 3, 16])
def test_every_branch_of_a_dict_step_is_running_at_once(mode: Mode, branches: int) -> None:
    model = MeetingModel(branches)
    pipeline = PROMPT | {f"branch_{number}": model for number in range(branches)}
    outputs = mode.call(pipeline, {"topic": "owls"})
    assert [reply.content for reply in outputs.values()] == ["met"] * branches
