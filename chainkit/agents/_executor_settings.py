"""The Executor's settings, checked when it is built: each bad one named, with what to give
instead."""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping

from chainkit._text import described
from chainkit.agents._typed_answer import TypedAnswer
from chainkit.agents.agent import Agent
from chainkit.agents.base import BaseAgent, agent_toolset, check_max_parallel_tools
from chainkit.agents.error_handler import ParserErrorHandler
from chainkit.agents.errors import AgentConfigError, AgentTypeError
from chainkit.checkpoints import Checkpointer
from chainkit.schema import Memory
from chainkit.tools import Toolset

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
    *("output_type", "checkpointer"),
)


def typed_agent(agent: Agent, answer: TypedAnswer) -> BaseAgent:
    """The copy of `agent` that asks for and reads `answer`'s type; only a BaseAgent can (its
    requests are what the typed answer adds to)."""
    if not isinstance(agent, BaseAgent):
        raise AgentTypeError(
            f"output_type needs an agent that subclasses agents.BaseAgent (OneShotAgent, "
            f"ToolCallingAgent or your own kind), got {type(agent).__name__}"
        )
    if answer.tool.name in agent_toolset(agent.tools).names:
        raise AgentConfigError(
            f"with output_type the model ends the run by calling a tool named "
            f"{answer.tool.name!r}; the agent has a tool of that name: rename it"
        )
    return agent.answering(answer)


def unexpected_argument(arguments: Mapping[str, object]) -> AgentTypeError:
    """The error for keyword arguments the Executor does not take, with what to use instead."""
    name = sorted(arguments)[0]
    if name in _LANGCHAIN_ARGUMENTS:
        hint = _LANGCHAIN_ARGUMENTS[name]
    else:
        close = difflib.get_close_matches(name, _SETTINGS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(_SETTINGS)}"
    return AgentTypeError(f"Executor() got an unexpected keyword argument {name!r}; {hint}")


def check_limits(max_iterations: object, max_execution_time: object) -> None:
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


def check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise AgentTypeError(f"{name} must be True or False, got {described(value)}")


def check_memory_is_read(agent: Agent, memory: Memory) -> None:
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


def check_agent(agent: object) -> None:
    if not isinstance(agent, Agent):
        raise AgentTypeError(
            f"agent must be an agents.Agent (such as agents.OneShotAgent(llm, tools)), got "
            f"{type(agent).__name__}"
        )


def checked_toolset(agent: Agent) -> Toolset:
    """The agent's tools as a set, checked, once its `max_parallel_tools` is checked too."""
    toolset = agent_toolset(agent.tools)
    check_max_parallel_tools(agent.max_parallel_tools)
    return toolset


def check_early_stopping_method(method: object) -> None:
    if method not in ("force", "generate"):
        raise AgentConfigError(
            f"early_stopping_method must be 'force' or 'generate', got {described(method)}"
        )


def check_error_handler(handler: object) -> None:
    if handler is not None and not isinstance(handler, ParserErrorHandler):
        raise AgentTypeError(
            f"error_handler must be an agents.ParserErrorHandler, got {handler!r}; "
            "use error_handler=agents.ParserErrorHandler() to send parse errors back"
        )


def check_checkpointer(checkpointer: object) -> None:
    if checkpointer is not None and not isinstance(checkpointer, Checkpointer):
        given = type(checkpointer).__name__  # not its value: a DSN may hold a password
        raise AgentTypeError(
            f"checkpointer must be a checkpoints.Checkpointer (such as "
            f"checkpoints.SQLiteStore('runs.db') or checkpoints.PostgresStore(dsn)), got a {given}"
        )
