"""Errors of tools.

`ToolError` and its subclasses are for the model: their message becomes the observation and
the run goes on. The others are for the programmer: a function that cannot be a tool, tools
given the wrong things, an MCP server that cannot be reached or a session used when closed.
"""

from __future__ import annotations

from collections.abc import Sequence

from chainkit._errors import ChainkitError
from chainkit._jsonschema.specs import ArgumentProblem as ArgumentProblem


class ToolError(ChainkitError):
    """Raised by a tool for a failure the model should hear about: the message becomes the
    observation and the run goes on."""


class InvalidArgumentsError(ToolError):
    """The arguments a model sent a StructuredTool were malformed or did not fit its schema;
    `problems` lists each thing wrong with them."""

    def __init__(self, tool_name: str, problems: Sequence[ArgumentProblem]) -> None:
        self.tool_name = tool_name
        self.problems = tuple(problems)
        details = "; ".join(str(problem) for problem in problems)
        super().__init__(f"Invalid arguments for tool {tool_name}: {details}")


class MCPToolError(ToolError):
    """A call to an MCP tool failed: the tool reported an error, or the server broke the
    protocol, went away or did not answer in time. The message is the observation the model
    gets; `server` and `tool` say where it happened."""

    def __init__(self, message: str, *, server: str, tool: str) -> None:
        super().__init__(message)
        self.server = server
        self.tool = tool


class ToolDefinitionError(ChainkitError, TypeError):
    """A function (or a class) cannot be described to a model as a tool: `*args`, a parameter
    type or default with no JSON schema, type hints that cannot be resolved."""


class ToolTypeError(ChainkitError, TypeError):
    """Tools were given something of the wrong type: a tool input that is not text, a
    non-tool given to `join_tools`, an MCPTools setting of the wrong type."""


class ToolAttributeError(ChainkitError, AttributeError):
    """A tool was asked for a method LangChain's tools have, such as `invoke` or `run`; a
    chainkit tool runs with `call(input)` or `await acall(input)`, which the message names."""


class ToolConfigError(ChainkitError, ValueError):
    """A tool, or a set of tools, that could not work as given: a tool with no name or no
    description, two tools of one name, an MCPTools setting out of range."""


class MCPConnectionError(ChainkitError, ConnectionError):
    """An MCP server could not be started, reached or initialised within the timeout. The
    message says which, and quotes the last lines the server wrote to stderr."""


class MCPTimeoutError(ChainkitError, TimeoutError):
    """An MCP server did not answer a request other than a tool call (listing its tools) in
    time; a tool call that times out raises MCPToolError, for the model."""


class MCPSessionError(ChainkitError, RuntimeError):
    """An MCPTools session cannot do what was asked: it is not open, it was opened before, or
    its server lists its tools in more pages than chainkit reads."""


class MCPNotInstalledError(ChainkitError, ModuleNotFoundError):
    """MCPTools needs the optional mcp package: `pip install 'chainkit[mcp]'`."""


class MalformedJSONError(ChainkitError, ValueError):
    """Text that should be JSON is not; the message names where and quotes the text around it.
    Not exported: tools turn it into a ToolError for the model."""
