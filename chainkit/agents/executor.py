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

from collections.abc import Coroutine, Generator
from functools import partial
from typing import Any, Literal, Never

from chainkit._threads import in_thread
from chainkit.agents import _executor_settings as settings
from chainkit.agents import _journal as journals
from chainkit.agents._deadline import (
    Deadline,
    Interrupted,
    act_in_tasks,
    act_in_threads,
    model_interrupted,
    plan_in_thread,
    postpone,
    within,
)
from chainkit.agents._gate import Gate, Request
from chainkit.agents._run import (
    PLAN,
    PLAN_FINAL,
    Act,
    Done,
    Loop,
    LoopRequest,
    OneRun,
    Paused,
    Plan,
    PlanFinal,
    Steps,
    Stopped,
)
from chainkit.agents._tool_call import ToolCalls
from chainkit.agents._typed_answer import TypedAnswer
from chainkit.agents.agent import Agent
from chainkit.agents.approval import (
    PENDING_KEY,
    Approver,
    check_approver,
    requires_approval_of,
)
from chainkit.agents.error_handler import ParserErrorHandler
from chainkit.agents.errors import (
    NoReturnError,
    NotFinishedError,
    OutputParserError,
)
from chainkit.callbacks import Handlers
from chainkit.callbacks.combining import CombiningHandler
from chainkit.callbacks.pacing import pacer_of
from chainkit.callbacks.run import active_handler
from chainkit.chains import Chain
from chainkit.chains.chain import Resumption
from chainkit.checkpoints import Checkpointer, RunState
from chainkit.checkpoints.state import checked_key
from chainkit.schema import AgentAction, AgentFinish, Memory

