"""A small MCP server built with the mcp package, for the MCP tests.

`python tests/support/mcp_server.py` serves over stdio; `python tests/support/mcp_server.py
--http` serves streamable HTTP on 127.0.0.1 at a free port and prints
`url: http://127.0.0.1:PORT/mcp` on stderr once it accepts connections.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import sys

import uvicorn
from mcp import MCPError
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import INVALID_PARAMS, ImageContent, TextContent

SERVER_NAME = "chainkit-test"
PICTURE = b"\x89PNG\r\n"  # 7 bytes

server = MCPServer(SERVER_NAME)


@server.tool()
def echo(text: str) -> str:
    """Returns the text it is given."""
    return text


@server.tool()
def greet(name: str = "world") -> str:
    """Greets someone, the world unless named."""
    return f"hello {name}"


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails, saying why."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def lookup(key: str) -> str:
    """Answers with a JSON-RPC error instead of a result."""
    raise MCPError(INVALID_PARAMS, f"no record {key}")


@server.tool()
def rpc_error(code: int, message: str) -> str:
    """Answers with the JSON-RPC error `code` and `message` instead of a result."""
    raise MCPError(code, message)


@server.tool()
async def slow(seconds: float) -> str:
    """Answers after `seconds`."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


# Calls waiting at a meeting point, by its name: `meet` answers once `parties` calls are there.
meetings: dict[str, tuple[list[None], asyncio.Event]] = {}


@server.tool()
async def meet(name: str, parties: int) -> str:
    """Waits until `parties` calls of `meet(name)` are running at once, up to 8 s."""
    arrived, everyone = meetings.setdefault(name, ([], asyncio.Event()))
    arrived.append(None)
    if len(arrived) >= parties:
        everyone.set()
    try:
        await asyncio.wait_for(everyone.wait(), 8)
    except TimeoutError:
        return f"only {len(arrived)} of {parties} met"
    return "met"


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.Event().wait()
    return "unreachable"


@server.tool()
def picture() -> list[TextContent | ImageContent]:
    """A caption and a small PNG."""
    data = base64.b64encode(PICTURE).decode()
    return [
        TextContent(type="text", text="a picture"),
        ImageContent(type="image", data=data, mime_type="image/png"),
    ]


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called `name`, and tells the clients their list changed."""

    def added() -> str:
        return f"{name} works"

    server.add_tool(added, name=name, description=f"added at run time as {name}")
    await ctx.notify_tools_changed()  # 2026-07-28 clients: through their subscription
    await ctx.session.send_tool_list_changed()  # earlier clients: on the session
    return f"added {name}"


async def serve_http() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    app = server.streamable_http_app(host="127.0.0.1")
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    port = listener.getsockname()[1]
    print(f"url: http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await http.serve(sockets=[listener])


if __name__ == "__main__":
    if sys.argv[1:] == ["--http"]:
        asyncio.run(serve_http())
    else:
        server.run()
