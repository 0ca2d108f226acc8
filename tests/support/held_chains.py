"""Chains a serving test holds in the middle of a run: they say when they started, wait for
the test to release them, and record whether their run was cancelled."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from chainkit import agents, chains, checkpoints, llms, tools
from tests.support.approvals import CallsThenReports
from tests.support.openai_server import TEST_API_KEY, Call, OpenAIServer, Reply
from tests.support.stub_chains import InputOutputChain

POLL_SECONDS = 0.01
HOLD_SECONDS = 60.0
"""The longest a chain waits to be released (a test that forgets ends, never hangs)."""


class HeldChain(InputOutputChain):
    """Answers "done: <input>" once `release` is set; `started`, `cancelled` and `finished`
    tell the test where its run is."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.cancelled = threading.Event()
        self.finished = threading.Event()

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        self.started.set()
        self.release.wait(HOLD_SECONDS)
        self.finished.set()
        return {"output": f"done: {inputs['input']}"}

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        self.started.set()
        try:
            await _released(self.release)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        self.finished.set()
        return {"output": f"done: {inputs['input']}"}


class Echo(InputOutputChain):
    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        return {"output": inputs["input"]}


class ChattyChain(InputOutputChain):
    """Runs an inner chain on a large text again and again (two large events each time) until
    released or cancelled: a run whose events outpace a client that does not read."""

    def __init__(self, text_size: int = 64 * 1024) -> None:
        self.text = "x" * text_size
        self.release = threading.Event()
        self.cancelled = threading.Event()
        self._inner = Echo()

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        raise NotImplementedError("served chains run async")

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        try:
            while not self.release.is_set():
                await chains.acall(self._inner, {"input": self.text})
                await asyncio.sleep(POLL_SECONDS / 2)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return {"output": "released"}


async def _released(release: threading.Event) -> None:
    for _ in range(int(HOLD_SECONDS / POLL_SECONDS)):
        if release.is_set():
            return
        await asyncio.sleep(POLL_SECONDS)


def held_agent(
    openai_server: OpenAIServer, store: checkpoints.Checkpointer
) -> tuple[agents.Executor, threading.Event]:
    """A checkpointed agent over the loopback server that calls its one tool, `wait_here`
    (idempotent: repeated when resumed), which waits for the event returned; then it answers
    "all done"."""
    release = threading.Event()

    @tools.tool(idempotent=True)
    def wait_here() -> str:
        """Waits here."""
        release.wait(HOLD_SECONDS)
        return "waited"

    openai_server.push(Reply(tool_calls=[Call("wait_here", "{}", "c1")]), "all done")
    model = llms.OpenAI(
        "loopback-model", base_url=openai_server.base_url, api_key=TEST_API_KEY, timeout=10
    )
    agent = agents.ToolCallingAgent(model, [wait_here])
    return agents.Executor(agent, checkpointer=store), release


class ApprovedThenHeld:
    """A checkpointed agent whose one tool, `slow`, needs approval (a run pauses for it) and,
    once approved, waits for `release`; each call of it is counted in `calls` (acquire it
    once per call the test waits for)."""

    def __init__(self, store: checkpoints.Checkpointer) -> None:
        self.release = threading.Event()
        self.calls = threading.Semaphore(0)

        @tools.tool(requires_approval=True)
        def slow(step: str) -> str:
            """Takes its time."""
            self.calls.release()
            self.release.wait(HOLD_SECONDS)
            return f"did {step}"

        agent = agents.ToolCallingAgent(CallsThenReports(("slow", {"step": "one"})), [slow])
        self.executor = agents.Executor(agent, checkpointer=store)
