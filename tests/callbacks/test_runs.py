"""Run identity: every event knows its run, and the runs of concurrent work form exact trees."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from chainkit import agents, chains, tools
from chainkit.callbacks import RunInfo, current_run
from chainkit.callbacks.events import EVENTS
from chainkit.llms import BaseModel, FakeLLM, ModelRequest
from chainkit.prompts import PromptTemplate
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode
from tests.support.stub_chains import InputOutputChain

LIFECYCLE = {
    **{e.method.removeprefix("handle_"): e.phase for e in EVENTS if e.phase != "other"},
    "agent_action": "action",
}
"""The events that open, close or happen in a run, by what they are to it."""


def lifecycle(recorder: EventRecorder) -> list[tuple[str, RunInfo | None]]:
    """Each start, end, error and agent action heard, with the run `current_run()` named."""
    return [(LIFECYCLE[name], run) for name, run in recorder.runs(*LIFECYCLE)]


def tree(recorder: EventRecorder) -> dict[str | None, list[RunInfo]]:
    """Children by parent id, from the start events; checks every run was started once
    and ended (or failed) exactly once, after its start."""
    seen: Counter[str] = Counter()
    children: dict[str | None, list[RunInfo]] = {}
    for event, run in lifecycle(recorder):
        assert run is not None, f"{event} heard outside any run"
        if event == "start":
            assert seen[run.id] == 0, f"{run} started twice"
            children.setdefault(run.parent_id, []).append(run)
        elif event in ("end", "error"):
            assert seen[run.id] == 1, f"{run} ended without a start, or twice"
        seen[run.id] += event != "action"
    assert all(count == 2 for count in seen.values()), seen
    return children


class TwoToolsThenAnswer(BaseModel):
    """Calls `alpha` and `beta` at once, then answers: the same script for any conversation."""

    def _generate(self, request: ModelRequest) -> Message:
        question = request.messages[-1]
        if question.role == "tool":
            return Message.assistant(f"done: {request.messages[1].content}")
        calls = [ToolCall(f"call_{name}", FunctionCall(name, '{"input": "x"}')) for name in TOOLS]
        return Message.assistant("", tool_calls=calls)


TOOLS = ("alpha", "beta")


class Meeting(tools.Tool):
    """Waits until every parallel call has started, so the calls truly overlap, and records
    the run it sees from inside `call`."""

    description = "meets its siblings"

    def __init__(self, name: str, barrier: threading.Barrier, seen: list[RunInfo | None]) -> None:
        self.name = name
        self._barrier = barrier
        self._seen = seen

    def call(self, input: str) -> str:
        self._seen.append(current_run())
        self._barrier.wait(timeout=10)
        return f"{self.name} ok"


def executor_and_tools(parties: int) -> tuple[agents.Executor, list[RunInfo | None]]:
    barrier = threading.Barrier(parties)
    seen: list[RunInfo | None] = []
    tool_list = [Meeting(name, barrier, seen) for name in TOOLS]
    agent = agents.ToolCallingAgent(TwoToolsThenAnswer(), tool_list)
    return agents.Executor(agent), seen


def check_trees(recorder: EventRecorder, seen: list[RunInfo | None], items: int) -> None:
    children = tree(recorder)
    roots = children[None]
    assert len(roots) == items
    assert all(root.kind == "chain" and root.name == "Executor" for root in roots)
    for root in roots:
        kinds = Counter((run.kind, run.name) for run in children[root.id])
        assert kinds == {
            ("llm", "TwoToolsThenAnswer"): 2,
            ("tool", "alpha"): 1,
            ("tool", "beta"): 1,
        }
        assert all(run.id not in children for run in children[root.id])  # leaves
    tool_runs = {run for kids in children.values() for run in kids if run.kind == "tool"}
    assert set(seen) == tool_runs  # Tool.call sees its own run
    assert len({run.id for run in tool_runs}) == 2 * items


@pytest.mark.timeout(30)
def test_abatch_of_parallel_tool_calls_rebuilds_one_exact_tree_per_item():
    recorder = EventRecorder()
    executor, seen = executor_and_tools(parties=6)  # all six tool calls of three items at once
    inputs = [{"input": f"q{i}"} for i in range(3)]
    outputs = asyncio.run(chains.abatch(executor, inputs, callbacks=recorder))
    assert [out["output"] for out in outputs] == ["done: q0", "done: q1", "done: q2"]
    check_trees(recorder, seen, 3)


@pytest.mark.timeout(30)
def test_batch_in_threads_with_sync_parallel_tools_rebuilds_the_same_trees():
    recorder = EventRecorder()
    executor, seen = executor_and_tools(parties=2)  # each item's two calls meet
    inputs = [{"input": f"q{i}"} for i in range(3)]
    outputs = chains.batch(executor, inputs, max_workers=3, callbacks=[recorder])
    assert [out["output"] for out in outputs] == ["done: q0", "done: q1", "done: q2"]
    check_trees(recorder, seen, 3)


@pytest.mark.timeout(30)
def test_a_batch_item_inside_an_outer_run_is_its_child():
    recorder = EventRecorder()

    class Outer(InputOutputChain):
        def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
            inner, _ = executor_and_tools(parties=2)
            results = chains.batch(inner, [{"input": "a"}, {"input": "b"}])
            return {"output": ",".join(r["output"] for r in results)}

    assert chains.run(Outer(), "x", callbacks=recorder) == "done: a,done: b"
    children = tree(recorder)
    [outer] = children[None]
    assert [run.name for run in children[outer.id]] == ["Executor", "Executor"]


def test_current_run_is_none_outside_runs_and_set_inside_a_model_call():
    assert current_run() is None
    inside: list[RunInfo | None] = []

    class Watching(FakeLLM):
        def _generate(self, request: ModelRequest) -> Message:
            inside.append(current_run())
            return super()._generate(request)

    Watching(["hi"]).generate([Message.user("q")])
    [run] = inside
    assert run is not None and run.kind == "llm" and run.name == "Watching"
    assert run.parent_id is None and run.start_time <= time.time()
    assert current_run() is None


class Broken(tools.Tool):
    name = "broken"
    description = "fails"

    def call(self, input: str) -> str:
        raise tools.ToolError("no luck")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "script",
    [
        ["Action: broken\nAction Input: x", "Final Answer: ok"],
        ["Action: nowhere\nAction Input: x", "Final Answer: ok"],
        ["no format at all", "Final Answer: ok"],
    ],
    ids=["tool error", "unknown tool", "parse error"],
)
def test_every_run_is_closed_once_on_error_paths(script: list[str], mode: Mode):
    recorder = EventRecorder()
    executor = agents.Executor(
        agents.OneShotAgent(FakeLLM(script), [Broken()]),
        error_handler=agents.ParserErrorHandler(),
    )
    answer = mode.run(executor, "q", callbacks=recorder)
    assert answer == "ok"
    children = tree(recorder)
    [root] = children[None]
    kinds = [run.kind for run in children[root.id]]
    assert kinds.count("llm") == 2
    assert kinds.count("tool") == (0 if "no format" in script[0] else 1)


class Sleeper(tools.Tool):
    name = "sleeper"
    description = "sleeps"

    def __init__(self) -> None:
        self.release = threading.Event()

    def call(self, input: str) -> str:
        self.release.wait(timeout=10)
        return "woke"

    async def acall(self, input: str) -> str:
        await asyncio.sleep(10)
        return "woke"


@pytest.mark.timeout(30, method="thread")
def test_a_call_cut_by_the_deadline_reports_its_error_as_its_own_run(mode: Mode):
    recorder = EventRecorder()
    sleeper = Sleeper()
    executor = agents.Executor(
        agents.OneShotAgent(FakeLLM(["Action: sleeper\nAction Input: x"]), [sleeper]),
        max_execution_time=0.3,
    )
    try:
        with pytest.raises(agents.NotFinishedError):
            mode.run(executor, "q", callbacks=recorder)
    finally:
        sleeper.release.set()
    children = tree(recorder)
    [root] = children[None]
    [tool_run] = [run for run in children[root.id] if run.kind == "tool"]
    closing = [event for event, run in lifecycle(recorder) if run == tool_run][-1]
    assert closing == "error"


class SlowEmbedder:
    """Embeds a query once `release` is set (at most 10 s): a remote embedder that stalls."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.done = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, float(len(text))] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.release.wait(timeout=10)
        self.done.set()
        return [1.0, 0.0]


