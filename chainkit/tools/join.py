"""join_tools: the tools of several sources (MCP servers, local tools) as one list."""

from __future__ import annotations

from collections.abc import Iterable

from chainkit.tools._mcp.tool import MCPTool
from chainkit.tools.base import Tool
from chainkit.tools.errors import ToolConfigError, ToolTypeError


def join_tools(*groups: Tool | Iterable[Tool]) -> list[Tool]:
    """One list of the tools in `groups`: MCPTools, lists of tools, or single tools.

    Raises ToolConfigError (a ValueError) when two tools share a name, naming where each comes
    from (the MCP server, or a local tool), since an agent could not tell them apart.
    """
    joined: dict[str, Tool] = {}
    for group in groups:
        for tool in [group] if isinstance(group, Tool) else group:
            if not isinstance(tool, Tool):
                raise ToolTypeError(f"join_tools takes tools, got {type(tool).__name__}: {tool!r}")
            other = joined.setdefault(tool.name, tool)
            if other is not tool:
                hint = " (pass prefix= to MCPTools to tell them apart)"
                raise ToolConfigError(
                    f"two tools are named {tool.name!r}: {_source(other)} and {_source(tool)}"
                    f"{hint if isinstance(tool, MCPTool) or isinstance(other, MCPTool) else ''}"
                )
    return list(joined.values())


def _source(tool: Tool) -> str:
    if isinstance(tool, MCPTool):
        return f"the tool of MCP server {tool.server!r}"
    return f"the local tool {tool!r}"
