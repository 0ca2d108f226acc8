"""What the built-in agents share: a model, a checked list of tools, an output key, and an
optional handler for their own model calls."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from chainkit._text import shorten
from chainkit.agents.agent import Agent
from chainkit.agents.errors import AgentConfigError, AgentTypeError, NotFinishedError
from chainkit.callbacks import Handlers, Observed, guard
from chainkit.llms import Model
from chainkit.schema import AgentStep, Message
from chainkit.tools import Tool


def check_tools(tools: Sequence[Tool]) -> list[Tool]:
    """The tools as a list; raises, naming the tool, unless each is a Tool with a name and a
    description and no two names are equal once case-folded (the Executor finds a tool by its
    case-folded name when the model's casing is off).

    A name must be text a model can write back: no control characters (newlines, tabs), no
    space at either end.
    """
    if isinstance(tools, Tool) or not isinstance(tools, Sequence):
        raise AgentTypeError(f"tools must be a list of Tool, got {type(tools).__name__}")
    if not tools:
        raise AgentConfigError("an agent needs at least one tool")
    seen: dict[str, str] = {}
    for tool in tools:
        if not isinstance(tool, Tool):
            hint = "; make a function a tool with @tools.tool" if callable(tool) else ""
            raise AgentTypeError(
                f"tools must be Tool instances, got {type(tool).__name__}: {tool!r}{hint}"
            )
        name, description = tool.name, tool.description
        if not isinstance(name, str) or not isinstance(description, str):
            raise AgentTypeError(
                f"tool {tool!r}: name and description must be str, got "
                f"{type(name).__name__} and {type(description).__name__}"
            )
        if not name.strip():
            raise AgentConfigError(f"tool {tool!r} has an empty name")
        if name != name.strip() or any(unicodedata.category(c)[0] == "C" for c in name):
            raise AgentConfigError(
                f"tool name {name!r} has a space at an end or a control character (newline, "
                "tab...); a model could not write it back. Use a name like 'get_weather'"
            )
        if not description.strip():
            raise AgentConfigError(
                f"tool {name!r} has no description; the model reads it to choose its tools. "
                "Set `description` (for @tools.tool, write a docstring)"
            )
        folded = name.casefold()
        if folded in seen:
            same = "appears twice" if seen[folded] == name else f"and {seen[folded]!r} clash"
            raise AgentConfigError(
                f"tool names must be unique, ignoring case; {name!r} {same}. Rename one of them"
            )
        seen[folded] = name
    return list(tools)


class BaseAgent(Observed, Agent):
    """Holds what OneShotAgent and ToolCallingAgent have in common; the planning is theirs."""

    def __init__(
        self,
        llm: Model,
        tools: Sequence[Tool],
        output_key: str,
        callbacks: Handlers,
    ) -> None:
        self.llm = llm
        self._tools = check_tools(tools)
        self.output_key = output_key
        self.callbacks = callbacks

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self.llm!r}, tools={[t.name for t in self._tools]})"

    @property
    def tools(self) -> list[Tool]:
        return self._tools

    @property
    def output_keys(self) -> list[str]:
        return [self.output_key]

    def _model_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options of the agent's model call: the caller's, with the agent's own
        `callbacks` added to any the caller gave (the model's run hears both)."""
        result = dict(options)
        if self.handler is not None:
            result["callbacks"] = guard(result.get("callbacks"), self.handler)
        return result


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
