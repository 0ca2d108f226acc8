"""Executor: the plan → act loop, written once and driven by a sync and an async shell.

`_loop` is a generator holding every decision of a run. It yields what it needs done — plan,
plan a final answer, or run these actions — and receives the result, or the parse error (or
the deadline's interruption) thrown in; any other error ends the run where it is raised. Its
last yield is the run's outputs. `call` and `acall` only carry those requests out, so the two
cannot drift apart.

Under `max_execution_time` each step is bounded by the time left. The async shell cancels the
step at the deadline. The sync shell runs it in a daemon worker thread and stops waiting: the
step is abandoned, runs on until it returns, and its events after the deadline are dropped
(`_StepEvents`); a model call there gets the time left as its `timeout`. Without a deadline a
sync step runs in the caller's thread, save parallel tool calls.
"""

from __future__ import annotations

import difflib
import functools
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any, Literal, Never

from chainkit import _threads
from chainkit._stop import stop_escaped
from chainkit._text import described
from chainkit.agents.agent import Agent
from chainkit.agents.base import agent_toolset, check_max_parallel_tools
from chainkit.agents.error_handler import ParserErrorHandler
from chainkit.agents.errors import (
    PARSE_ERROR_TOOL,
    AgentConfigError,
    AgentTypeError,
    DeadlineExceededError,
    NoReturnError,
    NotFinishedError,
    OutputParserError,
    UnknownToolError,
)
from chainkit.callbacks import CombiningHandler, Handlers, Observed, RunInfo, current_run, guard
from chainkit.callbacks.events import ending, handler_methods
from chainkit.callbacks.run import Run, active_handler, enter, handled_by, reporting_for
from chainkit.chains import Chain
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Memory
from chainkit.tools import Tool, ToolError
from chainkit.tools.toolset import observation

INTERMEDIATE_STEPS_KEY = "intermediate_steps"


@dataclass(frozen=True, slots=True)
class _Plan:
    """Ask the agent for its next actions or its final answer."""


@dataclass(frozen=True, slots=True)
class _PlanFinal:
    """Ask the agent for a final answer now: a limit was reached."""


@dataclass(slots=True)  # not frozen: made on every step, and frozen costs a setattr per field
class _Act:
    """Run these actions' tools; send back their observations, in order."""

    actions: list[AgentAction]


@dataclass(slots=True)
class _Done:
    """The run's outputs: the loop's last request."""

    outputs: dict[str, Any]


_Request = _Plan | _PlanFinal | _Act | _Done
_PLAN = _Plan()
_PLAN_FINAL = _PlanFinal()
_Loop = Generator[_Request, Any, None]
"""Yields what it needs done, then `_Done` with the run's outputs."""


