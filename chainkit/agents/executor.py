"""Executor: the plan → act loop, written once and driven by a sync and an async shell.

`_loop` is a generator holding every decision of a run. It yields what it needs done — plan,
plan a final answer, or run these actions — and receives the result, or the parse error thrown
in; any other error ends the run where it is raised. Its last yield is the run's outputs.
`call` and `acall` only carry those requests out, so the two cannot drift apart.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from chainkit._stop import stop_escaped
from chainkit.agents.agent import Agent
from chainkit.agents.error_handler import ParserErrorHandler
from chainkit.agents.errors import (
    PARSE_ERROR_TOOL,
    NoReturnError,
    NotFinishedError,
    OutputParserError,
    UnknownToolError,
)
from chainkit.callbacks import CombiningHandler, Handler
from chainkit.chains import Chain
from chainkit.chains.options import with_callbacks
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Memory
from chainkit.tools import Tool, ToolError

INTERMEDIATE_STEPS_KEY = "intermediate_steps"


class _Request:
    """What the loop asks its driver to do next."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_PLAN = _Request("plan")
_PLAN_FINAL = _Request("plan final answer")
_Loop = Generator[_Request | list[AgentAction] | dict[str, Any], Any, None]
"""Yields requests, then the run's outputs (a dict) last."""


