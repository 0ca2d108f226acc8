"""What the built-in agents share: a model, a checked list of tools, an output key, and an
optional handler for their own model calls."""

from __future__ import annotations

from collections.abc import Sequence

from chainkit._text import shorten
from chainkit.agents.errors import NotFinishedError
from chainkit.callbacks import Handler, Observed
from chainkit.llms import Model
from chainkit.schema import AgentStep, Message
from chainkit.tools import Tool


def check_tools(tools: Sequence[Tool]) -> list[Tool]:
    """The tools as a list; raises when there are none, one is not a Tool, or names repeat."""
    if isinstance(tools, Tool) or not isinstance(tools, Sequence):
        raise TypeError(f"tools must be a list of Tool, got {type(tools).__name__}")
    if not tools:
        raise ValueError("an agent needs at least one tool")
    seen: set[str] = set()
    for tool in tools:
        if not isinstance(tool, Tool):
            raise TypeError(f"tools must be Tool instances, got {type(tool).__name__}: {tool!r}")
        if not tool.name:
            raise ValueError(f"tool {tool!r} has an empty name")
        if tool.name in seen:
            raise ValueError(f"tool names must be unique; {tool.name!r} appears twice")
        seen.add(tool.name)
    return list(tools)


class BaseAgent(Observed):
    """Holds what OneShotAgent and ToolCallingAgent have in common; the planning is theirs."""

    def __init__(
        self,
        llm: Model,
        tools: Sequence[Tool],
        output_key: str,
        callbacks_handler: Handler | None,
    ) -> None:
        self.llm = llm
        self._tools = check_tools(tools)
        self.output_key = output_key
        self.callbacks_handler = callbacks_handler

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self.llm!r}, tools={[t.name for t in self._tools]})"

    @property
    def tools(self) -> list[Tool]:
        return self._tools

    @property
    def output_keys(self) -> list[str]:
        return [self.output_key]


def no_text(reply: Message) -> str:
    """Describes a reply without text, with the reason the server gave for ending it."""
    reason = reply.response_meta.finish_reason if reply.response_meta is not None else None
    return f"no text (finish_reason {reason!r})" if reason else "no text"


def final_answer_text(reply: Message, steps: Sequence[AgentStep]) -> str:
    """The text of the reply to a final-answer request. Raises NotFinishedError, with the
    steps taken, when the reply holds no answer: tool calls (which can no longer run) or no
    text; an empty answer would pass for a successful run."""
    if reply.tool_calls:
        names = ", ".join(dict.fromkeys(call.function.name for call in reply.tool_calls))
        problem = f"called {shorten(names, 200)} instead"
    elif not reply.content.strip():
        problem = f"replied with {no_text(reply)}"
    else:
        return reply.content
    raise NotFinishedError(f"asked for a final answer, the model {problem}", list(steps))
