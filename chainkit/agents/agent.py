"""The Agent contract the Executor drives: decide the next actions, or finish."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from chainkit.schema import AgentAction, AgentFinish, AgentStep
from chainkit.tools import Tool


@runtime_checkable
class Agent(Protocol):
    """Plans from the steps taken so far. Options (`llms.CallOptions`: temperature, stop, …)
    must reach the model unchanged; under the Executor's `max_execution_time` they include
    `timeout`, the seconds left.

    Subclass it to inherit the defaults of `max_parallel_tools` (how many of one plan's
    actions may run at once: 8) and `optional_input_keys` (inputs read when given, such as a
    memory's history: none).
    """

    max_parallel_tools: int = 8

    @property
    def optional_input_keys(self) -> list[str]:
        return []

    @property
    def tools(self) -> Sequence[Tool]: ...

    @property
    def input_keys(self) -> list[str]: ...

    @property
    def output_keys(self) -> list[str]: ...

    def plan(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> list[AgentAction] | AgentFinish:
        """The next actions, or the final answer. Raises OutputParserError on a bad reply."""
        ...

    async def aplan(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> list[AgentAction] | AgentFinish: ...

    def plan_final(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> AgentFinish:
        """A final answer from the steps so far, asked for when a limit is reached."""
        ...

    async def aplan_final(
        self, steps: Sequence[AgentStep], inputs: Mapping[str, Any], **options: Any
    ) -> AgentFinish: ...
