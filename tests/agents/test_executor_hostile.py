"""Hostile tests for agents and the Executor.

- `max_execution_time` cuts the model or tool call in progress short, sync and async, and a
  call that never returns holds up neither the run nor the interpreter's exit.
- Every start event gets exactly one end or error event, on every path (`Pairs`).
- Tools an agent could not use are refused when it is built; so are handlers that are none.
- Checks that can be made before work starts are made before it starts.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
from collections import Counter

import pytest

from chainkit import agents, callbacks, chains, tools
from chainkit.agents import (
    DeadlineExceededError,
    Executor,
    NotFinishedError,
    OneShotAgent,
    OutputParserError,
    ToolCallingAgent,
)
from chainkit.callbacks import Handler
from chainkit.llms import FakeLLM
from chainkit.llms.fake import FakeLLMExhaustedError
from chainkit.llms.model import BaseModel
from chainkit.memory import ConversationBuffer
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.openai_server import Fault
from tests.support.stub_tools import Echo

KINDS = ["mrkl", "native"]
GENEROUS = 8.0
"""Seconds a run cut by a 0.5 s deadline may take at most, on a loaded machine: still under
the 10 s the slow tool and model take when nothing cuts them."""


# Scripts: the same run for either agent.


def calls(kind, *pairs):
    """A reply calling each (tool, input) of `pairs`: MRKL takes one, native all at once."""
    if kind == "mrkl":
        [(tool, tool_input)] = pairs
        return f" I should act\nAction: {tool}\nAction Input: {tool_input}"
    tool_calls = [
        ToolCall(f"call_{n}", FunctionCall(tool, json.dumps({"input": tool_input})))
        for n, (tool, tool_input) in enumerate(pairs)
    ]
    return Message.assistant("", tool_calls)


def answer(kind, text):
    return f" I now know\nFinal Answer: {text}" if kind == "mrkl" else Message.assistant(text)


def make_agent(kind, llm, tool_list, **options):
    agent_class = OneShotAgent if kind == "mrkl" else ToolCallingAgent
    return agent_class(llm, tool_list, **options)


# Tools.


class Raises(tools.Tool):
    description = "raises"

    def __init__(self, error, name="raises"):
        self.error = error
        self.name = name

    def call(self, input):
        raise self.error


class Returns(tools.Tool):
    description = "returns what it was given"

    def __init__(self, value, name="returns"):
        self.value = value
        self.name = name

    def call(self, input):
        return self.value


class Blocks(tools.Tool):
    """Blocks until `release` is set (at most `seconds`); records start and end."""

    description = "takes its time"

    def __init__(self, name="slow", seconds=10.0):
        self.name = name
        self.seconds = seconds
        self.release = threading.Event()
        self.started = threading.Event()
        self.finished = threading.Event()

    def call(self, input):
        self.started.set()
        try:
            self.release.wait(self.seconds)
            return f"{self.name} done"
        finally:
            self.finished.set()


class Pairs(Handler):
    """Records start, end and error events from any thread, and checks they pair up."""

    def __init__(self):
        self.events = []
        self._lock = threading.Lock()

    def _add(self, *event):
        with self._lock:
            self.events.append(event)

    def handle_llm_start(self, messages, options):
        self._add("llm", "start", "", options)

    def handle_llm_end(self, message):
        self._add("llm", "end", "", message)

    def handle_llm_error(self, error):
        self._add("llm", "error", "", error)

    def handle_chain_start(self, chain, inputs):
        self._add("chain", "start", chain, inputs)

    def handle_chain_end(self, chain, outputs):
        self._add("chain", "end", chain, outputs)

    def handle_chain_error(self, chain, error):
        self._add("chain", "error", chain, error)

    def handle_tool_start(self, tool, input, tool_call_id):
        self._add("tool", "start", tool, input)

    def handle_tool_end(self, tool, output, tool_call_id):
        self._add("tool", "end", tool, output)

    def handle_tool_error(self, tool, error, tool_call_id):
        self._add("tool", "error", tool, error)

    def of(self, kind, phase):
        """(name, detail) of each event of that kind and phase."""
        with self._lock:
            return [(e[2], e[3]) for e in self.events if e[:2] == (kind, phase)]

    def assert_paired(self):
        with self._lock:
            events = list(self.events)
        open_calls: Counter[tuple[str, str]] = Counter()
        for kind, phase, name, _ in events:
            if phase == "start":
                open_calls[kind, name] += 1
                continue
            assert open_calls[kind, name] > 0, f"{kind} {phase} of {name!r} with no start: {events}"
            open_calls[kind, name] -= 1
        assert not +open_calls, f"started and never ended: {dict(+open_calls)} in {events}"
        assert events, "no event at all was recorded"


class RaisingPairs(Pairs):
    """Pairs that raises (with raise_error) at the first event named `event`."""

    raise_error = True

    def __init__(self, event):
        super().__init__()
        self.event = event

    def __getattribute__(self, name):
        if name == object.__getattribute__(self, "event"):
            recorded = getattr(Pairs, name).__get__(self)

            def raising(*args):
                recorded(*args)
                raise RuntimeError(f"handler failed at {name}")

            return raising
        return object.__getattribute__(self, name)


# 1. Every start gets exactly one end or error.


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", KINDS)
def test_tool_failures_become_observations_with_paired_events(kind, mode):
    pairs = Pairs()
    script = [
        calls(kind, ("tool_error", "a")),
        calls(kind, ("crash", "b")),
        calls(kind, ("number", "c")),
        calls(kind, ("nowhere", "d")),
        answer(kind, "done"),
    ]
    fake = FakeLLM(script)
    tool_list = [
        Raises(tools.ToolError("city not found"), "tool_error"),
        Raises(RuntimeError("disk full"), "crash"),
        Returns(42, "number"),
    ]
    executor = Executor(
        make_agent(kind, fake, tool_list),
        handle_tool_errors=True,
        return_intermediate_steps=True,
        callbacks=pairs,
    )
    outputs = mode.call(executor, {"input": "q"})
    observations = [step.observation for step in outputs["intermediate_steps"]]
    assert observations[:3] == ["city not found", "Tool error: RuntimeError: disk full", "42"]
    assert observations[3].startswith("nowhere is not a valid tool")
    assert pairs.of("tool", "end") == [("number", "42")]
    errors = ["tool_error", "crash", "(unknown tool)"]  # never named what the model wrote
    assert [name for name, _ in pairs.of("tool", "error")] == errors
    pairs.assert_paired()


class BadArguments(tools.Tool):
    """input_from_arguments fails with an error that is no ToolError."""

    name = "picky"
    description = "refuses its arguments"

    def input_from_arguments(self, arguments):
        raise ValueError("no arguments suit me")

    def call(self, input):
        raise AssertionError("must not run")


@tools.tool
def count_to(n: int) -> str:
    """Counts up to n."""
    return " ".join(str(i) for i in range(1, n + 1))


def sink_breaks(chunk):
    raise ValueError("sink broke")


def failing_runs(kind):
    """For each way a run can fail part way: its tools, script, call options, and what the
    run raises (or returns)."""
    cases = {
        "tool raises": ([Raises(RuntimeError("boom"))], [calls(kind, ("raises", "x"))], {}),
        "interrupt": ([Raises(KeyboardInterrupt())], [calls(kind, ("raises", "x"))], {}),
        "model fails": ([Echo()], [], {}),
        "streaming_func raises": (
            [Echo()],
            [answer(kind, "a long answer that streams")],
            {"streaming_func": sink_breaks},
        ),
        "bad arguments": (
            [count_to],
            [calls(kind, ("count_to", "not a number")), answer(kind, "ok")],
            {},
        ),
    }
    if kind == "mrkl":
        cases["parse error"] = ([Echo()], ["no format at all"], {})
    else:
        cases["arguments raise"] = ([BadArguments()], [calls(kind, ("picky", "x"))], {})
    return cases


FAILURES = {
    "tool raises": RuntimeError,
    "interrupt": KeyboardInterrupt,
    "model fails": FakeLLMExhaustedError,
    "streaming_func raises": ValueError,
    "bad arguments": None,
    "parse error": OutputParserError,
    "arguments raise": ValueError,
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("kind", "case"), [(kind, case) for kind in KINDS for case in failing_runs(kind)]
)
def test_events_pair_up_when_a_run_fails(kind, case, mode):
    tool_list, script, options = failing_runs(kind)[case]
    pairs = Pairs()
    executor = Executor(make_agent(kind, FakeLLM(script), tool_list), callbacks=pairs)
    expected = FAILURES[case]
    if expected is None:
        assert mode.run(executor, "q", **options) == "ok"
    else:
        with pytest.raises(expected):
            mode.run(executor, "q", **options)
    pairs.assert_paired()


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "event", ["handle_tool_start", "handle_llm_start", "handle_chain_start", "handle_tool_end"]
)
def test_events_pair_up_when_a_handler_raises(kind, mode, event):
    strict, bystander = RaisingPairs(event), Pairs()
    script = [calls(kind, ("echo", "x")), answer(kind, "ok")]
    executor = Executor(make_agent(kind, FakeLLM(script), [Echo()]), callbacks=[strict, bystander])
    with pytest.raises(RuntimeError, match=f"handler failed at {event}"):
        mode.run(executor, "q")
    strict.assert_paired()
    bystander.assert_paired()
    assert strict.events == bystander.events  # the raising handler deprived no one


class AsyncWaits(tools.Tool):
    """A natively async tool that waits until cancelled."""

    name = "waits"
    description = "waits"

    async def acall(self, input):
        await asyncio.sleep(30)
        return "late"


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("waiting_for", ["model", "async tool", "sync tool"])
def test_events_pair_up_when_the_caller_cancels_an_async_run(kind, waiting_for):
    pairs = Pairs()
    blocking = Blocks("slow")
    if waiting_for == "model":
        agent = make_agent(kind, SlowModel(), [Echo()])
    else:
        name = "waits" if waiting_for == "async tool" else "slow"
        agent = make_agent(kind, FakeLLM([calls(kind, (name, "x"))]), [AsyncWaits(), blocking])
    executor = Executor(agent, callbacks=pairs)
    cut = "llm" if waiting_for == "model" else "tool"

    async def main():
        run = asyncio.ensure_future(chains.arun(executor, "q"))
        while not pairs.of(cut, "start"):
            await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    try:
        asyncio.run(main())
    finally:
        blocking.release.set()
    pairs.assert_paired()
    [(_, error)] = pairs.of(cut, "error")
    assert isinstance(error, asyncio.CancelledError)
    assert isinstance(pairs.of("chain", "error")[0][1], asyncio.CancelledError)


@pytest.mark.timeout(20)
def test_a_memory_that_fails_to_load_starts_nothing(mode):
    class Broken(ConversationBuffer):
        def load_memory_variables(self, inputs):
            raise OSError("history store unreachable")

    pairs = Pairs()
    suffix = "{history}\nQuestion: {input}\n{agent_scratchpad}"
    fake = FakeLLM([answer("mrkl", "x")])
    executor = Executor(
        OneShotAgent(fake, [Echo()], suffix=suffix), memory=Broken(), callbacks=pairs
    )
    with pytest.raises(OSError, match="unreachable"):
        mode.run(executor, "q")
    assert pairs.events == [] and fake.calls == []


# 2. max_execution_time cuts the step in progress short.


@pytest.mark.timeout(20, method="thread")
@pytest.mark.parametrize("kind", KINDS)
def test_deadline_cuts_a_slow_tool_short(kind, mode):
    slow, pairs = Blocks(), Pairs()
    script = [calls(kind, ("echo", "first")), calls(kind, ("slow", "x")), answer(kind, "never")]
    executor = Executor(
        make_agent(kind, FakeLLM(script), [Echo(), slow]),
        max_execution_time=0.5,
        callbacks=pairs,
    )
    began = time.monotonic()
    try:
        with pytest.raises(NotFinishedError) as info:
            mode.run(executor, "q")
        assert time.monotonic() - began < GENEROUS
    finally:
        slow.release.set()
    error = info.value
    assert error.limit == "max_execution_time"
    assert "reached max_execution_time=0.5s before tool 'slow' finished; 1 tool call: echo" in str(
        error
    )
    assert [step.observation for step in error.steps] == ["echo: first"]
    [(name, cause)] = pairs.of("tool", "error")
    expected = asyncio.CancelledError if mode.is_async else DeadlineExceededError
    assert name == "slow" and isinstance(cause, expected)
    pairs.assert_paired()
    assert slow.finished.wait(5)
    time.sleep(0.05)  # what the abandoned call reports after its end is dropped
    assert [name for name, _ in pairs.of("tool", "end")] == ["echo"]
    pairs.assert_paired()


class SlowModel(BaseModel):
    """Answers after `seconds` (or when released); records the options of each call."""

    def __init__(self, seconds=10.0):
        self.seconds = seconds
        self.release = threading.Event()
        self.finished = threading.Event()
        self.options = []

    def _generate(self, request):
        self.options.append(request.options)
        self.release.wait(self.seconds)
        if request.streaming_func is not None:
            request.streaming_func("late text")
        self.finished.set()
        return Message.assistant(answer("mrkl", "late"))

    async def _agenerate(self, request):
        self.options.append(request.options)
        await asyncio.sleep(self.seconds)
        return Message.assistant(answer("mrkl", "late"))


@pytest.mark.timeout(20, method="thread")
def test_deadline_cuts_a_slow_model_short(mode):
    model, pairs = SlowModel(), Pairs()
    executor = Executor(OneShotAgent(model, [Echo()]), max_execution_time=0.5, callbacks=pairs)
    streamed: list[str] = []
    began = time.monotonic()
    try:
        with pytest.raises(NotFinishedError, match=r"max_execution_time=0\.5s while waiting for"):
            mode.run(executor, "q", streaming_func=streamed.append)
        assert time.monotonic() - began < GENEROUS
    finally:
        model.release.set()
    [(_, cause)] = pairs.of("llm", "error")
    assert isinstance(cause, asyncio.CancelledError if mode.is_async else TimeoutError)
    pairs.assert_paired()
    if not mode.is_async:  # the model is told how long it has, to end its own call
        assert 0 < model.options[0]["timeout"] <= 0.5
        assert model.finished.wait(5)
        time.sleep(0.05)
        assert streamed == [] and len(pairs.of("llm", "end")) == 0  # the late reply is dropped
        pairs.assert_paired()


@pytest.mark.timeout(20, method="thread")
def test_deadline_holds_against_a_stalled_server_and_its_retries(mode, make_openai, openai_server):
    """Five attempts of 5 s each would take 25 s; the run must end at its 1 s deadline."""
    openai_server.fail(*[Fault.slow(10) for _ in range(5)])
    llm = make_openai(timeout=5, max_attempts=5)
    executor = Executor(OneShotAgent(llm, [Echo()]), max_execution_time=1)
    # The first call imports openai, in the event loop for an async run: seconds on a loaded
    # machine without bytecode caches, which no deadline can cut. Here it is done already.
    importlib.import_module("openai")
    began = time.monotonic()
    with pytest.raises(NotFinishedError, match="while waiting for the model"):
        mode.run(executor, "q")
    assert time.monotonic() - began < 1 + GENEROUS


@pytest.mark.timeout(20, method="thread")
def test_no_tool_starts_once_the_deadline_has_passed(mode, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(
        "chainkit.agents._deadline.time", types.SimpleNamespace(monotonic=lambda: clock[0])
    )

    class Late(BaseModel):
        """Replies in time for the executor's wait, but past the deadline on its clock."""

        def _generate(self, request):
            clock[0] += 30
            return Message.assistant(calls("mrkl", ("send", "mail")))

    sent = []

    class Send(Echo):
        name = "send"

        def call(self, input):
            sent.append(input)
            return "sent"

    pairs = Pairs()
    executor = Executor(OneShotAgent(Late(), [Send()]), max_execution_time=25, callbacks=pairs)
    with pytest.raises(
        NotFinishedError, match=r"reached max_execution_time=25s; no step was taken"
    ) as info:
        mode.run(executor, "q")
    assert sent == [] and pairs.of("tool", "start") == []
    assert info.value.limit == "max_execution_time"


