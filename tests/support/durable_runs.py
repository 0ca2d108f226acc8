"""A run with side effects, to kill and resume: tools that append to a file, a model whose
replies depend only on the conversation (so a run resumed in a new process hears what an
uninterrupted one hears), and a store that SIGKILLs its process at a chosen point."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from chainkit import agents, chains, checkpoints, llms, tools
from chainkit.agents.approval import Approver
from chainkit.checkpoints.state import PendingCall
from chainkit.llms.model import ModelRequest
from chainkit.schema import FunctionCall, Message, ToolCall

QUESTION = "write the report"
ANSWER = "done: a, b, c, d"
MARK = "ok:"
"""Every observation starts with it: the model counts them to know where the run is."""


class Points:
    """Counts the points a run passes (a tool before and after its side effect, a save before
    and after it) and kills the process at point `kill_at` (None: never)."""

    def __init__(self, kill_at: int | None) -> None:
        self.kill_at = kill_at
        self.passed = 0

    def point(self) -> None:
        self.passed += 1
        if self.passed == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


class KillingStore:
    """A checkpoint store that may die around a save."""

    def __init__(self, store: Any, points: Points) -> None:
        self.store = store
        self.points = points

    def save(self, state: checkpoints.RunState) -> None:
        self.points.point()
        self.store.save(state)
        self.points.point()

    def load(self, run_id: str) -> checkpoints.RunState:
        return self.store.load(run_id)  # type: ignore[no-any-return]

    def runs(self) -> list[checkpoints.RunSummary]:
        return self.store.runs()  # type: ignore[no-any-return]

    def acquire(self, run_id: str) -> None:
        self.store.acquire(run_id)

    def release(self, run_id: str) -> None:
        self.store.release(run_id)


def side_effect_tools(log: Path, points: Points, approving: bool = False) -> list[tools.Tool]:
    def append_line(tool: str, text: str) -> str:
        points.point()
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"{tool}:{text}\n")
        points.point()
        return f"{MARK}{tool}:{text}"

    @tools.tool(requires_approval=approving)
    def append(text: str) -> str:
        """Appends text to the report."""
        return append_line("append", text)

    @tools.tool(idempotent=True)
    def note(text: str) -> str:
        """Notes text down (noting twice is harmless)."""
        return append_line("note", text)

    return [append, note]


def _call(call_id: str, tool: str, text: str) -> ToolCall:
    return ToolCall(call_id, FunctionCall(tool, json.dumps({"text": text})))


NATIVE_SCRIPT = [
    Message.assistant("", [_call("c1", "append", "a")]),
    Message.assistant("", [_call("c2", "note", "b"), _call("c3", "append", "c")]),
    Message.assistant("", [_call("c4", "append", "d")]),
    Message.assistant(ANSWER),
]
MRKL_SCRIPT = [
    *(
        f'Thought: next\nAction: {tool}\nAction Input: {{"text": "{text}"}}'
        for tool, text in [("append", "a"), ("note", "b"), ("append", "c"), ("append", "d")]
    ),
    f"Thought: all written\nFinal Answer: {ANSWER}",
]
EXPECTED_CALLS = ["append:a", "note:b", "append:c", "append:d"]
APPROVED_CALLS = ["append:a", "note:b", "append:C"]
"""The calls of a run whose person edits c into C and denies d."""


def decider(points: Points) -> Approver:
    """The person approving `append`: approves a, edits c into C, denies d (the denial's
    reason carries MARK, so the MRKL model counts it as an observation); the process may die
    while they decide."""

    def approve(request: agents.ApprovalRequest) -> agents.Approve | agents.Deny | agents.Edit:
        points.point()
        text = request.arguments["text"]
        if text == "d":
            return agents.Deny(f"{MARK}denied")
        if text == "c":
            return agents.Edit({"text": "C"})
        return agents.Approve()

    return approve


class ByObservations(llms.BaseModel):
    """Replies with `script[k]`, k the turns in the conversation so far."""

    def __init__(self, script: list[Message | str]) -> None:
        self.script = script
        self.heard: list[str] = []
        """The text of each request's last message."""

    def _generate(self, request: ModelRequest) -> Message:
        messages = request.messages
        self.heard.append(messages[-1].content)
        # A native run's turns are its replies; a MRKL run's, its observations.
        seen = sum(m.role == "assistant" for m in messages) or sum(
            m.content.count(MARK) for m in messages
        )
        reply = self.script[min(seen, len(self.script) - 1)]
        return Message.assistant(reply) if isinstance(reply, str) else reply


def executor(
    kind: str, log: Path, store: Any, points: Points, approving: bool = False
) -> agents.Executor:
    side_effects = side_effect_tools(log, points, approving)
    agent: agents.Agent
    if kind == "native":
        agent = agents.ToolCallingAgent(ByObservations(list(NATIVE_SCRIPT)), side_effects)
    else:
        agent = agents.OneShotAgent(ByObservations(list(MRKL_SCRIPT)), side_effects)
    approve = decider(points) if approving else None
    return agents.Executor(agent, max_iterations=10, checkpointer=store, approve=approve)