@pytest.mark.timeout(30, method="thread")
def test_a_retrieval_cut_by_the_deadline_is_closed_once_and_heard_no_more():
    recorder, embedder = EventRecorder(), SlowEmbedder()
    catalog = [Broken()]
    retriever = tools.ToolRetriever(catalog, embedder=embedder)
    agent = agents.OneShotAgent(FakeLLM(["Final Answer: 42"]), catalog, tool_retriever=retriever)
    executor = agents.Executor(agent, max_execution_time=0.3)
    try:
        with pytest.raises(agents.NotFinishedError):
            chains.run(executor, "q", callbacks=recorder)
    finally:
        embedder.release.set()
    assert embedder.done.wait(10)
    time.sleep(0.05)  # what the abandoned retrieval reports after its end is dropped
    children = tree(recorder)
    [root] = children[None]
    [retrieval] = children[root.id]
    assert retrieval.kind == "retriever"
    closing = [event for event, run in lifecycle(recorder) if run == retrieval]
    assert closing == ["start", "error"]


class Stalling(BaseModel):
    """Answers once `release` is set (at most 10 s)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.done = threading.Event()

    def _generate(self, request: ModelRequest) -> Message:
        self.release.wait(timeout=10)
        self.done.set()
        return Message.assistant("late")


class Asks(tools.Tool):
    """Asks a chain of its own, whose model stalls."""

    name = "asks"
    description = "asks another model"

    def __init__(self, model: BaseModel) -> None:
        self.chain = chains.LLMChain(PromptTemplate.from_template("{q}"), model)

    def call(self, input: str) -> str:
        return chains.run(self.chain, input)


@pytest.mark.timeout(30, method="thread")
def test_a_chain_inside_a_tool_cut_by_the_deadline_is_closed_once_and_heard_no_more():
    recorder, model = EventRecorder(), Stalling()
    agent = agents.OneShotAgent(FakeLLM(["Action: asks\nAction Input: x"]), [Asks(model)])
    # The inner chain must reach its model before the deadline (an abandoned step is stopped
    # at its next event): 2 s leaves room on a loaded machine.
    executor = agents.Executor(agent, max_execution_time=2.0)
    try:
        with pytest.raises(agents.NotFinishedError):
            chains.run(executor, "q", callbacks=recorder)
    finally:
        model.release.set()
    assert model.done.wait(10)
    time.sleep(0.05)
    children = tree(recorder)
    [root] = children[None]
    [tool_run] = [run for run in children[root.id] if run.kind == "tool"]
    [chain_run] = children[tool_run.id]
    [model_run] = children[chain_run.id]
    cut = [model_run, chain_run, tool_run]
    closing = [
        (run, event) for event, run in lifecycle(recorder) if run in cut and event != "start"
    ]
    assert closing == [(run, "error") for run in cut]  # the innermost first


def test_the_handlers_of_a_run_stay_its_own():
    first, second = EventRecorder(), EventRecorder()
    chain = chains.LLMChain(PromptTemplate.from_template("{q}"), FakeLLM(["a", "b"]))
    chains.run(chain, "x", callbacks=first)
    chains.run(chain, "y", callbacks=[second])
    assert len(lifecycle(first)) == len(lifecycle(second)) == 4
    assert {run.id for _, run in lifecycle(first) if run}.isdisjoint(
        {run.id for _, run in lifecycle(second) if run}
    )


def test_callbacks_given_to_a_component_join_those_of_the_call():
    own, given = EventRecorder(), EventRecorder()
    llm = FakeLLM(["Final Answer: 42"])
    agent = agents.OneShotAgent(llm, [Broken()], callbacks=own)
    chains.run(agents.Executor(agent), "q", callbacks=given)
    assert [event for event, _ in lifecycle(own)] == ["start", "end"]  # the agent's model call
    assert [event for event, _ in lifecycle(given)] == ["start", "start", "end", "end"]
    assert lifecycle(own)[0][1] == lifecycle(given)[1][1]  # the same llm run, heard by both


def test_a_tool_retrieval_is_a_retriever_run_inside_the_agents_run():
    recorder = EventRecorder()
    catalog = [Broken(), Meeting("alpha", threading.Barrier(1), [])]
    retriever = tools.ToolRetriever(catalog, top_k=1)
    agent = agents.OneShotAgent(FakeLLM(["Final Answer: 42"]), catalog, tool_retriever=retriever)
    assert chains.run(agents.Executor(agent), "which one fails", callbacks=recorder) == "42"
    children = tree(recorder)
    [root] = children[None]
    kinds = [(run.kind, run.name) for run in children[root.id]]
    assert kinds == [("retriever", "ToolRetriever"), ("llm", "FakeLLM")]  # never the query


def test_reporting_for_what_is_no_run_is_a_handler_type_error():
    from chainkit.callbacks.errors import HandlerTypeError
    from chainkit.callbacks.run import reporting_for

    with pytest.raises(HandlerTypeError, match="reporting_for takes a run"):  # noqa: SIM117
        with reporting_for(object()):  # type: ignore[arg-type]
            pass
