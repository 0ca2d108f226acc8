"""A checkpointed run's journal: its state kept current and saved at each step (before its
tools start, then as each completes), and the checks that let a saved run continue here."""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Literal

from chainkit._text import described
from chainkit._threads import in_thread
from chainkit.agents.agent import Agent
from chainkit.agents.approval import GivenDecisions
from chainkit.checkpoints import (
    CheckpointConfigError,
    Checkpointer,
    InterruptedCallError,
    PendingCall,
    RunFinishedError,
    RunState,
    StateFormatError,
    StateMismatchError,
)
from chainkit.checkpoints.store import new_run_id
from chainkit.schema import AgentAction, AgentStep
from chainkit.tools import Toolset

Interrupted = Literal["raise", "repeat", "skip"]
SKIPPED = (
    "(this call was interrupted when the run stopped, and was not repeated: its outcome is unknown)"
)


class Journal:
    """The state of one run, shared with its loop (the same list of steps), saved to `store`
    (None: a state resumed without a store is kept in memory only)."""

    def __init__(self, store: Checkpointer | None, state: RunState) -> None:
        self.store = store
        self.state = state
        self._lock = threading.Lock()  # parallel tools complete in threads
        self._entries: dict[int, PendingCall] = {id(p.action): p for p in state.pending}
        self.decisions: GivenDecisions | None = None
        """The decisions for the calls of the step it paused on, given when resumed."""
        self._deferred: list[Callable[[], None]] | None = None
        """The store's work waiting for `settle` (an async run's), else None: done at once."""

    def planned(self) -> None:
        self.state.iteration += 1

    def resumed_actions(self) -> list[AgentAction]:
        """The calls of the step the run stopped in, to finish before planning again."""
        return [entry.action for entry in self.state.pending]

    def acting(self, actions: list[AgentAction]) -> None:
        """Saves the step's calls as started, unless they are the resumed step's."""
        pending = self.state.pending
        if pending and pending[0].action is actions[0]:
            if not all(p.started for p in pending):  # a step paused for approval starts now
                for entry in pending:
                    entry.started = True
                self.state.status = "running"
                self._save()
            return
        self.decisions = None
        self.state.pending = [PendingCall(action, True) for action in actions]
        self._entries = {id(p.action): p for p in self.state.pending}
        self._save()

    def runner(self, run_tool: Callable[[AgentAction], str]) -> Callable[[AgentAction], str]:
        """`run_tool`, skipped for a call completed before, its observation saved after."""

        def run(action: AgentAction) -> str:
            entry = self._entries[id(action)]
            if entry.observation is None:
                self._completed(entry, run_tool(action))
            assert entry.observation is not None
            return entry.observation

        return run

    def arunner(
        self, run_tool: Callable[[AgentAction], Awaitable[str]]
    ) -> Callable[[AgentAction], Awaitable[str]]:
        async def run(action: AgentAction) -> str:
            entry = self._entries[id(action)]
            if entry.observation is None:
                self._completed(entry, await run_tool(action))
                await self.settle()
            assert entry.observation is not None
            return entry.observation

        return run

    def defer(self) -> None:
        """Makes the store's work wait for `settle` (for an async run, whose event loop must
        not wait for a database)."""
        self._deferred = []

    async def settle(self, *, last: bool = False) -> None:
        """Does the store's work asked for since `defer`, in order, in a worker thread; with
        `last`, later work is done at once again. Raises the first failure, once every
        piece of work was tried (a release follows a failed save)."""
        work = self._deferred or []
        self._deferred = None if last else []
        if work:
            await in_thread(_do_all, work)

    def _completed(self, entry: PendingCall, observation: str) -> None:
        with self._lock:
            entry.observation = observation
            self._save()

    def paused(self, actions: list[AgentAction]) -> None:
        """Saves the step's calls as not started: the run waits for decisions on them."""
        self.state.pending = [PendingCall(action) for action in actions]
        self.state.status = "paused"
        self._save()
        self.release()

    def finished(self, outputs: dict[str, Any]) -> None:
        self.state.pending = []
        self.state.status = "finished"
        self.state.outputs = outputs if _is_json(outputs) else None
        self._save()
        self.release()

    def release(self) -> None:
        if self.store is not None:
            self._do(partial(self.store.release, self.state.run_id))

    def _save(self) -> None:
        if self.store is not None:
            self._do(partial(self.store.save, self.state))

    def _do(self, work: Callable[[], None]) -> None:
        if self._deferred is None:
            work()
        else:
            self._deferred.append(work)