@pytest.mark.timeout(20, method="thread")
@pytest.mark.parametrize("kind", KINDS)
def test_generate_still_answers_after_the_deadline(kind, mode):
    slow, pairs = Blocks(), Pairs()
    fake = FakeLLM([calls(kind, ("slow", "x")), answer(kind, "best effort")])
    executor = Executor(
        make_agent(kind, fake, [slow]),
        max_execution_time=0.5,
        early_stopping_method="generate",
        callbacks=pairs,
    )
    try:
        assert mode.run(executor, "q") == "best effort"
    finally:
        slow.release.set()
    assert len(fake.calls) == 2
    assert "timeout" not in fake.calls[1].options  # the final answer is not cut by the deadline
    pairs.assert_paired()


@pytest.mark.timeout(20, method="thread")
def test_parallel_calls_under_a_deadline_keep_what_finished(mode):
    stuck, never, pairs = Blocks("stuck"), Blocks("never"), Pairs()
    reply = calls("native", ("echo", "a"), ("stuck", "b"), ("never", "c"))
    agent = ToolCallingAgent(FakeLLM([reply]), [Echo(), stuck, never], max_parallel_tools=1)
    executor = Executor(agent, max_execution_time=0.5, callbacks=pairs)
    try:
        with pytest.raises(
            NotFinishedError, match=r"before tools 'stuck', 'never' finished"
        ) as info:
            mode.run(executor, "q")
    finally:
        stuck.release.set()
        never.release.set()
    assert [(s.action.tool, s.observation) for s in info.value.steps] == [("echo", "echo: a")]
    time.sleep(0.1)
    assert not never.started.is_set()  # queued behind the stuck call, never begun
    assert [name for name, _ in pairs.of("tool", "error")] == ["stuck"]
    pairs.assert_paired()