def run(mode: str, chain: agents.Executor, run_id: str) -> str:
    with checkpoints.named_run(run_id):
        if mode == "async":
            return asyncio.run(chains.arun(chain, QUESTION))
        return chains.run(chain, QUESTION)


def resume(mode: str, chain: agents.Executor, run_id: str) -> dict[str, Any]:
    if mode == "async":
        return asyncio.run(chains.aresume(chain, run_id, interrupted="repeat"))
    return chains.resume(chain, run_id, interrupted="repeat")


def mrkl_executor() -> agents.Executor:
    """The factory `chainkit runs resume` and `chainkit batch --checkpoint` are given in tests:
    its tools append to $CHAINKIT_TEST_LOG and kill the process at tool point
    $CHAINKIT_TEST_KILL_AT (if set); the command gives it its store."""
    kill_at = os.environ.get("CHAINKIT_TEST_KILL_AT")
    points = Points(int(kill_at) if kill_at else None)
    return executor("mrkl", Path(os.environ["CHAINKIT_TEST_LOG"]), None, points)


StoreSpec = tuple[str, str]
"""Which store a child process opens: ("sqlite", path) or ("postgres", dsn)."""


def open_store(spec: StoreSpec) -> Any:
    kind, where = spec
    if kind == "sqlite":
        return checkpoints.SQLiteStore(where)
    return checkpoints.PostgresStore(where)


def _made(entry: PendingCall) -> str:
    """The text a started call was made with: its edit's, if a person edited it."""
    if entry.decision is not None and entry.decision["kind"] == "edit":
        return str(entry.decision["arguments"]["text"])
    return str(json.loads(entry.action.tool_input)["text"])


def whole_run(
    spec: StoreSpec, kind: str, mode: str, log: str, run_id: str, approving: bool = False
) -> list[Any]:
    """An uninterrupted run: its answer and how many points it passed."""
    counting = Points(None)
    store = KillingStore(open_store(spec), counting)
    answer = run(mode, executor(kind, Path(log), store, counting, approving), run_id)
    return [answer, counting.passed]


def killed_run(
    spec: StoreSpec,
    kind: str,
    mode: str,
    log: str,
    run_id: str,
    kill_at: int,
    approving: bool = False,
) -> None:
    """A run that kills its process at point `kill_at`."""
    points = Points(kill_at)
    store = KillingStore(open_store(spec), points)
    run(mode, executor(kind, Path(log), store, points, approving), run_id)


def resumed_run(
    spec: StoreSpec, kind: str, mode: str, log: str, run_id: str, approving: bool = False
) -> list[Any]:
    """The stopped run resumed (made anew if it was killed before its first save): its
    outputs, and the calls it had cut in the middle, as `tool:text`."""
    store = open_store(spec)
    try:
        pending = store.load(run_id).pending
    except checkpoints.RunNotFoundError:
        pending = []
    cut = [
        f"{entry.action.tool}:{_made(entry)}"
        for entry in pending
        if entry.started and entry.observation is None
    ]
    chain = executor(kind, Path(log), store, Points(None), approving)
    try:
        outputs = resume(mode, chain, run_id)
    except checkpoints.RunNotFoundError:
        outputs = {"output": run(mode, chain, run_id)}
    return [outputs, cut]


def wait_for(path: Path) -> None:
    """Waits for another process to create `path` (60 s at most)."""
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.005)


def hold(spec: StoreSpec, state: dict[str, Any], ready: str, stop: str) -> None:
    """Saves `state`, holds its run, says so by creating `ready`, and waits for `stop`."""
    store = open_store(spec)
    run_state = checkpoints.RunState.from_dict(state)
    store.save(run_state)
    store.acquire(run_state.run_id)
    Path(ready).touch()
    wait_for(Path(stop))


def save(spec: StoreSpec, state: dict[str, Any]) -> None:
    open_store(spec).save(checkpoints.RunState.from_dict(state))


def resume_when_told(spec: StoreSpec, run_id: str, directory: str) -> str:
    """Resumes a MRKL run whose `append` waits for `directory`/go: its answer, or
    "locked: <the error>" when another process holds the run."""
    base = Path(directory)
    points = Points(None)
    append, note = side_effect_tools(base / "log", points)

    @tools.tool(name="append")
    def append_when_told(text: str) -> str:
        """Appends text, once the test says go."""
        wait_for(base / "go")
        return append.func(text)  # type: ignore[attr-defined, no-any-return]

    model = ByObservations(list(MRKL_SCRIPT[2:]))
    agent = agents.OneShotAgent(model, [append_when_told, note])
    chain = agents.Executor(agent, checkpointer=open_store(spec))
    try:
        answer: str = chains.resume(chain, run_id)["output"]
    except checkpoints.RunLockedError as error:
        return f"locked: {error}"
    return answer