class _Interrupted(Exception):
    """Thrown into the loop when the deadline cut a step short: when ("while waiting for the
    model"), and the observations of the step's actions that finished before it (None for the
    others)."""

    def __init__(self, during: str, observations: Sequence[str | None] = ()) -> None:
        super().__init__(during)
        self.during = during
        self.observations = observations


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
        **langchain_arguments: Never,
    ) -> None:
        if langchain_arguments:
            raise _unexpected_argument(langchain_arguments)
        if not isinstance(agent, Agent):
            raise AgentTypeError(
                f"agent must be an agents.Agent (such as agents.OneShotAgent(llm, tools)), got "
                f"{type(agent).__name__}"
            )
        _check_limits(max_iterations, max_execution_time)
        _check_flag("return_intermediate_steps", return_intermediate_steps)
        _check_flag("handle_tool_errors", handle_tool_errors)
        if early_stopping_method not in ("force", "generate"):
            raise AgentConfigError(
                f"early_stopping_method must be 'force' or 'generate', "
                f"got {described(early_stopping_method)}"
            )
        if error_handler is not None and not isinstance(error_handler, ParserErrorHandler):
            raise AgentTypeError(
                f"error_handler must be an agents.ParserErrorHandler, got {error_handler!r}; "
                "use error_handler=agents.ParserErrorHandler() to send parse errors back"
            )
        toolset = agent_toolset(agent.tools)
        check_max_parallel_tools(agent.max_parallel_tools)
        if memory is not None:
            _check_memory_is_read(agent, memory)
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
        steps: list[AgentStep] = []
        callbacks = active_handler()
        deadline = self._deadline()
        loop = self._loop(steps, callbacks, deadline)
        request = next(loop)
        while True:
            try:
                # Keyword patterns, the common requests first: matched on every step.
                match request:
                    case _Plan() if deadline is None:
                        result: Any = self.agent.plan(steps, inputs, **options)
                    case _Act(actions=[action]) if deadline is None:
                        result = [self._run_tool(action)]
                    case _Plan():
                        assert deadline is not None  # the first case takes the others
                        result = self._plan_before(deadline, steps, inputs, options, callbacks)
                    case _Act(actions=actions):
                        result = self._act_in_threads(actions, callbacks, deadline)
                    case _PlanFinal():
                        result = self.agent.plan_final(steps, inputs, **options)
                    case _Done(outputs=outputs):
                        loop.close()
                        return outputs
                    case _:
                        raise AssertionError(f"the loop asked for {request!r}")
            except (OutputParserError, _Interrupted) as error:
                request = loop.throw(error)
            else:
                request = loop.send(result)

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        steps: list[AgentStep] = []
        callbacks = active_handler()
        deadline = self._deadline()
        loop = self._loop(steps, callbacks, deadline)
        request = next(loop)
        while not isinstance(request, _Done):
            try:
                result = await self._aperform(request, steps, inputs, options, deadline)
            except (OutputParserError, _Interrupted) as error:
                request = loop.throw(error)
            else:
                request = loop.send(result)
        loop.close()
        return request.outputs

    def _deadline(self) -> float | None:
        """When the run must end, on the `time.monotonic()` clock; None without a limit."""
        if self.max_execution_time is None:
            return None
        return time.monotonic() + self.max_execution_time

    def _loop(
        self, steps: list[AgentStep], callbacks: CombiningHandler | None, deadline: float | None
    ) -> _Loop:
        limit = self.max_iterations
        iteration = 0
        interrupted: _Interrupted | None = None
        while limit is None or iteration < limit:
            if deadline is not None and time.monotonic() >= deadline:
                break
            iteration += 1
            try:
                decision = yield _PLAN
            except OutputParserError as error:
                if self.error_handler is None:
                    raise
                observation = self.error_handler.observation(error)
                if callbacks is not None:
                    callbacks.handle_text(
                        f"unparsable reply, sent back to the model: {observation}"
                    )
                action = AgentAction(PARSE_ERROR_TOOL, error.observation, error.llm_output)
                steps.append(AgentStep(action, observation))
                continue
            except _Interrupted as cut:
                interrupted = cut
                break
            if isinstance(decision, AgentFinish):
                yield _Done(self._finish(decision, steps, callbacks))
                return
            if not decision:
                raise NoReturnError(
                    f"{type(self.agent).__name__}.plan returned neither actions nor a final answer"
                )
            if deadline is not None and time.monotonic() >= deadline:
                break  # planned in time, but no tool starts after the deadline
            if callbacks is not None:
                for action in decision:
                    callbacks.handle_agent_action(action)
            try:
                observations = yield _Act(decision)
            except _Interrupted as cut:
                # The calls that finished did their work: the caller gets to see it.
                steps.extend(
                    AgentStep(action, observation)
                    for action, observation in zip(decision, cut.observations, strict=True)
                    if observation is not None
                )
                interrupted = cut
                break
            direct: str | None = None
            for action, observation in zip(decision, observations, strict=True):
                steps.append(AgentStep(action, observation))
                if direct is None and self._returns_direct(action.tool):
                    direct = observation
            if direct is not None:
                output_key = self.agent.output_keys[0]
                yield _Done(self._finish(AgentFinish({output_key: direct}, ""), steps, callbacks))
                return
        limit_hit: Literal["max_iterations", "max_execution_time"] = "max_execution_time"
        reason = f"reached max_execution_time={self.max_execution_time}s"
        if interrupted is not None:
            reason += f" {interrupted.during}"
        elif limit is not None and iteration >= limit:
            limit_hit, reason = "max_iterations", f"reached max_iterations={limit}"
        if self.early_stopping_method == "force":
            raise NotFinishedError(reason, steps, limit=limit_hit)
        final = yield _PLAN_FINAL
        yield _Done(self._finish(final, steps, callbacks))

    def _finish(
        self, finish: AgentFinish, steps: list[AgentStep], callbacks: CombiningHandler | None
    ) -> dict[str, Any]:
        if callbacks is not None:
            callbacks.handle_agent_finish(finish)
        if self.return_intermediate_steps:
            return {**finish.return_values, INTERMEDIATE_STEPS_KEY: steps}
        return finish.return_values

    def _returns_direct(self, name: str) -> bool:
        tool = self._toolset.find(name)
        return tool is not None and tool.return_direct

    # The sync shell: what `_call` does besides calling the agent and one tool.

    def _plan_before(
        self,
        deadline: float,
        steps: list[AgentStep],
        inputs: dict[str, Any],
        options: dict[str, Any],
        callbacks: CombiningHandler | None,
    ) -> list[AgentAction] | AgentFinish:
        """Plans in a worker thread, waiting no longer than `deadline`."""
        # The agent's own handler hears the model too: it is silenced along with the rest.
        own = self.agent.handler if isinstance(self.agent, Observed) else None
        events = _StepEvents(callbacks, own)
        left = deadline - time.monotonic()
        if left <= 0:  # passed since the loop looked: a model refuses a timeout of 0 or less
            raise _Interrupted("while waiting for the model")
        given = options.get("timeout")
        plan_options = {**options, "timeout": left if given is None else min(given, left)}
        streaming_func = options.get("streaming_func")
        if streaming_func is not None:
            plan_options["streaming_func"] = events.relay(streaming_func)
        plan = functools.partial(self.agent.plan, list(steps), inputs, **plan_options)
        with handled_by(events if events.handlers else None):
            future = _threads.submit(plan)
        done = _wait_for({future}, events, deadline)
        if not done:
            events.abandon(self._deadline_error())
            raise _Interrupted("while waiting for the model")
        result: list[AgentAction] | AgentFinish = future.result()
        return result

    def _act_in_threads(
        self,
        actions: list[AgentAction],
        callbacks: CombiningHandler | None,
        deadline: float | None,
    ) -> list[str]:
        """Runs the actions in worker threads, at most `max_parallel_tools` at once, until all
        are done or `deadline` passes; results keep the order of `actions`."""
        events = _StepEvents(callbacks)
        try:
            return self._act_in_threads_with(actions, events, deadline)
        except BaseException as error:  # an interrupt may land anywhere, not only in a wait
            events.abandon(error)
            raise

    def _act_in_threads_with(
        self, actions: list[AgentAction], events: _StepEvents, deadline: float | None
    ) -> list[str]:
        observations: list[str | None] = [None] * len(actions)
        failures: dict[int, BaseException] = {}
        waiting = deque(enumerate(actions))
        running: dict[Future[str | None], int] = {}
        while waiting or running:
            while waiting and len(running) < self.max_parallel_tools:
                index, action = waiting.popleft()
                with handled_by(events if events.handlers else None):
                    running[_threads.submit(self._run_admitted_tool, action, events)] = index
            done = _wait_for(set(running), events, deadline)
            if not done:
                events.abandon(self._deadline_error())
                if failures:
                    raise failures[min(failures)]
                unfinished = [
                    a.tool for a, o in zip(actions, observations, strict=True) if o is None
                ]
                raise _Interrupted(f"before {_named_tools(unfinished)} finished", observations)
            for future in done:
                index = running.pop(future)
                error = future.exception()
                if error is None:
                    observations[index] = future.result()
                elif isinstance(error, Exception):
                    failures[index] = error
                else:  # an interrupt does not wait for the other calls
                    events.abandon(error)
                    raise error
        if failures:
            raise failures[min(failures)]
        return [observation for observation in observations if observation is not None]

    def _run_admitted_tool(self, action: AgentAction, events: _StepEvents) -> str | None:
        """Runs the action's tool unless its step was abandoned before it could start."""
        if events.abandoned:
            return None
        return self._run_tool(action)

    def _deadline_error(self) -> DeadlineExceededError:
        return DeadlineExceededError(
            f"max_execution_time={self.max_execution_time}s reached before the call returned; "
            "it was abandoned"
        )

    # The async shell.

    async def _aperform(
        self,
        request: _Request,
        steps: list[AgentStep],
        inputs: dict[str, Any],
        options: dict[str, Any],
        deadline: float | None,
    ) -> Any:
        observations: list[str | None] = []
        step: Coroutine[Any, Any, Any]
        match request:
            case _Plan():
                step = self.agent.aplan(steps, inputs, **options)
            case _Act(actions=actions):
                observations = [None] * len(actions)
                step = self._aact(actions, observations)
            case _PlanFinal():
                return await self.agent.aplan_final(steps, inputs, **options)
            case _:
                raise AssertionError(f"the loop asked for {request!r}")
        if deadline is None:
            return await step
        import asyncio  # loaded already by the running event loop, not at import

        try:
            async with asyncio.timeout(deadline - time.monotonic()) as scope:
                return await step
        except TimeoutError:
            if not scope.expired():
                raise  # raised by the model or a tool, not by the deadline
        if not isinstance(request, _Act):
            raise _Interrupted("while waiting for the model")
        actions = request.actions
        unfinished = [a.tool for a, o in zip(actions, observations, strict=True) if o is None]
        raise _Interrupted(f"before {_named_tools(unfinished)} finished", observations)

    async def _aact(self, actions: list[AgentAction], observations: list[str | None]) -> list[str]:
        """Runs the actions as tasks, at most `max_parallel_tools` at once, each observation
        put in `observations` as it comes; returns them in the order of `actions`."""
        import asyncio  # loaded already by the running event loop, not at import

        if len(actions) == 1:
            observation = observations[0] = await self._arun_tool(actions[0])
            return [observation]
        limit = asyncio.Semaphore(self.max_parallel_tools)

        async def run(index: int, action: AgentAction) -> str:
            async with limit:
                observation = observations[index] = await self._arun_tool(action)
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

    def _run_tool(self, action: AgentAction) -> str:
        tool = self._toolset.find(action.tool)
        with enter("tool", action.tool if tool is None else tool.name) as run:
            if run.handler is not None:
                run.handler.handle_tool_start(run.name, action.tool_input)
            if tool is None:
                return self._unknown_tool(action, run)
            try:
                if action.tool_call_id is None:
                    output = tool.call(action.tool_input)
                else:
                    output = tool.call_arguments(action.tool_input)
            except BaseException as error:
                return self._tool_failed(tool, error, run)
            return self._tool_ended(output, run)

    async def _arun_tool(self, action: AgentAction) -> str:
        tool = self._toolset.find(action.tool)
        with enter("tool", action.tool if tool is None else tool.name) as run:
            if run.handler is not None:
                run.handler.handle_tool_start(run.name, action.tool_input)
            if tool is None:
                return self._unknown_tool(action, run)
            try:
                if action.tool_call_id is None:
                    output = await tool.acall(action.tool_input)
                else:
                    output = await tool.acall_arguments(action.tool_input)
            except BaseException as error:
                return self._tool_failed(tool, error, run)
            return self._tool_ended(output, run)

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
        text = output if isinstance(output, str) else observation(output)
        run.end(text)
        return text


