"""Tools an agent can call: subclass `Tool`, or decorate a typed function with `@tool`.

`MCPTools` gives the tools of an MCP server (it needs `pip install 'chainkit[mcp]'`); it is
loaded on first use, so importing chainkit.tools imports neither mcp nor asyncio.
Errors a tool call or an MCP server fails with are exported here; every error of this
package, those that report a mistake in the caller's code or settings included, is in
`chainkit.tools.errors`.
"""

import typing

from chainkit._lazy import lazy_exports as _lazy_exports
from chainkit.schema.embedder import Embedder
from chainkit.tools import errors as errors
from chainkit.tools.base import Tool, ToolExample
from chainkit.tools.builtin.calculator import Calculator
from chainkit.tools.builtin.current_time import CurrentTime
from chainkit.tools.builtin.random_number import RandomNumber
from chainkit.tools.errors import (
    ArgumentProblem,
    InvalidArgumentsError,
    MCPConnectionError,
    MCPTimeoutError,
    MCPToolError,
    ToolError,
)
from chainkit.tools.join import join_tools
from chainkit.tools.retriever import ToolRetriever
from chainkit.tools.structured import StructuredTool, tool
from chainkit.tools.toolset import Toolset

if typing.TYPE_CHECKING:
    from chainkit.tools._mcp.client import MCPTools
    from chainkit.tools._mcp.tool import MCPTool

_LAZY = {
    "MCPTools": "chainkit.tools._mcp.client",
    "MCPTool": "chainkit.tools._mcp.tool",
}


__getattr__, __dir__ = _lazy_exports("chainkit.tools", _LAZY, globals())


def builtin_tools() -> list[Tool]:
    """New instances of the built-in tools: calculator, random number and current time."""
    return [Calculator(), RandomNumber(), CurrentTime()]


__all__ = [
    "ArgumentProblem",
    "Calculator",
    "CurrentTime",
    "Embedder",
    "InvalidArgumentsError",
    "MCPConnectionError",
    "MCPTimeoutError",
    "MCPTool",
    "MCPToolError",
    "MCPTools",
    "RandomNumber",
    "StructuredTool",
    "Tool",
    "ToolError",
    "ToolExample",
    "ToolRetriever",
    "Toolset",
    "builtin_tools",
    "join_tools",
    "tool",
]