@pytest.mark.timeout(20, method="thread")
def test_a_deadline_that_is_not_reached_changes_nothing(mode):
    pairs = Pairs()
    reply = calls("native", ("echo", "a"), ("echo", "b"), ("number", "c"))
    agent = ToolCallingAgent(
        FakeLLM([reply, answer("native", "fine")]), [Echo(), Returns(7, "number")]
    )
    executor = Executor(
        agent, max_execution_time=30, return_intermediate_steps=True, callbacks=pairs
    )
    outputs = mode.call(executor, {"input": "q"})
    assert outputs["output"] == "fine"
    assert [s.observation for s in outputs["intermediate_steps"]] == ["echo: a", "echo: b", "7"]
    pairs.assert_paired()
    failing = Executor(
        ToolCallingAgent(FakeLLM([calls("native", ("raises", "x"))]), [Raises(KeyError("k"))]),
        max_execution_time=30,
    )
    with pytest.raises(KeyError):  # a tool's own error is not a deadline
        mode.run(failing, "q")


@pytest.mark.timeout(20, method="thread")
def test_steps_run_in_the_callers_thread_without_a_deadline():
    seen = []

    class Where(tools.Tool):
        name = "where"
        description = "says where it runs"

        def call(self, input):
            seen.append(threading.current_thread())
            return "here"

    executor = Executor(
        OneShotAgent(FakeLLM([calls("mrkl", ("where", "x")), answer("mrkl", "ok")]), [Where()])
    )
    chains.run(executor, "q")
    assert seen == [threading.current_thread()]


