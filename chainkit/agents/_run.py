"""One run of an Executor: what it holds (inputs, steps, deadline, journal…) and the
requests its loop yields to the drivers, with what the loop's steps end in."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

from chainkit.agents._deadline import Deadline
from chainkit.agents._journal import Journal
from chainkit.agents.approval import Denial, PendingApproval
from chainkit.agents.error_handler import ParserErrorHandler
from chainkit.agents.errors import PARSE_ERROR_TOOL, OutputParserError
from chainkit.callbacks.combining import CombiningHandler
from chainkit.callbacks.pacing import Pacer
from chainkit.schema import AgentAction, AgentStep
from chainkit.tools import Toolset


@dataclass(frozen=True, slots=True)
class Plan:
    """Ask the agent for its next actions or its final answer."""


@dataclass(frozen=True, slots=True)
class PlanFinal:
    """Ask the agent for a final answer now: a limit was reached."""


@dataclass(slots=True)  # not frozen: made on every step, and frozen costs a setattr per field
class Act:
    """Run these actions' tools; send back their observations, in order. `step` is the
    number of the run's step (from 1), which an approval request names."""

    actions: list[AgentAction]
    step: int


@dataclass(slots=True)
class Done:
    """The run's outputs: the loop's last request."""

    outputs: dict[str, Any]


LoopRequest = Plan | PlanFinal | Act | Done
PLAN = Plan()
PLAN_FINAL = PlanFinal()
Loop = Generator[LoopRequest, Any, None]
"""Yields what it needs done, then `Done` with the run's outputs."""


@dataclass(slots=True)
class OneRun:
    """One run of the executor: its inputs and options, the steps taken so far, the handler
    of its events, when it must end, and the pacer among its handlers (a stream's reader)
    that each step waits for."""

    inputs: dict[str, Any]
    options: dict[str, Any]
    callbacks: CombiningHandler | None
    deadline: Deadline | None
    steps: list[AgentStep]
    pacer: Pacer | None
    journal: Journal | None

    def ended(self) -> None:
        """The run's end, however it ends (answered, paused, failed, cancelled): its hold on
        the run in the store is let go, here only, so a loop collected later lets nothing go."""
        if self.journal is not None:
            self.journal.release()

    def record(
        self, actions: list[AgentAction], observations: list[str], toolset: Toolset
    ) -> str | None:
        """Records the actions' steps; returns the observation of the first action whose tool
        (in `toolset`) returns directly, if any."""
        # Indexed rather than zip(strict=True), whose keyword call costs more than the rest of
        # the loop on every tool step; the drivers give one observation per action.
        assert len(observations) == len(actions)
        direct: str | None = None
        for index, action in enumerate(actions):
            observation = observations[index]
            self.steps.append(AgentStep(action, observation))
            if direct is None:
                tool = toolset.find(action.tool)
                if tool is not None and tool.return_direct and type(observation) is not Denial:
                    direct = observation
        return direct

    def send_back(
        self, error: OutputParserError, handler: ParserErrorHandler | None, always: bool
    ) -> None:
        """Records an unparsable reply as a step whose observation (`handler`'s) tells the
        model what to fix; re-raises `error` without a handler, unless it is to go back
        `always`."""
        if handler is None and not always:
            raise error
        observation = (handler or _AS_IT_IS).observation(error)
        if self.callbacks is not None:
            self.callbacks.handle_text(f"unparsable reply, sent back to the model: {observation}")
        log = None if error.reply is None else [error.reply]
        action = AgentAction(
            PARSE_ERROR_TOOL, error.observation, error.llm_output, error.tool_call_id, log
        )
        self.steps.append(AgentStep(action, observation))


_AS_IT_IS = ParserErrorHandler()
"""Sends a reply back with the parse error's own observation (no handler was given)."""


@dataclass(frozen=True, slots=True)
class Stopped:
    """A run stopped by a limit before the agent finished: which limit, and why."""

    limit: Literal["max_iterations", "max_execution_time"]
    reason: str


@dataclass(frozen=True, slots=True)
class Paused:
    """A run stopped for people's answers on its calls."""

    pending: PendingApproval


Steps = Generator[LoopRequest, Any, "dict[str, Any] | Stopped | Paused"]
"""Yields what it needs done; returns the run's outputs, the limit that stopped it, or the
calls it waits for people's answers on."""