class Executor(Chain):
    """Runs an agent: plan, act, observe, until it finishes or a limit is reached.

    - A parse error is raised, or, with `error_handler`, sent back to the model as the next
      observation.
    - A tool's ToolError becomes the observation. Any other exception propagates, or with
      `handle_tool_errors=True` becomes "Tool error: <message>".
    - At `max_iterations` or `max_execution_time` (seconds), `early_stopping_method="force"`
      raises NotFinishedError with the steps taken; "generate" asks the agent for a final answer.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        max_iterations: int | None = 5,
        max_execution_time: float | None = None,
        return_intermediate_steps: bool = False,
        memory: Memory | None = None,
        callbacks_handler: Handler | None = None,
        error_handler: ParserErrorHandler | None = None,
        early_stopping_method: Literal["force", "generate"] = "force",
        handle_tool_errors: bool = False,
    ) -> None:
        if early_stopping_method not in ("force", "generate"):
            raise ValueError(
                f"early_stopping_method must be 'force' or 'generate', "
                f"got {early_stopping_method!r}"
            )
        if max_iterations is not None and max_iterations < 1:
            raise ValueError(f"max_iterations must be at least 1 or None, got {max_iterations}")
        if max_execution_time is not None and max_execution_time <= 0:
            raise ValueError(
                f"max_execution_time must be a positive number of seconds or None, "
                f"got {max_execution_time}"
            )
        if error_handler is not None and not isinstance(error_handler, ParserErrorHandler):
            raise TypeError(
                f"error_handler must be an agents.ParserErrorHandler, got {error_handler!r}; "
                "use error_handler=agents.ParserErrorHandler() to send parse errors back"
            )
        if memory is not None:
            _check_memory_is_read(agent, memory)
        self.agent = agent
        self.max_iterations = max_iterations
        self.max_execution_time = max_execution_time
        self.return_intermediate_steps = return_intermediate_steps
        self.memory = memory
        self.callbacks_handler = callbacks_handler
        self.error_handler = error_handler
        self.early_stopping_method = early_stopping_method
        self.handle_tool_errors = handle_tool_errors
        self.max_parallel_tools: int = getattr(agent, "max_parallel_tools", 8)
        self._tools: dict[str, Tool] = {tool.name: tool for tool in agent.tools}
        self._tools_folded: dict[str, Tool] = {}
        for tool in agent.tools:
            self._tools_folded.setdefault(tool.name.casefold(), tool)
        self._tool_list = ", ".join(self._tools)

    def __repr__(self) -> str:
        return f"Executor(agent={self.agent!r}, max_iterations={self.max_iterations})"

    @property
    def input_keys(self) -> list[str]:
        return self.agent.input_keys

    @property
    def output_keys(self) -> list[str]:
        keys = self.agent.output_keys
        return [*keys, INTERMEDIATE_STEPS_KEY] if self.return_intermediate_steps else keys

    def call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        steps: list[AgentStep] = []
        callbacks, options = with_callbacks(options, self.callbacks)
        loop = self._loop(steps, callbacks)
        request = next(loop)
        while not isinstance(request, dict):
            try:
                if request is _PLAN:
                    result: Any = self.agent.plan(steps, inputs, **options)
                elif request is _PLAN_FINAL:
                    result = self.agent.plan_final(steps, inputs, **options)
                else:
                    assert isinstance(request, list)
                    result = self._act(request, callbacks)
            except OutputParserError as error:
                request = loop.throw(error)
            else:
                request = loop.send(result)
        loop.close()
        return request

    async def acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        steps: list[AgentStep] = []
        callbacks, options = with_callbacks(options, self.callbacks)
        loop = self._loop(steps, callbacks)
        request = next(loop)
        while not isinstance(request, dict):
            try:
                if request is _PLAN:
                    result: Any = await self.agent.aplan(steps, inputs, **options)
                elif request is _PLAN_FINAL:
                    result = await self.agent.aplan_final(steps, inputs, **options)
                else:
                    assert isinstance(request, list)
                    result = await self._aact(request, callbacks)
            except OutputParserError as error:
                request = loop.throw(error)
            else:
                request = loop.send(result)
        loop.close()
        return request

    def _loop(self, steps: list[AgentStep], callbacks: CombiningHandler | None) -> _Loop:
        limit = self.max_iterations
        deadline = None
        if self.max_execution_time is not None:
            deadline = time.monotonic() + self.max_execution_time
        iteration = 0
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
            if isinstance(decision, AgentFinish):
                yield self._finish(decision, steps, callbacks)
                return
            if not decision:
                raise NoReturnError(
                    f"{type(self.agent).__name__}.plan returned neither actions nor a final answer"
                )
            if callbacks is not None:
                for action in decision:
                    callbacks.handle_agent_action(action)
            observations = yield decision
            direct: str | None = None
            for action, observation in zip(decision, observations, strict=True):
                steps.append(AgentStep(action, observation))
                if direct is None and self._returns_direct(action.tool):
                    direct = observation
            if direct is not None:
                output_key = self.agent.output_keys[0]
                yield self._finish(AgentFinish({output_key: direct}, ""), steps, callbacks)
                return
        reason = (
            f"reached max_iterations={limit}"
            if limit is not None and iteration >= limit
            else f"reached max_execution_time={self.max_execution_time}s"
        )
        if self.early_stopping_method == "force":
            raise NotFinishedError(reason, steps)
        final = yield _PLAN_FINAL
        yield self._finish(final, steps, callbacks)

    def _finish(
        self, finish: AgentFinish, steps: list[AgentStep], callbacks: CombiningHandler | None
    ) -> dict[str, Any]:
        if callbacks is not None:
            callbacks.handle_agent_finish(finish)
        if self.return_intermediate_steps:
            return {**finish.return_values, INTERMEDIATE_STEPS_KEY: steps}
        return finish.return_values

    def _returns_direct(self, name: str) -> bool:
        tool = self._lookup(name)
        return tool is not None and tool.return_direct

    def _lookup(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        if tool is None:
            tool = self._tools_folded.get(name.casefold())
        return tool

    def _act(self, actions: list[AgentAction], callbacks: CombiningHandler | None) -> list[str]:
        if len(actions) == 1:
            return [self._run_tool(actions[0], callbacks)]
        with ThreadPoolExecutor(min(len(actions), self.max_parallel_tools)) as pool:
            return list(pool.map(self._run_tool, actions, [callbacks] * len(actions)))

    async def _aact(
        self, actions: list[AgentAction], callbacks: CombiningHandler | None
    ) -> list[str]:
        import asyncio  # loaded already by the running event loop, not at import

        if len(actions) == 1:
            return [await self._arun_tool(actions[0], callbacks)]
        limit = asyncio.Semaphore(self.max_parallel_tools)

        async def run(action: AgentAction) -> str:
            async with limit:
                return await self._arun_tool(action, callbacks)

        tasks = [asyncio.ensure_future(run(action)) for action in actions]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # A failed or cancelled call leaves no sibling running behind the raised error.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def _run_tool(self, action: AgentAction, callbacks: CombiningHandler | None) -> str:
        prepared = self._start_tool(action, callbacks)
        if isinstance(prepared, str):
            return prepared
        tool, tool_input = prepared
        try:
            output = tool.call(tool_input)
        except BaseException as error:
            return self._tool_failed(tool, error, callbacks)
        return self._tool_ended(tool, output, callbacks)

    async def _arun_tool(self, action: AgentAction, callbacks: CombiningHandler | None) -> str:
        prepared = self._start_tool(action, callbacks)
        if isinstance(prepared, str):
            return prepared
        tool, tool_input = prepared
        try:
            output = await tool.acall(tool_input)
        except BaseException as error:
            return self._tool_failed(tool, error, callbacks)
        return self._tool_ended(tool, output, callbacks)

    def _start_tool(
        self, action: AgentAction, callbacks: CombiningHandler | None
    ) -> tuple[Tool, str] | str:
        """The tool and its input, or the observation when the call cannot be made."""
        tool = self._lookup(action.tool)
        if tool is None:
            unknown = UnknownToolError(action.tool, self._tool_list)
            if callbacks is not None:
                callbacks.handle_tool_start(action.tool, action.tool_input)
                callbacks.handle_tool_error(action.tool, unknown)
            return str(unknown)
        if callbacks is not None:
            callbacks.handle_tool_start(tool.name, action.tool_input)
        if action.tool_call_id is None:
            return tool, action.tool_input
        try:
            return tool, tool.input_from_arguments(action.tool_input)
        except ToolError as error:
            return self._tool_failed(tool, error, callbacks)

    def _tool_failed(
        self, tool: Tool, error: BaseException, callbacks: CombiningHandler | None
    ) -> str:
        """The observation for a tool's failure; re-raises what is not to be observed."""
        if isinstance(error, StopIteration | StopAsyncIteration):
            error = stop_escaped(error, f"tool {tool.name!r}")  # as Tool.acall raises it
        if callbacks is not None:
            callbacks.handle_tool_error(tool.name, error)
        if isinstance(error, ToolError):
            return str(error)
        if self.handle_tool_errors and isinstance(error, Exception):
            return f"Tool error: {error}"
        raise error

    def _tool_ended(self, tool: Tool, output: str, callbacks: CombiningHandler | None) -> str:
        if not isinstance(output, str):
            raise TypeError(
                f"tool {tool.name!r} returned {type(output).__name__}; call() must return str"
            )
        if callbacks is not None:
            callbacks.handle_tool_end(tool.name, output)
        return output


def _check_memory_is_read(agent: Agent, memory: Memory) -> None:
    """Raises when the agent would drop what the memory loads: history silently lost is worse
    than an error at construction."""
    read = {*agent.input_keys, *getattr(agent, "optional_input_keys", ())}
    unread = [name for name in memory.memory_variables if name not in read]
    if unread:
        raise ValueError(
            f"{type(agent).__name__} does not read memory variable(s) {unread}; it reads "
            f"{sorted(read)}. Name the memory's key after one of these, or add "
            f"{{{unread[0]}}} to the agent's prompt"
        )