class _StepEvents(CombiningHandler):
    """The handlers of one step run in worker threads, until the step is abandoned.

    Then each run whose start was reported and whose end was not (a model or tool call, or a
    chain or retrieval inside one) gets an error event at once (reported as that run's, so
    `current_run()` is right), and whatever the abandoned threads report later is dropped:
    every start is answered exactly once, and nothing is heard from a run after it ended.
    """

    def __init__(self, *handlers: CombiningHandler | None) -> None:
        combined = guard(*handlers)
        super().__init__(combined.handlers if combined is not None else [])
        self._lock = threading.Lock()
        self.abandoned = False
        self._open: dict[str, RunInfo] = {}

    def _dispatch(self, event: str, *args: Any) -> None:
        run = current_run()
        if event in _START_EVENTS:
            # Reported under the lock, so an error for an open run never comes before it.
            with self._lock:
                if self.abandoned:
                    return
                if run is not None:
                    self._open[run.id] = run
                super()._dispatch(event, *args)
            return
        with self._lock:
            if self.abandoned:
                return
            if event in _END_EVENTS and run is not None:
                self._open.pop(run.id, None)
        super()._dispatch(event, *args)

    def abandon(self, error: BaseException) -> None:
        """Reports `error` for each run still open, then drops every later event."""
        with self._lock:
            if self.abandoned:
                return
            self.abandoned = True
            still_open = list(self._open.values())
        for run in reversed(still_open):  # the innermost first: a run starts after its parent
            failure = ending(run.kind, "error")
            with reporting_for(run):
                super()._dispatch(failure.method, *failure.reported(run.name, error))

    def relay(self, streaming_func: Callable[[str], None]) -> Callable[[str], None]:
        """`streaming_func`, silenced once the step is abandoned."""

        def relayed(chunk: str) -> None:
            if not self.abandoned:
                streaming_func(chunk)

        return relayed


