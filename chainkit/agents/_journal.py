"""A checkpointed (or pausable) run's journal: its state kept current and saved at each step
(before its calls start, as a person decides one, and as each completes), its hold on the run
in the store, and the checks that let a saved run continue here."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, Literal

from chainkit._text import described
from chainkit._threads import in_thread
from chainkit.agents._gate import Gate
from chainkit.agents._tool_call import ToolCalls, Waiting
from chainkit.agents.agent import Agent
from chainkit.agents.approval import (
    ApprovalRequest,
    Denial,
    PendingApproval,
    needs_approval,
    report_required,
)
from chainkit.callbacks.combining import CombiningHandler
from chainkit.chains.chain import Resumption
from chainkit.checkpoints import (
    Checkpointer,
    InterruptedCallError,
    RunFinishedError,
    RunNotFoundError,
    RunState,
    StaleStateError,
    StateFormatError,
    StateMismatchError,
)
from chainkit.checkpoints.errors import CheckpointConfigError
from chainkit.checkpoints.state import PendingCall, json_problem
from chainkit.checkpoints.store import new_run_id
from chainkit.schema import AgentAction, AgentStep
from chainkit.tools import Toolset

Interrupted = Literal["raise", "repeat", "skip"]
SKIPPED = (
    "(this call was interrupted when the run stopped, and was not repeated: its outcome is unknown)"
)
Waits = Callable[[AgentAction], bool] | None
"""Whether a call waits for a person's decision before it starts (None: no call does)."""


class Journal:
    """The state of one run, shared with its loop (the same list of steps), saved to `store`
    (None: a state resumed without a store is kept in memory only), which `held` the run
    until `release`."""

    def __init__(self, store: Checkpointer | None, state: RunState, held: bool) -> None:
        self.store = store
        self.state = state
        self._held = held
        self._lock = threading.Lock()  # parallel tools complete in threads
        self._entries: dict[int, PendingCall] = {id(p.action): p for p in state.pending}
        self._deferred: list[Callable[[], None]] | None = None
        """The store's work waiting for `settle` (an async run's), else None: done at once."""

    def planned(self) -> None:
        self.state.iteration += 1

    def resumed_actions(self) -> list[AgentAction]:
        """The calls of the step the run stopped in, to finish before planning again."""
        return [entry.action for entry in self.state.pending]

    def acting(
        self, actions: list[AgentAction], step: int, calls: ToolCalls, waits: Waits
    ) -> Callable[[AgentAction], str]:
        """Saves the step's calls as started (see `_started`); returns how each is run: as
        `calls` runs it, skipped for a call completed before, its observation saved after."""
        self._started(actions, waits)

        def run(action: AgentAction) -> str:
            entry = self._entries[id(action)]
            if entry.observation is not None:
                return _observed(entry)
            observation = calls.run(action, step, entry, self)
            if type(observation) is not Waiting:
                self._completed(entry, observation)
            return observation

        return run

    async def aacting(
        self, actions: list[AgentAction], step: int, calls: ToolCalls, waits: Waits
    ) -> Callable[[AgentAction], Awaitable[str]]:
        self._started(actions, waits)

        async def run(action: AgentAction) -> str:
            entry = self._entries[id(action)]
            if entry.observation is not None:
                return _observed(entry)
            observation = await calls.arun(action, step, entry, self)
            if type(observation) is not Waiting:
                self._completed(entry, observation)
            await self.settle()
            return observation

        await self.settle()  # saved as started before any starts
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

    def _started(self, actions: list[AgentAction], waits: Waits) -> None:
        """Saves the step's calls as started, but those waiting for a person's decision (each
        starts as it is decided); the resumed step's with the answers it was given."""
        pending = self.state.pending
        if pending and pending[0].action is actions[0]:
            for entry in pending:
                if entry.observation is None and not entry.started:
                    entry.started = _starts(entry, waits)
            self.state.status = "running"
        else:
            self.state.pending = [
                PendingCall(action, waits is None or not waits(action)) for action in actions
            ]
            self._entries = {id(p.action): p for p in self.state.pending}
        self._save()

    def _completed(self, entry: PendingCall, observation: str) -> None:
        with self._lock:
            entry.observation = observation
            self._save()

    def decided(self, entry: PendingCall, decision: dict[str, Any]) -> None:
        """Saves a person's decision on a call before it starts (a denied one never does)."""
        with self._lock:
            entry.decision = decision
            entry.started = decision["kind"] != "deny"
            self._save()

    def asking(self, entry: PendingCall, question: Any) -> None:
        """Saves the call as waiting for a person (its tool's `question`, None for its
        approval): not started, so it is neither reported cut nor repeated unasked."""
        with self._lock:
            entry.started = False
            entry.asked = question
            self._save()

    def waits(self) -> bool:
        """Whether a call of the step just run waits for a person."""
        return any(entry.observation is None for entry in self.state.pending)

    def waits_before(self, actions: list[AgentAction], gate: Gate) -> bool:
        """Whether a step (of a run without `approve=`) waits for decisions before any of its
        calls runs; if so its calls are the state's pending ones, none started."""
        pending = [PendingCall(action) for action in actions]
        if not gate.waiting(replace(self.state, pending=pending), self.state.iteration):
            return False
        self.state.pending = pending
        return True

    def pause(self, gate: Gate, callbacks: CombiningHandler | None) -> PendingApproval:
        """Saves the run as waiting for people's answers on its pending calls; what it
        waits on, each approval reported."""
        self.state.status = "paused"
        self._save()
        requests = [request for _, request in gate.waiting(self.state, self.state.iteration)]
        for request in requests:
            if isinstance(request, ApprovalRequest):
                report_required(callbacks, request)
        return PendingApproval(requests, self.state)

    def finished(self, outputs: dict[str, Any]) -> None:
        self.state.pending = []
        self.state.status = "finished"
        self.state.outputs = outputs if _is_json(outputs) else None
        self._save()

    def release(self) -> None:
        """Lets the run go in the store, once: a later call (a resumption's, say) does not
        end the hold of whoever took it next."""
        if self._held and self.store is not None:
            self._held = False
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


