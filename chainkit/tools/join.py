"""join_tools: the tools of several sources (MCP servers, local tools) as one list."""

from __future__ import annotations

from collections.abc import Iterable

from chainkit.tools.base import Tool
from chainkit.tools.toolset import Toolset


def join_tools(*groups: Tool | Iterable[Tool]) -> list[Tool]:
    """One list of the tools in `groups`: MCPTools, lists of tools, or single tools; a tool
    given twice is listed once.

    Raises as `Toolset` does: ToolConfigError (a ValueError) when two tools' names are equal,
    even ignoring case, naming where each comes from (the MCP server, or a local tool), since
    an agent could not tell them apart.
    """
    joined: dict[int, Tool] = {}
    for group in groups:
        for tool in Toolset([group] if isinstance(group, Tool) else group):
            joined.setdefault(id(tool), tool)
    return list(Toolset(joined.values()))
