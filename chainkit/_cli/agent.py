"""The built-in agent of `chainkit run` and `chainkit batch`: a MRKL agent over the calculator,
random number and clock tools, parse errors sent back to the model."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chainkit.agents import Executor
    from chainkit.callbacks import Handler
    from chainkit.llms import Model

# `chainkit batch` names it as a factory, which each Ray actor imports and calls.
SPEC = "chainkit._cli.agent:builtin_agent"


def builtin_agent(
    model: Model | None = None, *, max_iterations: int = 5, callbacks: Handler | None = None
) -> Executor:
    """The agent over the built-in tools, on `model` (by default the offline model)."""
    from chainkit import agents, llms, tools

    agent = agents.OneShotAgent(
        llms.OfflineModel() if model is None else model, tools.builtin_tools()
    )
    return agents.Executor(
        agent,
        max_iterations=max_iterations,
        callbacks=callbacks,
        error_handler=agents.ParserErrorHandler(),
    )