def answered(inputs: dict[str, Any], outputs: dict[str, Any]) -> Resumption:
    """The resumption of a finished run: its answer, again."""

    async def again() -> dict[str, Any]:
        return outputs

    return Resumption(dict(inputs), lambda: outputs, again, lambda: None)


def _starts(entry: PendingCall, waits: Waits) -> bool:
    if entry.decision is not None:
        return bool(entry.decision["kind"] != "deny")
    return waits is None or not waits(entry.action)


def _observed(entry: PendingCall) -> str:
    """A completed call's observation; a denial's is marked, as it was when made."""
    assert entry.observation is not None
    if entry.decision is not None and entry.decision["kind"] == "deny":
        return Denial(entry.observation)
    return entry.observation


def start(
    store: Checkpointer | None, agent: Agent, inputs: Mapping[str, Any], steps: list[AgentStep]
) -> Journal:
    """The journal of a new run, saved and held (in memory only without a store). A run id
    the store holds a run of already is refused (RunExistsError) before anything runs."""
    _check_json(inputs)
    tools = [tool.name for tool in agent.tools]
    state = RunState(new_run_id(), type(agent).__name__, tools, dict(inputs), steps)
    if store is not None:
        store.save(state)
        store.acquire(state.run_id)
    return Journal(store, state, store is not None)


def resume(
    store: Checkpointer | None,
    agent: Agent,
    gate: Gate,
    toolset: Toolset,
    given: object,
    answers: object,
    interrupted: object,
    key: bytes | None = None,
) -> Journal:
    """The journal of a saved run to continue here: `given` is its id (in `store`), a
    RunState or its JSON form, `answers` the answers to the calls it waits on (see
    `Gate.answer`). With a store, the store's record of the run is continued, not an older
    state given. Held (in `store`) once checked, unless it finished; raises, naming what
    differs, for a state this executor cannot continue, and then holds nothing. With a `key`,
    a state given as JSON must carry its tag."""
    if interrupted not in ("raise", "repeat", "skip"):
        raise CheckpointConfigError(
            f"interrupted must be 'raise', 'repeat' or 'skip', got {described(interrupted)}"
        )
    state = _given_state(given, key)
    if state is not None and key is None and isinstance(given, str | Mapping):
        _refuse_claimed_approvals(state, toolset)
    if store is None:
        if state is None:
            raise CheckpointConfigError(
                f"resuming run {given!r} by id needs an Executor with a checkpointer; pass its "
                "RunState (or JSON) instead"
            )
        _checked(state, agent, gate, toolset, answers, interrupted)
        return Journal(None, state, False)
    run_id = str(given) if state is None else state.run_id
    held = False
    try:
        _hold(store, run_id, state)
        held = True
        stored = store.load(run_id)
        if state is not None:
            _check_not_replayed(state, stored, answers)
        _checked(stored, agent, gate, toolset, answers, interrupted)
        held = stored.status == "finished"  # answered, not continued: let go at once
        return Journal(store, stored, not held)
    finally:
        if held:
            store.release(run_id)