@pytest.mark.timeout(20, method="thread")
def test_worker_threads_see_the_callers_context(mode):
    request_id = contextvars.ContextVar("request_id", default="unset")
    seen = []

    class Reads(tools.Tool):
        name = "reads"
        description = "reads the context"

        def call(self, input):
            seen.append(request_id.get())
            return "read"

    executor = Executor(
        ToolCallingAgent(
            FakeLLM([calls("native", ("reads", "a"), ("reads", "b")), answer("native", "ok")]),
            [Reads()],
        ),
        max_execution_time=30,
    )

    def main():
        request_id.set("req-7")
        return mode.run(executor, "q")

    assert contextvars.copy_context().run(main) == "ok"
    assert seen == ["req-7", "req-7"]


@pytest.mark.timeout(90, method="thread")
def test_an_interrupt_while_waiting_for_parallel_tools_closes_their_events():
    # In a fresh interpreter, whose SIGINT handler it can set without touching pytest's.
    result = subprocess.run(
        [sys.executable, "-c", f"import {__name__} as t; t.interrupt_parallel_tools()"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def interrupt_parallel_tools():
    """Interrupts a run waiting for two parallel tools; the tools' events are still closed."""
    # A process started in the background of a shell without job control (as CI may be)
    # ignores SIGINT; a user's Ctrl-C raises KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stuck, pairs = Blocks("stuck"), Pairs()
    main_ident = threading.main_thread().ident
    assert main_ident is not None
    main_thread: int = main_ident

    class Interrupts(tools.Tool):
        name = "interrupts"
        description = "sends the main thread a SIGINT once the other call has started"

        def call(self, input):
            stuck.started.wait(5)
            signal.pthread_kill(main_thread, signal.SIGINT)
            return "sent"

    reply = calls("native", ("stuck", "a"), ("interrupts", "b"))
    executor = Executor(ToolCallingAgent(FakeLLM([reply]), [stuck, Interrupts()]), callbacks=pairs)
    try:
        with pytest.raises(KeyboardInterrupt):
            chains.run(executor, "q")
    finally:
        stuck.release.set()
    pairs.assert_paired()
    errors = dict(pairs.of("tool", "error"))
    assert isinstance(errors["stuck"], KeyboardInterrupt)


NEVER_RETURNS = """
import asyncio, sys, threading, time
from chainkit import agents, chains, tools
from chainkit.llms import FakeLLM

class Forever(tools.Tool):
    name = "forever"
    description = "never returns"

    def call(self, input):
        threading.Event().wait()

reply = " I act\\nAction: forever\\nAction Input: x"
executor = agents.Executor(
    agents.OneShotAgent(FakeLLM([reply]), [Forever()]), max_execution_time=0.3
)
began = time.monotonic()
try:
    if sys.argv[1] == "async":
        asyncio.run(chains.arun(executor, "q"))
    else:
        chains.run(executor, "q")
except agents.NotFinishedError as error:
    print(f"{type(error).__name__}: {error}")
print(f"run took {time.monotonic() - began:.1f}s")
"""


@pytest.mark.timeout(90, method="thread")
def test_a_tool_that_never_returns_holds_up_neither_the_run_nor_the_exit(mode, tmp_path):
    script = tmp_path / "never_returns.py"
    script.write_text(textwrap.dedent(NEVER_RETURNS))
    # A run or an exit held up by the tool never ends: the timeout fails it, however slow
    # the machine is.
    result = subprocess.run(
        [sys.executable, str(script), mode.name], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert (
        "NotFinishedError: agent not finished: reached max_execution_time=0.3s before tool "
        "'forever' finished" in result.stdout
    )


# 3. What an agent cannot use is refused when it is built.


class Named(tools.Tool):
    def __init__(self, name, description="does a thing"):
        self.name = name
        self.description = description

    def call(self, input):
        return input


class CustomAgent(agents.Agent):
    """A minimal Agent of the user's own, to show the Executor checks its tools too."""

    input_keys = ["input"]  # noqa: RUF012
    output_keys = ["output"]  # noqa: RUF012

    def __init__(self, tool_list):
        self._tools = tool_list

    @property
    def tools(self):
        return self._tools

    def plan(self, steps, inputs, **options):
        raise AssertionError("not run")

    aplan = plan_final = aplan_final = plan


BUILDERS = {
    "OneShotAgent": lambda tool_list: OneShotAgent(FakeLLM([]), tool_list),
    "ToolCallingAgent": lambda tool_list: ToolCallingAgent(FakeLLM([]), tool_list),
    "Executor": lambda tool_list: Executor(CustomAgent(tool_list)),
}


@pytest.mark.parametrize("builder", sorted(BUILDERS))
@pytest.mark.parametrize(
    ("tool_list", "message"),
    [
        ([Named("search", "")], "'search' has no description"),
        ([Named("search", "   \n")], "'search' has no description"),
        ([Named("")], "has an empty name"),
        ([Named(" \t")], "has an empty name"),
        ([Named("web\nsearch")], r"'web\\nsearch' has a space at an end or a control character"),
        ([Named(" search")], "' search' has a space at an end"),
        ([Named("search ")], "'search ' has a space at an end"),
        ([Named("se\x00arch")], "control character"),
        ([Named("search"), Named("search")], "two tools are named 'search'"),
        ([Named("Search"), Named("SEARCH")], "differ only in case, 'Search' and 'SEARCH'"),
        ([Named("straße"), Named("STRASSE")], "differ only in case, 'straße' and 'STRASSE'"),
    ],
)
def test_tools_no_agent_could_use_are_refused(builder, tool_list, message):
    with pytest.raises(ValueError, match=message):
        BUILDERS[builder](tool_list)


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_a_tool_whose_name_or_description_is_no_text_is_refused(builder):
    with pytest.raises(TypeError, match="name and description must be str, got NoneType and str"):
        BUILDERS[builder]([Named(None)])
    with pytest.raises(
        TypeError,
        match=r"got builtin_function_or_method.*; make a function a tool with @tools\.tool",
    ):
        BUILDERS[builder]([len])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("search, fast", "has a comma"),
        ("lookup Action Input: x", r"reads back as 'lookup'"),
        ('"quoted"', r"reads back as 'quoted'"),
        ("**bold**", r"reads back as 'bold'"),
    ],
)
def test_names_the_mrkl_format_cannot_carry_are_refused_by_the_mrkl_agent(name, message):
    with pytest.raises(ValueError, match=message):
        OneShotAgent(FakeLLM([]), [Named(name)])


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["随机数计算工具", "Google Search", "get-weather_v2"])
def test_unicode_and_spaced_names_work_end_to_end(kind, name):
    fake = FakeLLM([calls(kind, (name, "x")), answer(kind, "ok")])
    executor = Executor(make_agent(kind, fake, [Named(name)]), return_intermediate_steps=True)
    [step] = chains.call(executor, {"input": "q"})["intermediate_steps"]
    assert step.observation == "x"


