"""The built-in agent of `chainkit run` and `chainkit batch`: a MRKL agent over the calculator,
random number and clock tools, parse errors sent back to the model."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chainkit.agents import Executor
    from chainkit.agents.approval import Approver
    from chainkit.callbacks import Handler
    from chainkit.llms import Model

# `chainkit batch` names it as a factory, which each Ray actor imports and calls.
SPEC = "chainkit._cli.agent:builtin_agent"


def builtin_agent(
    model: Model | None = None,
    *,
    max_iterations: int = 5,
    callbacks: Handler | None = None,
    approve: Approver | None = None,
    constrain: str | None = None,
) -> Executor:
    """The agent over the built-in tools, on `model` (by default the offline model). With
    `approve`, every tool call waits for its decision: the built-in tools change nothing, so
    none is marked of itself; asking for approval asks about each call. `constrain` is the
    agent's: the request field a server takes a grammar in."""
    from chainkit import agents, llms, tools

    builtin = tools.builtin_tools()
    if approve is not None:
        for tool in builtin:
            tool.requires_approval = True
    agent = agents.OneShotAgent(
        llms.OfflineModel() if model is None else model, builtin, constrain=constrain
    )
    return agents.Executor(
        agent,
        max_iterations=max_iterations,
        callbacks=callbacks,
        error_handler=agents.ParserErrorHandler(),
        approve=approve,
    )