def _given_state(given: object, key: bytes | None) -> RunState | None:
    """The state given, or None for a run id."""
    if isinstance(given, RunState):
        return RunState.from_dict(given.to_dict())  # a copy: the caller's stays as it was
    if isinstance(given, Mapping):
        return RunState.from_dict(given, key=key)
    if isinstance(given, str):
        return RunState.from_json(given, key=key) if given.lstrip().startswith("{") else None
    raise StateFormatError(
        f"resume takes a run id, a checkpoints.RunState or its JSON form, got {described(given)}"
    )


def _refuse_claimed_approvals(state: RunState, toolset: Toolset) -> None:
    """Refuses an unverified state that says a call needing approval was decided or started:
    such a claim would run it (interrupted="repeat", an idempotent tool, a recorded decision)
    with nobody's decision."""
    for entry in state.pending:
        tool = toolset.find(entry.action.tool)
        claimed = entry.started or entry.decision is not None
        if claimed and entry.observation is None and tool and needs_approval(tool, entry.action):
            raise StateFormatError(
                f"run {state.run_id!r}: the call to {entry.action.tool!r} needs approval and is "
                "marked decided or started, which a state given as JSON without a state key "
                "cannot prove: resume the run by its id from its store, or tag states "
                "(Executor(state_key=))"
            )


def _hold(store: Checkpointer, run_id: str, state: RunState | None) -> None:
    """Holds the run; a state given that the store has no record of is saved first."""
    try:
        store.acquire(run_id)
    except RunNotFoundError:
        if state is None:
            raise
        store.save(state)
        store.acquire(run_id)


def _check_not_replayed(given: RunState, stored: RunState, answers: object) -> None:
    """Refuses answers given with a state older than the store's record: the run moved on
    (it was resumed with this state already), so they would decide calls decided before."""
    if given.saved > stored.saved:
        raise StateMismatchError(
            f"run {given.run_id!r}: the state given is of save {given.saved}, newer than the "
            f"store's record (save {stored.saved}): it was not saved in this store"
        )
    if given.saved < stored.saved and answers is not None:
        raise StaleStateError(
            f"run {given.run_id!r} moved on since this state of it (save {given.saved}; the "
            f"store's record is of save {stored.saved}, {stored.status}): it was resumed "
            "already, so these decisions were not applied and nothing ran. Resume it by its id "
            "without decisions to continue it, or to get its answer"
        )


def _checked(
    state: RunState,
    agent: Agent,
    gate: Gate,
    toolset: Toolset,
    answers: object,
    interrupted: object,
) -> None:
    """Raises unless this executor can continue the state (a finished one is answered);
    gives the calls it waits on their answers."""
    if state.status == "finished":
        gate.answer(state, answers)  # refuses any: it waits for none
        if state.outputs is None:
            raise RunFinishedError(
                f"run {state.run_id!r} finished already, with outputs that are not JSON: "
                "there is nothing to resume"
            )
        return
    _check_fits(state, agent, toolset)
    gate.answer(state, answers)
    _settle_interrupted(state, toolset, interrupted)


def _check_fits(state: RunState, agent: Agent, toolset: Toolset) -> None:
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
    caller says so, observed as skipped when the caller says so; raises otherwise. A call
    that waited for a person, or was denied, was never started: it is not cut."""
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
    return json_problem(value) is None


def _check_json(inputs: Mapping[str, Any]) -> None:
    """Raises, naming the input, unless the inputs can be saved as JSON."""
    for key, value in inputs.items():
        if not _is_json(value):
            raise CheckpointConfigError(
                f"a checkpointed run's inputs are saved as JSON; input {key!r} is "
                f"{described(value)}, which is not JSON"
            )
