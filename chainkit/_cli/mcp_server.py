"""chainkit tools served as an MCP server, over stdio or streamable HTTP.

Each tool is offered with its `parameters` JSON schema, so `@tools.tool` functions keep theirs,
and is called the way a native tool call calls it. A ToolError becomes an `isError` result
carrying its message; any other exception one naming it, and a traceback on stderr.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp import MCPError
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from mcp.types import Tool as ToolInfo

from chainkit import __version__
from chainkit._redact import redact
from chainkit.tools.base import Tool, ToolError
from chainkit.tools.toolset import Toolset, observation

logger = logging.getLogger("chainkit.mcp")


def build_server(tools: Toolset, name: str) -> Server[Any]:
    """A low-level MCP server offering `tools`: it takes their JSON schemas as they are."""
    listing = ListToolsResult(
        tools=[
            ToolInfo(name=tool.name, description=tool.description, input_schema=tool.parameters)
            for tool in tools
        ]
    )

    def failure(message: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)

    async def list_tools(
        context: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return listing

    async def call_tool(
        context: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        tool = tools.find(params.name)
        if tool is None:  # a protocol error, as the MCP spec names it, not a tool's failure
            raise MCPError(
                INVALID_PARAMS,
                f"Unknown tool {params.name!r}; the tools are {', '.join(tools.names)}",
            )
        try:
            arguments = json.dumps(params.arguments or {}, ensure_ascii=False)
            output = await tool.acall_arguments(arguments)
        except ToolError as error:
            return failure(str(error))
        except Exception as error:
            logger.exception("tool %s raised", tool.name)
            return failure(redact(f"{tool.name} failed: {type(error).__name__}: {error}"))
        text = observation(output)
        return CallToolResult(content=[TextContent(type="text", text=text)])

    return Server(
        name,
        version=__version__,
        get_tool_input_schema=lambda tool_name: _parameters(tools.find(tool_name)),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _parameters(tool: Tool | None) -> dict[str, Any] | None:
    return None if tool is None else tool.parameters


async def serve(
    tools: Toolset,
    *,
    name: str,
    host: str,
    path: str,
    http_port: int | None = None,
    listening: Callable[[str], None],
) -> None:
    """Serves `tools` over stdio until stdin closes, or with `http_port` over streamable HTTP
    at http://host:port/path until stopped, calling `listening` with that URL once a client
    may connect."""
    server = build_server(tools, name)
    if http_port is None:
        async with stdio_server() as (read_stream, write_stream):
            # stdio_server points stdout's descriptor at stderr while it serves, but text a
            # tool prints waits in sys.stdout's buffer and would reach the protocol's stream
            # once the descriptor is restored, at exit: printed text goes to stderr instead.
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    await server.run(
                        read_stream, write_stream, server.create_initialization_options()
                    )
            finally:
                sys.stdout.flush()  # what was written to it still meets the diverted descriptor
        return
    # Bound and listening before the address is announced, so a client may connect at once.
    listener = socket.create_server((host, http_port))
    port = listener.getsockname()[1]
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    listening(f"http://{host}:{port}{path}")
    await http.serve(sockets=[listener])
