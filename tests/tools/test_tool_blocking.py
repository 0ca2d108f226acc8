"""Tool.blocking: async runs call a tool that returns at once (the built-ins, or a tool marked
`blocking = False`) in the event loop's thread, and any other sync tool in a worker thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from chainkit import agents, chains, tools
from chainkit.llms import FakeLLM


def thread_of_acall(tool: tools.Tool, input: str = "1+1") -> tuple[str, str]:
    """The thread `tool.acall` ran `call` in, and the event loop's."""

    async def main() -> tuple[str, str]:
        await tool.acall(input)
        return seen[-1], threading.current_thread().name

    seen: list[str] = []
    original = tool.call

    def recording(text: str) -> str:
        seen.append(threading.current_thread().name)
        return original(text)

    tool.call = recording  # type: ignore[method-assign,assignment]
    return asyncio.run(main())


@pytest.mark.parametrize(
    ("tool", "input"),
    [(tools.Calculator(), "1+1"), (tools.RandomNumber(seed=1), "1-6"), (tools.CurrentTime(), "")],
    ids=["calculator", "random_number", "current_time"],
)
def test_built_in_tools_run_in_the_event_loops_thread(tool, input):
    ran_in, loop_thread = thread_of_acall(tool, input)
    assert ran_in == loop_thread


class Lookup(tools.Tool):
    name = "lookup"
    description = "looks things up"

    def call(self, input: str) -> str:
        return f"found {input}"


class QuickLookup(Lookup):
    blocking = False


def test_a_tool_of_yours_runs_in_a_worker_thread_unless_marked_not_blocking():
    ran_in, loop_thread = thread_of_acall(Lookup())
    assert ran_in != loop_thread and ran_in.startswith("chainkit-worker")
    ran_in, loop_thread = thread_of_acall(QuickLookup())
    assert ran_in == loop_thread


def test_a_structured_tool_is_threaded_unless_made_with_blocking_false():
    def double(x: int) -> int:
        """Doubles x."""
        return 2 * x

    threaded, inline = tools.tool(double), tools.tool(blocking=False)(double)
    assert threaded.blocking and not inline.blocking
    ran_in, loop_thread = thread_of_acall(threaded, "2")
    assert ran_in != loop_thread
    ran_in, loop_thread = thread_of_acall(inline, "2")
    assert ran_in == loop_thread
    assert asyncio.run(inline.acall("21")) == "42"


def test_blocking_must_be_a_bool():
    with pytest.raises(TypeError, match="blocking must be True or False, got 'no'"):
        tools.StructuredTool(lambda: 1, name="one", description="one", blocking="no")  # type: ignore[arg-type]


class Stops(QuickLookup):
    def call(self, input: str) -> str:
        raise StopIteration("done")


def test_a_stop_raised_inline_ends_the_call_as_it_does_in_a_thread():
    for tool in (Stops(), type("ThreadedStops", (Stops,), {"blocking": True})()):
        with pytest.raises(RuntimeError, match=r"tool 'lookup' raised StopIteration: done"):
            asyncio.run(tool.acall("x"))


@pytest.mark.timeout(30)
def test_an_async_run_calls_non_blocking_tools_without_a_thread():
    seen: list[str] = []

    class Recorded(QuickLookup):
        def call(self, input: str) -> str:
            seen.append(threading.current_thread().name)
            return super().call(input)

    llm = FakeLLM(
        [
            " I look it up.\nAction: lookup\nAction Input: a",
            " I now know the final answer.\nFinal Answer: done",
        ]
    )
    executor = agents.Executor(agents.OneShotAgent(llm, [Recorded()]))

    async def main() -> tuple[str, str]:
        return await chains.arun(executor, "go"), threading.current_thread().name

    answer, loop_thread = asyncio.run(main())
    assert (answer, seen) == ("done", [loop_thread])