_START_EVENTS = handler_methods("start")
_END_EVENTS = handler_methods("end", "error")


def _wait_for(
    futures: set[Future[Any]], events: _StepEvents, deadline: float | None
) -> set[Future[Any]]:
    """The first of `futures` to be done, or none if `deadline` comes first; an interrupt
    while waiting abandons the step before it propagates."""
    timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
    try:
        done, _ = wait(futures, timeout, FIRST_COMPLETED)
    except BaseException as error:
        events.abandon(error)
        raise
    return done


def _named_tools(names: Sequence[str]) -> str:
    """ "tool 'a'" or "tools 'a', 'b'"."""
    listed = ", ".join(repr(name) for name in names)
    return f"tool {listed}" if len(names) == 1 else f"tools {listed}"


_LANGCHAIN_ARGUMENTS = {
    "verbose": "to see each step, use callbacks=callbacks.LogHandler()",
    "handle_parsing_errors": "to send parse errors back to the model, use "
    "error_handler=agents.ParserErrorHandler() (its formatter= words the observation)",
    "tools": "the tools belong to the agent: agents.OneShotAgent(llm, tools)",
    "handle_tool_error": "use handle_tool_errors=True",
}
"""Arguments of LangChain's AgentExecutor that the Executor lacks, and what to use here."""
_SETTINGS = (
    *("agent", "max_iterations", "max_execution_time", "return_intermediate_steps", "memory"),
    *("callbacks", "error_handler", "early_stopping_method", "handle_tool_errors"),
)