INTERMEDIATE_STEPS_KEY = "intermediate_steps"


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
    - With `output_type` (any type `llms.generate_object` takes; the agent a BaseAgent), the
      final answer is asked for and read into the type by `generate_object`'s engine: a
      request offering tools natively offers a `final_answer` tool too, whose arguments are
      the answer (a text answer is read too); any other gets the schema instructions. The run's
      output is the object (`chains.call(executor, ...)["output"]`; `chains.run`, which
      returns text, refuses it with OutputNotStringError before the run starts). An answer
      that does not fit goes back to the model, naming what was wrong, as the next step's
      observation (with or without `error_handler`), up to the run's limits. The final answer
      asked for at a limit is a `generate_object` call (its strategies, a refused one moving to
      the next); one that does not fit raises OutputParserError.
    - A call of a tool marked `requires_approval` waits for `approve(request)` (an
      `agents.ApprovalRequest`), which returns `agents.Approve()`, `Deny(reason)` (the model
      observes the denial; the tool does not run) or `Edit(arguments)`; an async `approve`
      needs an async run. Without `approve=`, the run pauses before the step: its outputs'
      "pending" is an `agents.PendingApproval`, which `chains.resume(executor, state,
      decisions)` continues. A tool's question (`agents.interrupt`) pauses it the same way.
    - With a `checkpointer` (a `checkpoints.Checkpointer`), the run's state is saved when it
      starts, when a step's calls start, as a person decides one and as each completes, and
      when it ends; `chains.resume(executor, run_id)` continues a run that stopped. Its
      inputs must be JSON; an id the store holds a run of already raises RunExistsError.
      With a `state_key` (bytes), a state resumed as JSON must carry the tag
      `state.to_json(key=state_key)` gives it.
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
        state_key: bytes | None = None,
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
        self._typed_answer = None if output_type is None else TypedAnswer(output_type)
        if self._typed_answer is not None:
            agent = settings.typed_agent(agent, self._typed_answer)
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
        self.approve = approve
        self._gate = Gate(toolset, approve)
        self._calls = ToolCalls(toolset, self._gate, handle_tool_errors)
        self.checkpointer = checkpointer
        self.state_key = checked_key(state_key)

    def __repr__(self) -> str:
        return f"Executor(agent={self.agent!r}, max_iterations={self.max_iterations})"

    @property
    def input_keys(self) -> list[str]:
        return self.agent.input_keys

    @property
    def optional_input_keys(self) -> list[str]:
        """Inputs the agent reads when given (a memory's history), as `input_keys` those it
        needs."""
        return list(getattr(self.agent, "optional_input_keys", ()))

    @property
    def output_keys(self) -> list[str]:
        keys = self.agent.output_keys
        return [*keys, INTERMEDIATE_STEPS_KEY] if self.return_intermediate_steps else keys

    @property
    def output_not_text(self) -> str | None:
        if self._typed_answer is not None:
            return f"answers with {self._typed_answer.shape.name} (its output_type)"
        if self._gate.defers:
            marked = [tool.name for tool in self._toolset if requires_approval_of(tool)]
            return (
                f"may pause for approval ({', '.join(marked)} need it and no approve= was "
                "given), with no answer"
            )
        return None

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
        """Continues a run that stopped (see `chains.resume`; `agents._journal.resume` checks
        it): the store's record of it, its waiting calls given `decisions`."""
        store, agent, gate = self.checkpointer, self.agent, self._gate
        journal = journals.resume(
            store, agent, gate, self._toolset, given, decisions, interrupted, self.state_key
        )
        inputs, outputs = journal.state.inputs, journal.state.outputs
        if outputs is not None:  # it finished: its answer, again
            if self.return_intermediate_steps:
                outputs = {**outputs, INTERMEDIATE_STEPS_KEY: journal.state.steps}
            return journals.answered(inputs, outputs)
        return Resumption(
            dict(inputs),
            lambda: self._drive(self._start(inputs, {}, journal)),
            lambda: self._adrive(self._start(inputs, {}, journal)),
            journal.release,
        )

    def waiting_requests(self, state: RunState) -> list[Request]:
        """The requests a paused run waits on (its state, as `PendingApproval.state` holds
        it or a checkpointer saved it), in the order answers given as a list follow: an
        `agents.ApprovalRequest` or an `agents.InputRequest` each; none for a run that waits
        for no one."""
        return [request for _, request in self._gate.waiting(state, state.iteration)]

    def _drive(self, run: OneRun) -> dict[str, Any]:
        perform = self._perform if run.pacer is None else self._paced
        if run.journal is not None:
            perform = self._journaled
        loop = self._loop(run)
        try:
            request = next(loop)
            while not isinstance(request, Done):
                try:
                    result = perform(request, run)
                except (OutputParserError, Interrupted) as error:
                    request = loop.throw(error)
                else:
                    request = loop.send(result)
        finally:
            run.ended()
        loop.close()
        return request.outputs

    async def _adrive(self, run: OneRun) -> dict[str, Any]:
        perform = self._aperform if run.pacer is None else self._apaced
        if run.journal is not None:
            perform = self._ajournaled
            run.journal.defer()  # the store's work is awaited, off the event loop
        loop = self._loop(run)
        try:
            request = next(loop)
            while not isinstance(request, Done):
                try:
                    result = await perform(request, run)
                except (OutputParserError, Interrupted) as error:
                    request = loop.throw(error)
                else:
                    request = loop.send(result)
        finally:
            run.ended()
            if run.journal is not None:  # the loop's last saves and its release
                await run.journal.settle(last=True)
        loop.close()
        return request.outputs

    def _start(
        self,
        inputs: dict[str, Any],
        options: dict[str, Any],
        journal: journals.Journal | None = None,
    ) -> OneRun:
        limit = self.max_execution_time
        deadline = None if limit is None else Deadline(limit)
        callbacks = active_handler()
        pacer = None if callbacks is None else pacer_of(callbacks)
        if journal is not None:
            steps = journal.state.steps
        else:  # the new run is saved and held last: nothing raises between that and its end
            steps = []
            if self.checkpointer is not None or self._gate.defers:
                journal = journals.start(self.checkpointer, self.agent, inputs, steps)
        return OneRun(inputs, options, callbacks, deadline, steps, pacer, journal)

    # The loop: every decision of a run.

    def _loop(self, run: OneRun) -> Loop:
        ended = yield from self._steps(run)
        if isinstance(ended, Paused):
            yield Done({self.agent.output_keys[0]: None, PENDING_KEY: ended.pending})
            return
        if isinstance(ended, Stopped):
            ended = yield from self._stop_early(ended, run)
        if run.journal is not None:
            run.journal.finished({k: v for k, v in ended.items() if k != INTERMEDIATE_STEPS_KEY})
        yield Done(ended)

    def _steps(self, run: OneRun) -> Steps:
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
                    observations = yield Act(resumed, iteration)
                    if run.journal.waits():
                        return Paused(run.journal.pause(self._gate, run.callbacks))
                    direct = run.record(resumed, observations, self._toolset)
                    if direct is not None:
                        return self._finish(AgentFinish({self.agent.output_keys[0]: direct}), run)
            while limit is None or iteration < limit:
                if deadline is not None and deadline.passed():
                    return self._out_of_time()
                iteration += 1
                try:
                    decision = yield PLAN
                except OutputParserError as error:
                    run.send_back(error, self.error_handler, error.typed_answer)
                    continue
                if isinstance(decision, AgentFinish):
                    return self._finish(decision, run)
                if not decision:
                    raise self._no_decision()
                # Planned in time, but no tool starts after the deadline.
                if deadline is not None and deadline.passed():
                    return self._out_of_time()
                if run.callbacks is not None:
                    self._report(decision, run.callbacks)
                journal = run.journal
                if self._gate.defers and journal and journal.waits_before(decision, self._gate):
                    return Paused(journal.pause(self._gate, run.callbacks))
                observations = yield Act(decision, iteration)
                if journal is not None and journal.waits():
                    return Paused(journal.pause(self._gate, run.callbacks))
                direct = run.record(decision, observations, self._toolset)
                if direct is not None:
                    return self._finish(AgentFinish({self.agent.output_keys[0]: direct}), run)
        except Interrupted as cut:
            run.steps.extend(cut.finished)  # they did their work: the caller gets to see it
            return self._out_of_time(cut.during)
        return Stopped("max_iterations", f"reached max_iterations={limit}")

    def _report(self, actions: list[AgentAction], callbacks: CombiningHandler) -> None:
        for action in actions:
            callbacks.handle_agent_action(action)

    def _stop_early(self, stopped: Stopped, run: OneRun) -> Generator[LoopRequest, Any, Any]:
        """Raises NotFinishedError, or with `early_stopping_method="generate"` returns the
        outputs of the final answer the agent is asked for."""
        if self.early_stopping_method == "force":
            raise NotFinishedError(stopped.reason, run.steps, limit=stopped.limit)
        final = yield PLAN_FINAL
        return self._finish(final, run)

    def _no_decision(self) -> NoReturnError:
        return NoReturnError(
            f"{type(self.agent).__name__}.plan returned neither actions nor a final answer"
        )

    def _out_of_time(self, during: str = "") -> Stopped:
        reason = f"reached max_execution_time={self.max_execution_time}s"
        return Stopped("max_execution_time", f"{reason} {during}" if during else reason)

    def _finish(self, finish: AgentFinish, run: OneRun) -> dict[str, Any]:
        if run.callbacks is not None:
            run.callbacks.handle_agent_finish(finish)
        if self.return_intermediate_steps:
            return {**finish.return_values, INTERMEDIATE_STEPS_KEY: run.steps}
        return finish.return_values

    # The drivers: each carries out the loop's requests.

    def _perform(self, request: LoopRequest, run: OneRun) -> Any:
        # Every step of a run without a deadline comes here first: `is` tests, as a class
        # pattern of the match below costs twice as much.
        if run.deadline is None:
            if type(request) is Plan:
                return self.agent.plan(run.steps, run.inputs, **run.options)
            if type(request) is Act and len(request.actions) == 1:
                return [self._calls.run(request.actions[0], request.step)]
        match request:
            case Plan():
                assert run.deadline is not None  # taken above otherwise
                return plan_in_thread(
                    self.agent, run.deadline, run.steps, run.inputs, run.options, run.callbacks
                )
            case Act(actions=actions, step=step):
                return act_in_threads(
                    partial(self._calls.run, step=step),
                    actions,
                    self.max_parallel_tools,
                    run.callbacks,
                    run.deadline,
                )
            case PlanFinal():
                return self.agent.plan_final(run.steps, run.inputs, **run.options)
        raise AssertionError(f"the loop asked for {request!r}")

    async def _aperform(self, request: LoopRequest, run: OneRun) -> Any:
        if run.deadline is None:  # as in _perform
            if type(request) is Plan:
                return await self.agent.aplan(run.steps, run.inputs, **run.options)
            if type(request) is Act and len(request.actions) == 1:
                return [await self._calls.arun(request.actions[0], request.step)]
        match request:
            case Plan():
                plan = self.agent.aplan(run.steps, run.inputs, **run.options)
                return await within(run.deadline, plan, model_interrupted)
            case Act(actions=actions, step=step):
                run_tool = partial(self._calls.arun, step=step)
                return await act_in_tasks(run.deadline, actions, run_tool, self.max_parallel_tools)
            case PlanFinal():
                return await self.agent.aplan_final(run.steps, run.inputs, **run.options)
        raise AssertionError(f"the loop asked for {request!r}")

    def _journaled(self, request: LoopRequest, run: OneRun) -> Any:
        """`_perform` (or `_paced`) for a run that keeps its state: a step's calls are saved
        as started before they run, and each as it completes."""
        journal = run.journal
        assert journal is not None  # chosen only then
        if type(request) is not Act:
            if type(request) is Plan:
                journal.planned()
            return (self._perform if run.pacer is None else self._paced)(request, run)
        if run.pacer is not None:
            postpone(run.deadline, run.pacer.pause())
        actions = request.actions
        run_tool = journal.acting(actions, request.step, self._calls, self._gate.waits)
        if run.deadline is None and len(actions) == 1:
            return [run_tool(actions[0])]
        return act_in_threads(
            run_tool, actions, self.max_parallel_tools, run.callbacks, run.deadline
        )

    async def _ajournaled(self, request: LoopRequest, run: OneRun) -> Any:
        journal = run.journal
        assert journal is not None
        if type(request) is not Act:
            if type(request) is Plan:
                journal.planned()
            return await (self._aperform if run.pacer is None else self._apaced)(request, run)
        if run.pacer is not None:
            postpone(run.deadline, await run.pacer.apause())
        actions = request.actions
        run_tool = await journal.aacting(actions, request.step, self._calls, self._gate.waits)
        return await act_in_tasks(run.deadline, actions, run_tool, self.max_parallel_tools)

    def _paced(self, request: LoopRequest, run: OneRun) -> Any:
        """`_perform`, once the stream's reader has caught up; its wait moves the deadline."""
        assert run.pacer is not None  # chosen only then
        postpone(run.deadline, run.pacer.pause())
        return self._perform(request, run)

    async def _apaced(self, request: LoopRequest, run: OneRun) -> Any:
        assert run.pacer is not None
        postpone(run.deadline, await run.pacer.apause())
        return await self._aperform(request, run)
