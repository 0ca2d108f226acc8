"""Executor: the plan → act loop, written once and driven by a sync and an async driver.

`_loop` is a generator holding every decision of a run. It yields what it needs done — plan,
plan a final answer, or run these actions — and receives the result, or the parse error (or
the deadline's interruption) thrown in; any other error ends the run where it is raised. Its
last yield is the run's outputs. `_call` and `_acall` only carry those requests out, so the
two cannot drift apart.

Under `max_execution_time` each step is bounded by the time left: the async driver cancels
the step at the deadline, the sync driver stops waiting for it (see `_deadline`). Without a
deadline a sync step runs in the caller's thread, save parallel tool calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, Never

from chainkit._stop import stop_escaped
from chainkit._threads import in_thread
from chainkit.agents import _executor_settings as settings
from chainkit.agents import _journal as journals
from chainkit.agents._deadline import (
    Deadline,
    Interrupted,
    act_in_threads,
    model_interrupted,
    plan_in_thread,
    tools_interrupted,
    within,
)
from chainkit.agents._typed_answer import TypedAnswer
from chainkit.agents.agent import Agent
from chainkit.agents.approval import (
    PENDING_KEY,
    ApprovalRequest,
    Approver,
    Decision,
    Denial,
    GivenDecisions,
    InlineApproval,
    PendingApproval,
    applied,
    check_approver,
    needs_approval,
    report_decided,
    report_required,
    request_for,
    requires_approval_of,
    waiting_key,
)
from chainkit.agents.error_handler import ParserErrorHandler
from chainkit.agents.errors import (
    PARSE_ERROR_TOOL,
    AgentConfigError,
    NoReturnError,
    NotFinishedError,
    OutputParserError,
    UnknownToolError,
)
from chainkit.callbacks import CombiningHandler, Handlers
from chainkit.callbacks.pacing import Pacer, pacer_of
from chainkit.callbacks.run import Run, active_handler, enter
from chainkit.chains import Chain, Resumption
from chainkit.checkpoints import Checkpointer, PendingCall, RunState
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Memory
from chainkit.tools import Tool, ToolError
from chainkit.tools.toolset import observation as observation_of

INTERMEDIATE_STEPS_KEY = "intermediate_steps"
_AS_IT_IS = ParserErrorHandler()
_UNKNOWN_TOOL = "(unknown tool)"
"""The name of the run of an action naming no tool of the agent: never the name the model
wrote, which may be anything (the user's words among them), as a run's name becomes a span
name and a trace's label; the run's UnknownToolError names it."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """Ask the agent for its next actions or its final answer."""


@dataclass(frozen=True, slots=True)
class _PlanFinal:
    """Ask the agent for a final answer now: a limit was reached."""


@dataclass(slots=True)  # not frozen: made on every step, and frozen costs a setattr per field
class _Act:
    """Run these actions' tools; send back their observations, in order. `step` is the
    number of the run's step (from 1), which an approval request names."""

    actions: list[AgentAction]
    step: int


@dataclass(slots=True)
class _Done:
    """The run's outputs: the loop's last request."""

    outputs: dict[str, Any]


_Request = _Plan | _PlanFinal | _Act | _Done
_PLAN = _Plan()
_PLAN_FINAL = _PlanFinal()
_Loop = Generator[_Request, Any, None]
"""Yields what it needs done, then `_Done` with the run's outputs."""


@dataclass(slots=True)
class _RunState:
    """One run of the executor: its inputs and options, the steps taken so far, the handler
    of its events, when it must end, and the pacer among its handlers (a stream's reader)
    that each step waits for."""

    inputs: dict[str, Any]
    options: dict[str, Any]
    callbacks: CombiningHandler | None
    deadline: Deadline | None
    steps: list[AgentStep]
    pacer: Pacer | None
    journal: journals.Journal | None


@dataclass(frozen=True, slots=True)
class _Stopped:
    """A run stopped by a limit before the agent finished: which limit, and why."""

    limit: Literal["max_iterations", "max_execution_time"]
    reason: str


@dataclass(frozen=True, slots=True)
class _Paused:
    """A run stopped for decisions on its calls."""

    pending: PendingApproval


_Steps = Generator[_Request, Any, "dict[str, Any] | _Stopped | _Paused"]
"""Yields what it needs done; returns the run's outputs, the limit that stopped it, or the
calls it waits for decisions on."""


class Executor(Chain):
    """Runs an agent: plan, act, observe, until it finishes or a limit is reached.

    - A parse error is raised, or, with `error_handler`, sent back to the model as the next
      observation.
    - A tool's ToolError becomes the observation. Any other exception propagates, or with
      `handle_tool_errors=True` becomes "Tool error: <type>: <message>". A tool output that is
      not a str becomes text as a `@tools.tool` function's does: JSON, else `str()`.
    - At `max_iterations`, or at `max_execution_time` (seconds, which also cuts short the model
      or tool call in progress), `early_stopping_method="force"` raises NotFinishedError with
      the steps taken; "generate" asks the agent for a final answer, in a model call the
      deadline does not cut (it is bounded by the model's own timeout).
    - Every tool start is reported with exactly one tool end or tool error.
    - With `output_type` (any type `llms.generate_object` takes), the agent's input asks for
      the final answer as JSON of that type's schema, and the answer is read into the type:
      the run's output is the object (`chains.call(executor, ...)["output"]`; `chains.run`,
      which returns text, refuses it with OutputNotStringError). An answer that does not fit
      goes back to the model, naming what was wrong, as the next observation (with or without
      `error_handler`), up to the run's limits; a final answer asked for at a limit that does
      not fit raises OutputParserError.
    - A call of a tool marked `requires_approval` waits for `approve(request)`, given an
      `agents.ApprovalRequest`, which returns `agents.Approve()`, `Deny(reason)` (the model
      observes the denial and its reason; the tool does not run) or `Edit(arguments)` (the tool
      runs on those). An async `approve` needs an async run. Without `approve=`, the run
      pauses at the first step with a call needing approval: its outputs' "pending" is an
      `agents.PendingApproval` (the waiting requests and the run's state), which
      `chains.resume(executor, state, decisions)` continues.
    - With a `checkpointer` (a `checkpoints.Checkpointer`, such as `checkpoints.SQLiteStore`),
      the run's state is saved when it starts, when a step's tools start and as each
      completes, and when it finishes; `chains.resume(executor, run_id)` continues a run that
      stopped (see `resume`). Its inputs must be JSON.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        max_iterations: int | None = 5,
        max_execution_time: float | None = None,
        return_intermediate_steps: bool = False,
        memory: Memory | None = None,
        callbacks: Handlers = None,
        error_handler: ParserErrorHandler | None = None,
        early_stopping_method: Literal["force", "generate"] = "force",
        handle_tool_errors: bool = False,
        output_type: object = None,
        approve: Approver | None = None,
        checkpointer: Checkpointer | None = None,
        **langchain_arguments: Never,
    ) -> None:
        if langchain_arguments:
            raise settings.unexpected_argument(langchain_arguments)
        settings.check_agent(agent)
        settings.check_limits(max_iterations, max_execution_time)
        settings.check_flag("return_intermediate_steps", return_intermediate_steps)
        settings.check_flag("handle_tool_errors", handle_tool_errors)
        settings.check_early_stopping_method(early_stopping_method)
        settings.check_error_handler(error_handler)
        settings.check_checkpointer(checkpointer)
        toolset = settings.checked_toolset(agent)
        check_approver(approve)
        if memory is not None:
            settings.check_memory_is_read(agent, memory)
        self.agent = agent
        self.max_iterations = max_iterations
        self.max_execution_time = max_execution_time
        self.return_intermediate_steps = return_intermediate_steps
        self.memory = memory
        self.callbacks = callbacks
        self.error_handler = error_handler
        self.early_stopping_method = early_stopping_method
        self.handle_tool_errors = handle_tool_errors
        self.max_parallel_tools = agent.max_parallel_tools
        self._toolset = toolset
        self.output_type = output_type
        self._typed_answer = None if output_type is None else TypedAnswer(output_type)
        self.approve = approve
        marked = any(requires_approval_of(tool) for tool in toolset)
        self._approval = InlineApproval(approve) if approve is not None and marked else None
        self._defers = approve is None and marked
        self.checkpointer = checkpointer

    def __repr__(self) -> str:
        return f"Executor(agent={self.agent!r}, max_iterations={self.max_iterations})"

    @property
    def input_keys(self) -> list[str]:
        return self.agent.input_keys

    @property
    def output_keys(self) -> list[str]:
        keys = self.agent.output_keys
        return [*keys, INTERMEDIATE_STEPS_KEY] if self.return_intermediate_steps else keys

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        return self._drive(self._start(inputs, options))

    def _acall(self, inputs: dict[str, Any], **options: Any) -> Coroutine[Any, Any, dict[str, Any]]:
        if self.checkpointer is not None:
            return self._adrive_started(inputs, options)
        # The driver's coroutine itself, awaited by the caller: no coroutine around it.
        return self._adrive(self._start(inputs, options))

    async def _adrive_started(self, inputs: dict[str, Any], options: dict[str, Any]) -> Any:
        # The run's first save and its hold wait for the database: not on the event loop.
        return await self._adrive(await in_thread(self._start, inputs, options))

    def _resumed(self, given: object, decisions: object, interrupted: object) -> Resumption:
        """Continues a run that stopped: `given` is its id in the checkpointer, or its
        `checkpoints.RunState` (or that state's JSON form, as a dict or a str).

        A call that completed is not repeated. A call that started but did not complete is
        repeated when its tool is idempotent (`Tool.idempotent`); otherwise `interrupted`
        decides: "raise" (the default) raises checkpoints.InterruptedCallError naming it,
        "repeat" calls it again, "skip" gives the model an observation saying its outcome is
        unknown. `decisions` are for the calls a run paused on for approval (see
        `agents.PendingApproval`): a dict of each waiting call's `tool_call_id` (its position
        among the requests for a call without one) to `agents.Approve()`, `Deny(reason)` or
        `Edit(arguments)`, or a list in the requests' order."""
        journal = journals.resume(self.checkpointer, self.agent, self._toolset, given, interrupted)
        try:
            journal.decisions = self._given_decisions(journal, decisions)
        except BaseException:
            journal.release()
            raise
        inputs = journal.state.inputs
        if journal.state.outputs is not None:  # it finished: its answer, again
            journal.release()
            outputs = journal.state.outputs
            if self.return_intermediate_steps:
                outputs = {**outputs, INTERMEDIATE_STEPS_KEY: journal.state.steps}

            async def answered() -> dict[str, Any]:
                return outputs

            return Resumption(dict(inputs), lambda: outputs, answered, journal.release)

        def call() -> dict[str, Any]:
            return self._drive(self._start(inputs, {}, journal))

        async def acall() -> dict[str, Any]:
            return await self._adrive(self._start(inputs, {}, journal))

        return Resumption(dict(inputs), call, acall, journal.release)

    def _given_decisions(
        self, journal: journals.Journal, decisions: object
    ) -> GivenDecisions | None:
        """The decisions for the calls the run paused on; refuses decisions for a run that
        has none waiting, and a run with some waiting but no decisions (nor `approve=`)."""
        requests = self.waiting_requests(journal.state)
        if not requests:
            if decisions is not None:
                raise AgentConfigError(
                    f"decisions are for a run paused for approval; run "
                    f"{journal.state.run_id!r} has no call waiting for one, so give none"
                )
            return None
        if decisions is None:
            if self._approval is not None:
                return None  # approve= decides them
            waiting = [waiting_key(request, i) for i, request in enumerate(requests)]
            raise AgentConfigError(
                f"run {journal.state.run_id!r} is paused for approval of calls {waiting}: "
                "give decisions (agents.Approve(), Deny(reason) or Edit(arguments)) for each"
            )
        return GivenDecisions(requests, decisions)

    def waiting_requests(self, state: RunState) -> list[ApprovalRequest]:
        """The approval requests a paused run waits on (its state, as
        `PendingApproval.state` holds it or a checkpointer saved it), in the order decisions
        given as a list follow; none for a run that waits for no decision."""
        return self._waiting(state, state.iteration)

    def _waiting(self, state: RunState, step: int) -> list[ApprovalRequest]:
        """The requests for the calls of the state's pending step that wait for a decision."""
        requests = []
        for entry in state.pending:
            tool = self._toolset.find(entry.action.tool)
            if entry.started or tool is None or not needs_approval(tool, entry.action):
                continue
            requests.append(request_for(tool, entry.action, state.run_id, step))
        return requests

    def _pause(self, actions: list[AgentAction], step: int, run: _RunState) -> _Paused | None:
        """Pauses a run without `approve=` at a step with calls needing approval: its state
        is saved (with a checkpointer) and the requests reported."""
        journal = run.journal
        assert journal is not None  # a run that may pause keeps its state
        waiting = [PendingCall(action) for action in actions]
        state = replace(journal.state, pending=waiting)
        requests = self._waiting(state, step)
        if not requests:
            return None
        journal.paused(actions)
        for request in requests:
            report_required(run.callbacks, request)
        return _Paused(PendingApproval(requests, journal.state))

    def _drive(self, run: _RunState) -> dict[str, Any]:
        perform = self._perform if run.pacer is None else self._paced
        if run.journal is not None:
            perform = self._journaled
        loop = self._loop(run)
        request = next(loop)
        while not isinstance(request, _Done):
            try:
                result = perform(request, run)
            except (OutputParserError, Interrupted) as error:
                request = loop.throw(error)
            else:
                request = loop.send(result)
        loop.close()
        return request.outputs

    async def _adrive(self, run: _RunState) -> dict[str, Any]:
        perform = self._aperform if run.pacer is None else self._apaced
        if run.journal is not None:
            perform = self._ajournaled
            run.journal.defer()  # the store's work is awaited, off the event loop
        loop = self._loop(run)
        try:
            request = next(loop)
            while not isinstance(request, _Done):
                try:
                    result = await perform(request, run)
                except (OutputParserError, Interrupted) as error:
                    request = loop.throw(error)
                else:
                    request = loop.send(result)
        finally:
            if run.journal is not None:  # the loop's last save and its release
                await run.journal.settle(last=True)
        loop.close()
        return request.outputs

    def _start(
        self,
        inputs: dict[str, Any],
        options: dict[str, Any],
        journal: journals.Journal | None = None,
    ) -> _RunState:
        limit = self.max_execution_time
        deadline = None if limit is None else Deadline(limit)
        if journal is not None:
            steps = journal.state.steps
        else:
            steps = []
            if self.checkpointer is not None or self._defers:
                journal = journals.start(self.checkpointer, self.agent, inputs, steps)
        if self._typed_answer is not None:
            inputs = self._typed_answer.asking(inputs)
        callbacks = active_handler()
        pacer = None if callbacks is None else pacer_of(callbacks)
        return _RunState(inputs, options, callbacks, deadline, steps, pacer, journal)

    # The loop: every decision of a run.

    def _loop(self, run: _RunState) -> _Loop:
        try:
            ended = yield from self._steps(run)
            if isinstance(ended, _Paused):
                yield _Done({self.agent.output_keys[0]: None, PENDING_KEY: ended.pending})
                return
            if isinstance(ended, _Stopped):
                ended = yield from self._stop_early(ended, run)
        except BaseException:
            if run.journal is not None:
                run.journal.release()  # it stays resumable, from its last step
            raise
        if run.journal is not None:
            run.journal.finished({k: v for k, v in ended.items() if k != INTERMEDIATE_STEPS_KEY})
        yield _Done(ended)

    def _steps(self, run: _RunState) -> _Steps:
        """Plan, act, observe, until the agent finishes, a tool returns directly, or a limit
        is reached."""
        limit = self.max_iterations
        deadline = run.deadline  # checked twice a step, in line: a call each is measurable
        iteration = 0
        try:
            if run.journal is not None and run.journal.state.iteration:
                iteration = run.journal.state.iteration
                resumed = run.journal.resumed_actions()
                if resumed:  # the step it stopped in is finished first
                    direct = self._record(resumed, (yield _Act(resumed, iteration)), run)
                    if direct is not None:
                        return self._finish(AgentFinish({self.agent.output_keys[0]: direct}), run)
            while limit is None or iteration < limit:
                if deadline is not None and deadline.passed():
                    return self._out_of_time()
                iteration += 1
                try:
                    decision = yield _PLAN
                except OutputParserError as error:
                    self._send_back(error, run)
                    continue
                if isinstance(decision, AgentFinish):
                    if self._typed_answer is not None:
                        try:
                            decision = self._typed_answer.read(decision, self.agent.output_keys)
                        except OutputParserError as error:
                            self._send_back(error, run, always=True)
                            continue
                    return self._finish(decision, run)
                if not decision:
                    raise self._no_decision()
                # Planned in time, but no tool starts after the deadline.
                if deadline is not None and deadline.passed():
                    return self._out_of_time()
                if run.callbacks is not None:
                    self._report(decision, run.callbacks)
                if self._defers and (paused := self._pause(decision, iteration, run)):
                    return paused
                direct = self._record(decision, (yield _Act(decision, iteration)), run)
                if direct is not None:
                    return self._finish(AgentFinish({self.agent.output_keys[0]: direct}), run)
        except Interrupted as cut:
            run.steps.extend(cut.finished)  # they did their work: the caller gets to see it
            return self._out_of_time(cut.during)
        return _Stopped("max_iterations", f"reached max_iterations={limit}")

    def _report(self, actions: list[AgentAction], callbacks: CombiningHandler) -> None:
        for action in actions:
            callbacks.handle_agent_action(action)

    def _record(
        self, actions: list[AgentAction], observations: list[str], run: _RunState
    ) -> str | None:
        """Records the actions' steps; returns the observation of the first action whose tool
        returns directly, if any."""
        # Indexed rather than zip(strict=True), whose keyword call costs more than the rest of
        # the loop on every tool step; the drivers give one observation per action.
        assert len(observations) == len(actions)
        direct: str | None = None
        for index, action in enumerate(actions):
            observation = observations[index]
            run.steps.append(AgentStep(action, observation))
            if direct is None:
                tool = self._toolset.find(action.tool)
                if tool is not None and tool.return_direct and type(observation) is not Denial:
                    direct = observation
        return direct

    def _stop_early(self, stopped: _Stopped, run: _RunState) -> Generator[_Request, Any, Any]:
        """Raises NotFinishedError, or with `early_stopping_method="generate"` returns the
        outputs of the final answer the agent is asked for."""
        if self.early_stopping_method == "force":
            raise NotFinishedError(stopped.reason, run.steps, limit=stopped.limit)
        final = yield _PLAN_FINAL
        if self._typed_answer is not None:
            final = self._typed_answer.read(final, self.agent.output_keys)
        return self._finish(final, run)

    def _send_back(self, error: OutputParserError, run: _RunState, *, always: bool = False) -> None:
        """Records an unparsable reply as a step whose observation tells the model what to
        fix; re-raises `error` without an error handler, unless it is to go back `always`."""
        if self.error_handler is None and not always:
            raise error
        handler = self.error_handler or _AS_IT_IS
        observation = handler.observation(error)
        if run.callbacks is not None:
            run.callbacks.handle_text(f"unparsable reply, sent back to the model: {observation}")
        action = AgentAction(PARSE_ERROR_TOOL, error.observation, error.llm_output)
        run.steps.append(AgentStep(action, observation))

    def _no_decision(self) -> NoReturnError:
        return NoReturnError(
            f"{type(self.agent).__name__}.plan returned neither actions nor a final answer"
        )

    def _out_of_time(self, during: str = "") -> _Stopped:
        reason = f"reached max_execution_time={self.max_execution_time}s"
        return _Stopped("max_execution_time", f"{reason} {during}" if during else reason)

    def _finish(self, finish: AgentFinish, run: _RunState) -> dict[str, Any]:
        if run.callbacks is not None:
            run.callbacks.handle_agent_finish(finish)
        if self.return_intermediate_steps:
            return {**finish.return_values, INTERMEDIATE_STEPS_KEY: run.steps}
        return finish.return_values

    # The drivers: each carries out the loop's requests.

    def _perform(self, request: _Request, run: _RunState) -> Any:
        # Every step of a run without a deadline comes here first: `is` tests, as a class
        # pattern of the match below costs twice as much.
        if run.deadline is None:
            if type(request) is _Plan:
                return self.agent.plan(run.steps, run.inputs, **run.options)
            if type(request) is _Act and len(request.actions) == 1:
                return [self._run_tool(request.actions[0], request.step)]
        match request:
            case _Plan():
                assert run.deadline is not None  # taken above otherwise
                return plan_in_thread(
                    self.agent, run.deadline, run.steps, run.inputs, run.options, run.callbacks
                )
            case _Act(actions=actions, step=step):
                return act_in_threads(
                    partial(self._run_tool, step=step),
                    actions,
                    self.max_parallel_tools,
                    run.callbacks,
                    run.deadline,
                )
            case _PlanFinal():
                return self.agent.plan_final(run.steps, run.inputs, **run.options)
        raise AssertionError(f"the loop asked for {request!r}")

    async def _aperform(self, request: _Request, run: _RunState) -> Any:
        if run.deadline is None:  # as in _perform
            if type(request) is _Plan:
                return await self.agent.aplan(run.steps, run.inputs, **run.options)
            if type(request) is _Act and len(request.actions) == 1:
                return [await self._arun_tool(request.actions[0], request.step)]
        match request:
            case _Plan():
                plan = self.agent.aplan(run.steps, run.inputs, **run.options)
                return await within(run.deadline, plan, model_interrupted)
            case _Act(actions=actions, step=step):
                observations: list[str | None] = [None] * len(actions)
                acting = self._aact(actions, observations, partial(self._arun_tool, step=step))
                return await within(
                    run.deadline, acting, lambda: tools_interrupted(actions, observations)
                )
            case _PlanFinal():
                return await self.agent.aplan_final(run.steps, run.inputs, **run.options)
        raise AssertionError(f"the loop asked for {request!r}")

    def _journaled(self, request: _Request, run: _RunState) -> Any:
        """`_perform` (or `_paced`) for a checkpointed run: a step's tools are saved as
        started before they run, and each as it completes."""
        journal = run.journal
        assert journal is not None  # chosen only then
        perform = self._perform if run.pacer is None else self._paced
        try:
            if type(request) is not _Act:
                if type(request) is _Plan:
                    journal.planned()
                return perform(request, run)
            if run.pacer is not None:
                _postpone(run.deadline, run.pacer.pause())
            actions = request.actions
            journal.acting(actions)
            given = journal.decisions
            run_tool = journal.runner(partial(self._run_tool, step=request.step, given=given))
            if run.deadline is None and len(actions) == 1:
                return [run_tool(actions[0])]
            return act_in_threads(
                run_tool, actions, self.max_parallel_tools, run.callbacks, run.deadline
            )
        except (OutputParserError, Interrupted):
            raise  # the loop's to handle
        except BaseException:
            journal.release()
            raise

    async def _ajournaled(self, request: _Request, run: _RunState) -> Any:
        journal = run.journal
        assert journal is not None
        perform = self._aperform if run.pacer is None else self._apaced
        try:
            if type(request) is not _Act:
                if type(request) is _Plan:
                    journal.planned()
                return await perform(request, run)
            if run.pacer is not None:
                _postpone(run.deadline, await run.pacer.apause())
            actions = request.actions
            journal.acting(actions)
            await journal.settle()  # saved as started before any starts
            observations: list[str | None] = [None] * len(actions)
            given = journal.decisions
            run_tool = journal.arunner(partial(self._arun_tool, step=request.step, given=given))
            acting = self._aact(actions, observations, run_tool)
            return await within(
                run.deadline, acting, lambda: tools_interrupted(actions, observations)
            )
        except (OutputParserError, Interrupted):
            raise
        except BaseException:
            journal.release()
            raise

    def _paced(self, request: _Request, run: _RunState) -> Any:
        """`_perform`, once the stream's reader has caught up; its wait moves the deadline."""
        assert run.pacer is not None  # chosen only then
        _postpone(run.deadline, run.pacer.pause())
        return self._perform(request, run)

    async def _apaced(self, request: _Request, run: _RunState) -> Any:
        assert run.pacer is not None
        _postpone(run.deadline, await run.pacer.apause())
        return await self._aperform(request, run)

    async def _aact(
        self,
        actions: list[AgentAction],
        observations: list[str | None],
        run_tool: Callable[[AgentAction], Awaitable[str]],
    ) -> list[str]:
        """Runs the actions as tasks, at most `max_parallel_tools` at once, each observation
        put in `observations` as it comes; returns them in the order of `actions`."""
        import asyncio  # loaded already by the running event loop, not at import

        limit = asyncio.Semaphore(self.max_parallel_tools)

        async def run(index: int, action: AgentAction) -> str:
            async with limit:
                observation = observations[index] = await run_tool(action)
                return observation

        tasks = [asyncio.ensure_future(run(i, action)) for i, action in enumerate(actions)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # A failed or cancelled call leaves no sibling running behind the raised error.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    # One tool call: a "tool" run, with its events.

    def _run_tool(self, action: AgentAction, step: int, given: GivenDecisions | None = None) -> str:
        tool = self._toolset.find(action.tool)
        name = _UNKNOWN_TOOL if tool is None else tool.name
        with enter("tool", name, None, action.tool_call_id) as run:
            if run.handler is not None:
                run.handler.handle_tool_start(run.name, action.tool_input, action.tool_call_id)
            if tool is None:
                return self._unknown_tool(action, run)
            approval = self._approval if given is None else given
            if approval is not None and needs_approval(tool, action):
                request = self._asking(tool, action, run, step)
                decision = approval.decide(request)
                decided = self._decided(request, decision, tool, action, run)
                if isinstance(decided, Denial):
                    return self._tool_ended(decided, run)
                action = decided
            try:
                if action.tool_call_id is None:
                    output = tool.call(action.tool_input)
                else:
                    output = tool.call_arguments(action.tool_input)
            except BaseException as error:
                return self._tool_failed(tool, error, run)
            return self._tool_ended(output, run)

    async def _arun_tool(
        self, action: AgentAction, step: int, given: GivenDecisions | None = None
    ) -> str:
        tool = self._toolset.find(action.tool)
        name = _UNKNOWN_TOOL if tool is None else tool.name
        with enter("tool", name, None, action.tool_call_id) as run:
            if run.handler is not None:
                run.handler.handle_tool_start(run.name, action.tool_input, action.tool_call_id)
            if tool is None:
                return self._unknown_tool(action, run)
            approval = self._approval if given is None else given
            if approval is not None and needs_approval(tool, action):
                request = self._asking(tool, action, run, step)
                decision = await approval.adecide(request)
                decided = self._decided(request, decision, tool, action, run)
                if isinstance(decided, Denial):
                    return self._tool_ended(decided, run)
                action = decided
            try:
                if action.tool_call_id is None:
                    output = await tool.acall(action.tool_input)
                else:
                    output = await tool.acall_arguments(action.tool_input)
            except BaseException as error:
                return self._tool_failed(tool, error, run)
            return self._tool_ended(output, run)

    def _asking(self, tool: Tool, action: AgentAction, run: Run, step: int) -> ApprovalRequest:
        """The request for a decision on this call, reported to the run's handlers."""
        request = request_for(tool, action, run.parent_id, step)
        report_required(run.handler, request)
        return request

    def _decided(
        self,
        request: ApprovalRequest,
        decision: Decision,
        tool: Tool,
        action: AgentAction,
        run: Run,
    ) -> AgentAction | Denial:
        """The call to make after `decision`, or its denial; the decision is reported."""
        report_decided(run.handler, request, decision)
        return applied(decision, action, tool)

    def _unknown_tool(self, action: AgentAction, run: Run) -> str:
        """The observation for an action naming no tool of the agent, reported as the run's
        error."""
        unknown = UnknownToolError(action.tool, ", ".join(self._toolset.names))
        run.fail(unknown)
        return str(unknown)

    def _tool_failed(self, tool: Tool, error: BaseException, run: Run) -> str:
        """The observation for a tool's failure; re-raises what is not to be observed."""
        if isinstance(error, StopIteration | StopAsyncIteration):
            error = stop_escaped(error, f"tool {tool.name!r}")  # as Tool.acall raises it
        run.fail(error)
        if isinstance(error, ToolError):
            return str(error)
        if self.handle_tool_errors and isinstance(error, Exception):
            # The type tells the model what went wrong: str(KeyError('42')) is only "'42'".
            detail = f": {error}" if str(error) else ""
            return f"Tool error: {type(error).__name__}{detail}"
        raise error

    def _tool_ended(self, output: object, run: Run) -> str:
        text = output if isinstance(output, str) else observation_of(output)
        if run.handler is not None:  # else no one hears the end: no call to make
            run.end(text)
        return text


def _postpone(deadline: Deadline | None, seconds: float) -> None:
    """The time the run waited for a stream's reader is not the run's: its deadline moves."""
    if deadline is not None:
        deadline.at += seconds
