"""Errors an agent run can end with, each carrying what the caller needs to act on it."""

from __future__ import annotations

from typing import Literal

from chainkit._text import shorten
from chainkit.schema import AgentStep


class OutputParserError(ValueError):
    """The model's reply could not be parsed.

    `observation` is the text to send back to the model so it can correct itself;
    `llm_output` is the reply as the model wrote it.
    """

    def __init__(self, observation: str, llm_output: str) -> None:
        super().__init__(f"{observation}\nModel output: {shorten(llm_output, 500)!r}")
        self.observation = observation
        self.llm_output = llm_output


class NotFinishedError(RuntimeError):
    """The agent hit `max_iterations` or `max_execution_time` before a final answer.

    `steps` holds every step taken, so no work is lost; `limit` names the limit hit.
    """

    def __init__(
        self,
        reason: str,
        steps: list[AgentStep],
        *,
        limit: Literal["max_iterations", "max_execution_time"] | None = None,
    ) -> None:
        super().__init__(f"agent not finished: {reason} ({len(steps)} steps taken)")
        self.reason = reason
        self.steps = steps
        self.limit = limit

    @property
    def intermediate_steps(self) -> list[AgentStep]:
        """The steps, under the name the Executor's outputs (and LangChain) give them."""
        return self.steps


class DeadlineExceededError(TimeoutError):
    """`max_execution_time` ran out while a model or tool call was in progress, and a sync run
    stopped waiting for it. Reported to callbacks as that call's error; the run itself ends
    with NotFinishedError (or a final answer, with early_stopping_method="generate")."""


class NoReturnError(RuntimeError):
    """The agent returned neither an action nor a final answer."""


class UnknownToolError(LookupError):
    """The model named a tool the agent does not have. Not raised: its message becomes the
    observation, and callbacks see it as the tool's error."""

    def __init__(self, tool: str, known: str) -> None:
        super().__init__(f"{tool} is not a valid tool, try one of [{known}].")
        self.tool = tool