def _do_all(work: list[Callable[[], None]]) -> None:
    failure: BaseException | None = None
    for piece in work:
        try:
            piece()
        except BaseException as error:
            failure = failure or error
    if failure is not None:
        raise failure


def start(
    store: Checkpointer | None, agent: Agent, inputs: Mapping[str, Any], steps: list[AgentStep]
) -> Journal:
    """The journal of a new run, saved and held (in memory only without a store)."""
    _check_json(inputs)
    tools = [tool.name for tool in agent.tools]
    state = RunState(new_run_id(), type(agent).__name__, tools, dict(inputs), steps)
    if store is not None:
        store.save(state)
        store.acquire(state.run_id)
    return Journal(store, state)


def resume(
    store: Checkpointer | None,
    agent: Agent,
    toolset: Toolset,
    given: object,
    interrupted: object,
) -> Journal:
    """The journal of a saved run to continue here: `given` is its id (in `store`), a
    RunState or its JSON form. Held (in `store`) once checked; raises, naming what differs,
    for a state this executor cannot continue."""
    if interrupted not in ("raise", "repeat", "skip"):
        raise CheckpointConfigError(
            f"interrupted must be 'raise', 'repeat' or 'skip', got {described(interrupted)}"
        )
    run_id = _run_id(given)
    if store is not None and run_id is not None:
        store.acquire(run_id)
    try:
        state = _state(store, given)
        if store is not None and run_id is None:
            store.save(state)
            store.acquire(state.run_id)
        _check_fits(state, agent, toolset)
        _settle_interrupted(state, toolset, interrupted)
    except BaseException:
        if store is not None:
            store.release(run_id or _given_id(given))
        raise
    return Journal(store, state)


def _run_id(given: object) -> str | None:
    return given if isinstance(given, str) and not given.lstrip().startswith("{") else None


def _given_id(given: object) -> str:
    if isinstance(given, RunState):
        return given.run_id
    return str(given.get("run_id", "")) if isinstance(given, Mapping) else ""


def _state(store: Checkpointer | None, given: object) -> RunState:
    if isinstance(given, RunState):
        return RunState.from_dict(given.to_dict())  # a copy: the caller's stays as it was
    if isinstance(given, Mapping):
        return RunState.from_dict(given)
    if isinstance(given, str):
        if given.lstrip().startswith("{"):
            return RunState.from_json(given)
        if store is None:
            raise CheckpointConfigError(
                f"resuming run {given!r} by id needs an Executor with a checkpointer; pass its "
                "RunState (or JSON) instead"
            )
        return store.load(given)
    raise StateFormatError(
        f"resume takes a run id, a checkpoints.RunState or its JSON form, got {described(given)}"
    )


def _check_fits(state: RunState, agent: Agent, toolset: Toolset) -> None:
    if state.status == "finished" and state.outputs is None:
        raise RunFinishedError(
            f"run {state.run_id!r} finished already, with outputs that are not JSON: there is "
            "nothing to resume"
        )
    kind = type(agent).__name__
    if state.agent != kind:
        raise StateMismatchError(
            f"run {state.run_id!r} is a run of a {state.agent}; this executor's agent is a {kind}"
        )
    missing = [name for name in state.tools if toolset.find(name) is None]
    if missing:
        raise StateMismatchError(
            f"run {state.run_id!r} needs tool(s) {missing} that this executor's agent lacks "
            f"(it has {list(toolset.names)})"
        )


def _settle_interrupted(state: RunState, toolset: Toolset, interrupted: object) -> None:
    """Decides each call cut in the middle: repeated when its tool is idempotent or the
    caller says so, observed as skipped when the caller says so; raises otherwise."""
    for entry in state.pending:
        if not entry.started or entry.observation is not None:
            continue
        action = entry.action
        tool = toolset.find(action.tool)
        if interrupted == "repeat" or (tool is not None and tool.idempotent):
            continue
        if interrupted == "skip":
            entry.observation = SKIPPED
            continue
        raise InterruptedCallError(
            state.run_id, action.tool, action.tool_call_id, action.tool_input
        )


def _is_json(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _check_json(inputs: Mapping[str, Any]) -> None:
    """Raises, naming the input, unless the inputs can be saved as JSON."""
    for key, value in inputs.items():
        if not _is_json(value):
            raise CheckpointConfigError(
                f"a checkpointed run's inputs are saved as JSON; input {key!r} is "
                f"{described(value)}, which is not JSON"
            )