@pytest.mark.parametrize("bad", [print, "LogHandler", 42, [callbacks.LogHandler(), print]])
def test_a_handler_that_is_no_handler_is_refused_when_built(bad):
    def building():
        yield lambda: OneShotAgent(FakeLLM([]), [Echo()], callbacks=bad)
        yield lambda: ToolCallingAgent(FakeLLM([]), [Echo()], callbacks=bad)
        yield lambda: Executor(OneShotAgent(FakeLLM([]), [Echo()]), callbacks=bad)

    for build in building():
        with pytest.raises(TypeError, match=r"callbacks of \w+ must be a chainkit"):
            build()


@pytest.mark.timeout(20)
def test_a_list_of_handlers_all_hear_the_run(mode):
    first, second, third = Pairs(), Pairs(), Pairs()
    fake = FakeLLM([calls("mrkl", ("echo", "x")), answer("mrkl", "ok")])
    executor = Executor(OneShotAgent(fake, [Echo()]), callbacks=[first, second])
    assert mode.run(executor, "q", callbacks=(third,)) == "ok"
    assert first.events == second.events == third.events
    first.assert_paired()


@pytest.mark.timeout(20)
@pytest.mark.parametrize("bad", [print, [callbacks.LogHandler(), "x"], object()])
def test_a_callbacks_option_that_is_no_handler_fails_before_any_work(mode, bad):
    tool = Returns("sent")
    fake = FakeLLM([calls("mrkl", ("returns", "mail")), answer("mrkl", "ok")])
    executor = Executor(OneShotAgent(fake, [tool]))
    with pytest.raises(TypeError, match=r"callbacks must be a chainkit\.callbacks\.Handler"):
        mode.run(executor, "q", callbacks=bad)
    assert fake.calls == []