def _unexpected_argument(arguments: Mapping[str, object]) -> AgentTypeError:
    """The error for keyword arguments the Executor does not take, with what to use instead."""
    name = sorted(arguments)[0]
    if name in _LANGCHAIN_ARGUMENTS:
        hint = _LANGCHAIN_ARGUMENTS[name]
    else:
        close = difflib.get_close_matches(name, _SETTINGS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(_SETTINGS)}"
    return AgentTypeError(f"Executor() got an unexpected keyword argument {name!r}; {hint}")


def _check_limits(max_iterations: object, max_execution_time: object) -> None:
    """Raises unless the limits are None or in range: a whole number of steps, a finite
    number of seconds."""
    if max_iterations is not None:
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
            raise AgentTypeError(
                f"max_iterations must be a whole number of steps, 1 or more, or None; got "
                f"{described(max_iterations)}"
            )
        if max_iterations < 1:
            raise AgentConfigError(
                f"max_iterations must be at least 1 or None, got {max_iterations}"
            )
    if max_execution_time is not None:
        if isinstance(max_execution_time, bool) or not isinstance(max_execution_time, int | float):
            raise AgentTypeError(
                f"max_execution_time must be a number of seconds or None, got "
                f"{described(max_execution_time)}"
            )
        if not 0 < max_execution_time < math.inf:
            raise AgentConfigError(
                f"max_execution_time must be a positive, finite number of seconds, or None for "
                f"no limit; got {max_execution_time}"
            )


def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise AgentTypeError(f"{name} must be True or False, got {described(value)}")


def _check_memory_is_read(agent: Agent, memory: Memory) -> None:
    """Raises when the agent would drop what the memory loads: history silently lost is worse
    than an error at construction."""
    read = {*agent.input_keys, *getattr(agent, "optional_input_keys", ())}
    unread = [name for name in memory.memory_variables if name not in read]
    if unread:
        raise AgentConfigError(
            f"{type(agent).__name__} does not read memory variable(s) {unread}; it reads "
            f"{sorted(read)}. Name the memory's key after one of these, or add "
            f"{{{unread[0]}}} to the agent's prompt"
        )
