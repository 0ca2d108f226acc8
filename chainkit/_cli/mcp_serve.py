"""`chainkit mcp-serve module:factory [--http PORT]`: chainkit tools as an MCP server.

The factory (a function, a class, or a value) gives a list of Tools, one Tool, or an agent (its
tools are served). Over stdio by default; `--http PORT` serves streamable HTTP at
http://127.0.0.1:PORT/mcp (port 0 picks a free one) and says where on stderr. The server itself
(chainkit._cli.mcp_server, which imports mcp) is loaded only when the command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterable

from chainkit._cli import exit_status, stderr
from chainkit._cli.arguments import port
from chainkit._errors import FactoryError
from chainkit._factory import load
from chainkit._text import counted
from chainkit.tools.base import Tool
from chainkit.tools.errors import ToolConfigError, ToolTypeError
from chainkit.tools.toolset import Toolset

COMMAND = "mcp-serve"
HOST = "127.0.0.1"
PATH = "/mcp"
_EXAMPLE = "chainkit.tools:builtin_tools"


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `mcp-serve` to the `chainkit` command's subcommands."""
    command = commands.add_parser(
        COMMAND,
        help="serve chainkit tools over MCP (stdio, or streamable HTTP with --http)",
        description=(
            "Serve the tools a factory returns (a list of Tools, a Tool, or an agent) as an MCP "
            "server over stdio, or over streamable HTTP on 127.0.0.1 with --http. The module "
            "is imported from the current directory or the installed packages."
        ),
    )
    command.add_argument(
        "factory", metavar="module:factory", help=f"where the tools come from, e.g. {_EXAMPLE}"
    )
    command.add_argument(
        "--http",
        metavar="PORT",
        type=port,
        help=f"serve streamable HTTP at http://{HOST}:PORT{PATH} instead of stdio (0: any port)",
    )


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Runs `chainkit mcp-serve`; the exit status."""
    try:
        # Stdout is the protocol's over stdio: what the factory's module prints goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            tools = load_tools(args.factory)
        import asyncio

        try:
            from chainkit._cli.mcp_server import serve
        except ModuleNotFoundError as error:
            if (error.name or "").partition(".")[0] != "mcp":
                raise
            stderr.error(COMMAND, "it needs the mcp package: pip install 'chainkit[mcp]'")
            return exit_status.FAILED
        asyncio.run(
            serve(
                tools,
                name=args.factory,
                host=HOST,
                path=PATH,
                http_port=args.http,
                listening=lambda url: stderr.tell(
                    COMMAND, f"{counted(len(tools), 'tool')} at {url}"
                ),
            )
        )
    except FactoryError as refused:
        stderr.error(COMMAND, str(refused))
        return exit_status.USAGE
    except KeyboardInterrupt:
        return exit_status.INTERRUPTED
    except Exception as failed:
        stderr.failure(COMMAND, failed)
        return exit_status.FAILED
    return exit_status.SUCCESS


def load_tools(spec: str) -> Toolset:
    """The tools `module:factory` gives; FactoryError naming what is wrong otherwise."""
    return _checked(spec, _tools_of(load(spec, _EXAMPLE, (Tool,))))


def _tools_of(made: object) -> object:
    """What `made` offers as its tools: itself as a Tool, an agent's tools, or itself."""
    if isinstance(made, Tool):
        return [made]
    agent = getattr(made, "agent", made)  # an Executor's agent
    tools = getattr(agent, "tools", None)
    return made if tools is None else tools


def _checked(spec: str, tools: object) -> Toolset:
    if isinstance(tools, str | bytes | dict) or not isinstance(tools, Iterable):
        raise FactoryError(
            f"{spec} gave {type(tools).__name__}; expected a list of Tools, a Tool or an agent"
        )
    try:
        toolset = Toolset(tools)
    except (ToolConfigError, ToolTypeError) as error:
        raise FactoryError(f"{spec} gave tools no model could use: {error}") from None
    if not len(toolset):
        raise FactoryError(f"{spec} gave no tools")
    return toolset