@pytest.mark.timeout(20)
def test_run_refuses_intermediate_steps_before_the_tools_run(mode):
    sent = []

    class SendMail(tools.Tool):
        name = "send_mail"
        description = "sends an e-mail"

        def call(self, input):
            sent.append(input)
            return "sent"

    fake = FakeLLM([calls("mrkl", ("send_mail", "hi boss")), answer("mrkl", "sent it")])
    executor = Executor(OneShotAgent(fake, [SendMail()]), return_intermediate_steps=True)
    with pytest.raises(chains.errors.SingleKeyError, match=r"\['output', 'intermediate_steps'\]"):
        mode.run(executor, "q")
    with pytest.raises(chains.errors.SingleKeyError, match="predict"):
        mode.predict(executor, {"input": "q"})
    assert sent == [] and fake.calls == []


@pytest.mark.timeout(20)
def test_a_memory_that_could_not_save_the_answer_fails_before_the_tools_run(mode):
    sent = []

    class SendMail(Echo):
        def call(self, input):
            sent.append(input)
            return "sent"

    suffix = "{history}\nQuestion: {input}\n{agent_scratchpad}"
    fake = FakeLLM([calls("mrkl", ("echo", "hi")), answer("mrkl", "done")])
    executor = Executor(
        OneShotAgent(fake, [SendMail()], suffix=suffix),
        memory=ConversationBuffer(output_key="answer"),
    )
    with pytest.raises(ValueError, match="output key 'answer' not found; got \\['output'\\]"):
        mode.run(executor, "q")
    assert sent == [] and fake.calls == []


def test_an_executor_needs_an_agent():
    with pytest.raises(TypeError, match=r"agent must be an agents\.Agent .* got FakeLLM"):
        Executor(FakeLLM([]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_execution_time must be a positive"):
        Executor(OneShotAgent(FakeLLM([]), [Echo()]), max_execution_time=float("nan"))
