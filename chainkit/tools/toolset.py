"""Toolset: a set of tools a model can choose from by name, and the text a tool's output becomes.

The one place that says what a usable set of tools is. Agents, the Executor, `join_tools`,
`chainkit mcp-serve` and `ToolRetriever` all hold their tools in one, so a list one of them
accepts, the others accept too, and a list one refuses, the others refuse with the same words.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Iterator, Mapping

from chainkit._jsonschema.specs import json_form
from chainkit.tools._mcp.tool import MCPTool
from chainkit.tools.base import Tool
from chainkit.tools.errors import ToolConfigError, ToolTypeError
from chainkit.tools.examples import check_examples


class Toolset:
    """Tools found by name: exactly as written, else ignoring case (a model may write
    `Search` for `search`), so no two names may be equal once case-folded.

    Each tool is checked when it joins: a Tool with a name and a description, implementing
    `call` or `acall`. A name must be text a model can write back: no control characters
    (newlines, tabs), no space at either end. Its `examples` must fit its arguments. Raises
    ToolTypeError or ToolConfigError naming the tool. A Toolset does not change: `adding` and
    `without` give new ones.
    """

    __slots__ = ("_by_folded", "_by_name")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._by_name: dict[str, Tool] = {}
        self._by_folded: dict[str, Tool] = {}
        self._take_all(tools)

    def __repr__(self) -> str:
        return f"Toolset({list(self._by_name)})"

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._by_name.values())

    @property
    def names(self) -> list[str]:
        """The tools' names, in order."""
        return list(self._by_name)

    def find(self, name: str) -> Tool | None:
        """The tool named `name`, else the one whose name equals it ignoring case; None when
        there is none."""
        tool = self._by_name.get(name)
        return self._by_folded.get(name.casefold()) if tool is None else tool

    def adding(self, tools: Iterable[Tool]) -> Toolset:
        """A Toolset of these tools and then `tools`; raises as the constructor does."""
        grown = self._copy(self)
        grown._take_all(tools)
        return grown

    def without(self, tools: Iterable[Tool]) -> Toolset:
        """A Toolset of these tools but `tools` (those it holds)."""
        gone = {id(tool) for tool in tools}
        return self._copy(tool for tool in self if id(tool) not in gone)

    @classmethod
    def _copy(cls, tools: Iterable[Tool]) -> Toolset:
        """A Toolset of tools already checked together."""
        toolset = cls()
        for tool in tools:
            toolset._by_name[tool.name] = toolset._by_folded[tool.name.casefold()] = tool
        return toolset

    def _take_all(self, tools: object) -> None:
        if isinstance(tools, Tool | str | bytes | Mapping) or not isinstance(tools, Iterable):
            raise ToolTypeError(f"tools must be a list of Tool, got {type(tools).__name__}")
        for tool in tools:
            self._take(tool)

    def _take(self, tool: object) -> None:
        checked = _checked(tool)
        folded = checked.name.casefold()
        other = self._by_folded.get(folded)
        if other is not None:
            raise ToolConfigError(_clash(other, checked))
        self._by_name[checked.name] = self._by_folded[folded] = checked


def observation(output: object) -> str:
    """The text a model reads for a tool's output: text as it is, anything else as JSON, or as
    `str()` when it has no JSON form."""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False, default=json_form)
    except (TypeError, ValueError):
        return str(output)


def _checked(tool: object) -> Tool:
    """`tool`, once it is a Tool with a name a model can write back and a description."""
    if not isinstance(tool, Tool):
        hint = "; make a function a tool with @tools.tool" if callable(tool) else ""
        raise ToolTypeError(
            f"tools must be Tool instances, got {type(tool).__name__}: {tool!r}{hint}"
        )
    name, description = tool.name, tool.description
    if not isinstance(name, str) or not isinstance(description, str):
        raise ToolTypeError(
            f"tool {tool!r}: name and description must be str, got "
            f"{type(name).__name__} and {type(description).__name__}"
        )
    if not name.strip():
        raise ToolConfigError(f"tool {tool!r} has an empty name")
    if name != name.strip() or any(unicodedata.category(c)[0] == "C" for c in name):
        raise ToolConfigError(
            f"tool name {name!r} has a space at an end or a control character (newline, "
            "tab...); a model could not write it back. Use a name like 'get_weather'"
        )
    if not description.strip():
        raise ToolConfigError(
            f"tool {name!r} has no description; the model reads it to choose its tools. "
            "Set `description` (for @tools.tool, write a docstring)"
        )
    _check_callable(tool)
    check_examples(tool)
    return tool


def _clash(first: Tool, second: Tool) -> str:
    """Why `second` cannot join a set holding `first`, whose name equals its ignoring case."""
    if first.name == second.name:
        named = f"two tools are named {first.name!r}"
    else:
        named = f"two tools' names differ only in case, {first.name!r} and {second.name!r}"
    if isinstance(first, MCPTool) or isinstance(second, MCPTool):
        fix = "pass prefix= to MCPTools to tell them apart"
    else:
        fix = "rename one of them"
    return (
        f"{named}: {_source(first)} and {_source(second)}. A model's call finds its tool by "
        f"name, ignoring case, so names must differ even then; {fix}"
    )


def _source(tool: Tool) -> str:
    if isinstance(tool, MCPTool):
        return f"the tool of MCP server {tool.server!r}"
    return f"the local tool {tool!r}"


_LANGCHAIN_METHODS = {"_run": "call", "run": "call", "_arun": "acall", "arun": "acall"}
"""Methods LangChain's tools implement, and the method of a chainkit Tool doing their work."""


def _check_callable(tool: Tool) -> None:
    """Raises, naming the tool, unless it implements `call` or `acall`: Tool's own would fail
    at the first call, in the middle of a run."""
    kind = type(tool)
    if kind.call is not Tool.call or kind.acall is not Tool.acall:
        return
    if {"call", "acall"} & getattr(tool, "__dict__", {}).keys():
        return  # set on the instance
    found = [name for name in _LANGCHAIN_METHODS if callable(getattr(tool, name, None))]
    if found:
        hint = f"define {_LANGCHAIN_METHODS[found[0]]}(self, input) instead of {found[0]}"
    else:
        hint = "define call(self, input) -> str (or async acall(self, input) -> str)"
    raise ToolTypeError(
        f"tool {tool.name!r} ({kind.__name__}) implements neither call nor acall: {hint}, or "
        "make a function a tool with @tools.tool"
    )
