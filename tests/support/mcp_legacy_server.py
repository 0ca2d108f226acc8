"""A hand-written MCP server over stdio that speaks only the initialize-handshake protocol
versions, as most servers in the wild do: no `server/discover`, no subscriptions. It lists its
tools in two pages, and its `announce` tool adds a tool and sends
`notifications/tools/list_changed` unasked; its `broken` tool answers with a malformed result;
its `chatty` tool writes a line that is not JSON-RPC on stdout before it answers. It also lists
a tool that can only be called as a task, and one that may be.

Misbehaviour on request, through the environment: PAGES_FOREVER=1 makes every page of the
tool list point to another; STDERR_FLOOD=N writes N bytes to stderr before serving;
LIST_ONCE=1 leaves every tools/list after the first listing unanswered; BANNER=1 prints a
startup banner on stdout before serving.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")

tools: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Returns the text it is given.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            # JSON Schema's examples: the second lacks `text`, so MCPTool leaves it out.
            "examples": [{"text": "hello"}, {"other": 1}, "not an object"],
        },
    },
    {
        "name": "broken",
        "description": "Answers with content that is not a list.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "chatty",
        "description": "Prints a debug line on stdout, then answers.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "report",
        "description": "Runs only as a task.",
        "inputSchema": {"type": "object", "properties": {}},
        "execution": {"taskSupport": "required"},
    },
    {
        "name": "summary",
        "description": "Runs as a task or as a plain call.",
        "inputSchema": {"type": "object", "properties": {}},
        "execution": {"taskSupport": "optional"},
    },
    {
        "name": "announce",
        "description": "Adds the tool `late` and announces the change.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any]) -> dict[str, Any]:
    method, params = request["method"], request.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "legacy", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        # Two pages, to show the client follows the cursor.
        if os.environ.get("PAGES_FOREVER"):
            return {"tools": [], "nextCursor": f"{params.get('cursor')}+"}
        if params.get("cursor") == "page-2":
            return {"tools": tools[1:]}
        return {"tools": tools[:1], "nextCursor": "page-2"}
    if method == "tools/call":
        name, arguments = params["name"], params.get("arguments") or {}
        if name == "echo":
            return {"content": [{"type": "text", "text": arguments["text"]}]}
        if name == "chatty":
            sys.stdout.write("debug: chatty was called\n")
            return {"content": [{"type": "text", "text": "chatted"}]}
        if name == "summary":
            return {"content": [{"type": "text", "text": "summed up"}]}
        if name == "broken":
            return {"content": "not a list"}
        if name == "announce":
            if not any(tool["name"] == "late" for tool in tools):
                tools.append(
                    {
                        "name": "late",
                        "description": "Added by announce.",
                        "inputSchema": {"type": "object", "properties": {}},
                    }
                )
            return {"content": [{"type": "text", "text": "announced"}]}
        if name == "late":
            return {"content": [{"type": "text", "text": "late works"}]}
        return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}
    raise LookupError(method)


def main() -> None:
    if os.environ.get("BANNER"):
        print("Weather server v1.0 ready!", flush=True)
    flood = int(os.environ.get("STDERR_FLOOD", "0"))
    for _ in range(flood // 1000):
        sys.stderr.write("x" * 999 + "\n")
    sys.stderr.flush()
    pages_listed = 0
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue  # notifications/initialized and the like
        if message["method"] == "tools/list":
            pages_listed += 1
            if os.environ.get("LIST_ONCE") and pages_listed > 2:
                continue
        try:
            send({"id": message["id"], "result": answer(message)})
        except LookupError as error:
            send({"id": message["id"], "error": {"code": -32601, "message": f"no method {error}"}})
        if message.get("method") == "tools/call" and message["params"]["name"] == "announce":
            send({"method": "notifications/tools/list_changed"})


if __name__ == "__main__":
    main()
