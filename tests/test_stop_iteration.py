"""StopIteration and StopAsyncIteration raised by user code (a tool, a chain, a model).

Neither may escape a chainkit call as itself: an asyncio Future cannot hold StopIteration, so
a worker thread raising it left `chains.arun` waiting forever, and either one escaping a call
silently ends whatever loop the caller is iterating in. Both paths raise the same RuntimeError,
an EscapedStopError (from the original), and `handle_tool_errors=True` observes the same text
on both.
"""

import asyncio

import pytest

from chainkit import EscapedStopError, chains, llms, tools
from chainkit.agents import Executor, OneShotAgent, ToolCallingAgent
from chainkit.llms import FakeLLM
from chainkit.llms.model import BaseModel, ModelRequest
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.stub_chains import InputOutputChain

STOPS = [StopIteration, StopAsyncIteration]


class Raises(tools.Tool):
    name = "raises"
    description = "raises what it is given"

    def __init__(self, error):
        self.error = error

    def call(self, input):
        raise self.error


class Fine(tools.Tool):
    name = "fine"
    description = "answers"

    def call(self, input):
        return "fine result"


class RaisingChain(InputOutputChain):
    def __init__(self, error):
        self.error = error

    def _call(self, inputs, **options):
        raise self.error


class ExhaustedModel(BaseModel):
    """A scripted model that reads its replies with next(): the classic way to leak one."""

    def __init__(self, error):
        self.error = error

    def _generate(self, request: ModelRequest) -> Message:
        raise self.error


def mrkl_executor(tool, **options):
    fake = FakeLLM([" x\nAction: raises\nAction Input: now", " Final Answer: done"])
    return Executor(OneShotAgent(fake, [tool, Fine()]), **options), fake


def outcome(run):
    """The error a run ends with, as (type, message, cause type)."""
    try:
        run()
    except BaseException as error:
        cause = type(error.__cause__) if error.__cause__ is not None else None
        return type(error), str(error), cause
    raise AssertionError("the run did not fail")


def both_paths(make_chain, input="q"):
    sync = outcome(lambda: chains.run(make_chain(), input))
    async_ = outcome(lambda: asyncio.run(asyncio.wait_for(chains.arun(make_chain(), input), 5)))
    return sync, async_


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop", STOPS)
def test_a_sync_tool_raising_a_stop_ends_both_paths_with_the_same_runtime_error(stop):
    sync, async_ = both_paths(lambda: mrkl_executor(Raises(stop("gone")))[0])
    assert sync == async_ == (EscapedStopError, f"tool 'raises' raised {stop.__name__}: gone", stop)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop", STOPS)
def test_handle_tool_errors_observes_the_same_text_on_both_paths(stop):
    executor, sync_fake = mrkl_executor(Raises(stop()), handle_tool_errors=True)
    assert chains.run(executor, "q") == "done"
    executor, async_fake = mrkl_executor(Raises(stop()), handle_tool_errors=True)
    assert asyncio.run(asyncio.wait_for(chains.arun(executor, "q"), 5)) == "done"
    expected = f"Observation: Tool error: EscapedStopError: tool 'raises' raised {stop.__name__}"
    for fake in (sync_fake, async_fake):
        assert expected in fake.calls[1].messages[0].content


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop", STOPS)
def test_parallel_tool_calls_with_one_stop_end_both_paths_alike(stop):
    def make():
        calls = [
            ToolCall("a", FunctionCall("fine", '{"input": "1"}')),
            ToolCall("b", FunctionCall("raises", '{"input": "2"}')),
        ]
        fake = FakeLLM([Message.assistant("", calls), "done"])
        return Executor(ToolCallingAgent(fake, [Fine(), Raises(stop())]))

    sync, async_ = both_paths(make)
    # The threads' map() is a generator: a bare StopIteration there became
    # "generator raised StopIteration" on the sync path only.
    assert sync == async_ == (EscapedStopError, f"tool 'raises' raised {stop.__name__}", stop)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop", STOPS)
def test_an_async_structured_tool_raising_a_stop_ends_both_paths_alike(stop):
    @tools.tool
    async def lookup(query: str) -> str:
        """Looks things up."""
        raise stop()

    def make():
        fake = FakeLLM([" x\nAction: lookup\nAction Input: now"])
        return Executor(OneShotAgent(fake, [lookup]))

    sync, async_ = both_paths(make)
    # A coroutine turns StopIteration into Python's own RuntimeError (PEP 479).
    assert sync[0] is async_[0] and issubclass(sync[0], RuntimeError)
    if stop is StopAsyncIteration:  # a coroutine lets it through: chainkit names the tool
        assert sync == async_ == (EscapedStopError, "tool 'lookup' raised StopAsyncIteration", stop)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop", STOPS)
def test_a_sync_chain_raising_a_stop_ends_both_paths_alike(stop):
    sync, async_ = both_paths(lambda: RaisingChain(stop()))
    assert sync == async_ == (EscapedStopError, f"chain RaisingChain raised {stop.__name__}", stop)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop", STOPS)
def test_batches_report_the_runtime_error_in_place(stop):
    chain = RaisingChain(stop())
    inputs = [{"input": "a"}, {"input": "b"}]
    sync = chains.batch(chain, inputs, return_exceptions=True)
    async_ = asyncio.run(asyncio.wait_for(chains.abatch(chain, inputs, return_exceptions=True), 5))
    assert [type(r) for r in sync + async_] == [EscapedStopError] * 4
    assert {str(r) for r in sync + async_} == {f"chain RaisingChain raised {stop.__name__}"}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop", STOPS)
def test_direct_tool_and_chain_acall_do_not_hang(stop):
    async def main():
        with pytest.raises(EscapedStopError, match=f"tool 'raises' raised {stop.__name__}"):
            await asyncio.wait_for(Raises(stop()).acall("x"), 5)
        with pytest.raises(EscapedStopError, match=f"chain RaisingChain raised {stop.__name__}"):
            await asyncio.wait_for(RaisingChain(stop())._acall({"input": "x"}), 5)

    asyncio.run(main())


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop", STOPS)
def test_a_model_raising_a_stop_raises_the_same_error_sync_and_async(stop):
    model = ExhaustedModel(stop())
    sync = outcome(lambda: llms.call(model, "hi"))
    async_ = outcome(lambda: asyncio.run(asyncio.wait_for(llms.acall(model, "hi"), 5)))
    assert (
        sync == async_ == (EscapedStopError, f"model ExhaustedModel raised {stop.__name__}", stop)
    )


@pytest.mark.timeout(60)
def test_a_stop_no_longer_silently_ends_the_callers_loop():
    # map() over questions: a StopIteration escaping chains.run used to end the map early,
    # so the caller got [] and no error at all.
    with pytest.raises(EscapedStopError, match="tool 'raises' raised StopIteration"):
        list(map(lambda q: chains.run(mrkl_executor(Raises(StopIteration()))[0], q), ["a"]))

    class Answers:
        def __aiter__(self):
            return self

        async def __anext__(self):
            executor = mrkl_executor(Raises(StopAsyncIteration()))[0]
            return await chains.arun(executor, "q")

    async def collect():
        return [answer async for answer in Answers()]

    with pytest.raises(EscapedStopError, match="tool 'raises' raised StopAsyncIteration"):
        asyncio.run(asyncio.wait_for(collect(), 5))
