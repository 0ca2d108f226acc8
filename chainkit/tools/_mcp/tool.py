"""MCPTool: one tool an MCP server lists, called like any chainkit tool.

Its parameters are the server's input JSON schema. A native tool call's arguments must be a JSON
object; text a MRKL model writes as its Action Input may also be plain text when the tool takes a
single string (as for `@tools.tool`), or the bare value when it takes a single argument of
another type. Argument types are left to the server to check: it owns the schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from chainkit._text import quoted
from chainkit.tools._arguments import blank_input_arguments, decode_json
from chainkit.tools._schema_text import fields_text, properties, required, takes_one_string
from chainkit.tools.base import Tool, ToolExample
from chainkit.tools.errors import MalformedJSONError
from chainkit.tools.errors import MCPToolError as MCPToolError

_EXCERPT = 200


class ToolCaller(Protocol):
    """Sends an MCPTool's calls to its server: the session of the MCPTools that listed it."""

    def _call_tool(self, tool: MCPTool, arguments: dict[str, Any]) -> str: ...

    async def _acall_tool(self, tool: MCPTool, arguments: dict[str, Any]) -> str: ...


class MCPTool(Tool):
    """A tool of the MCP server named `server`, which knows it as `remote_name`.

    `name` is `remote_name` with the MCPTools' prefix, if it has one. Calls go through the
    MCPTools session that listed the tool, so they work while it is open. `requires_approval`
    is as the MCPTools' `requires_approval=` marks this tool (see `Tool.requires_approval`).

    Its `examples` are the argument objects the server's schema lists under JSON Schema's
    `examples` keyword that hold every required field; the others are left out rather than
    refused, since the server, not the agent's author, wrote them.
    """

    def __init__(
        self,
        caller: ToolCaller,
        *,
        server: str,
        remote_name: str,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        requires_approval: bool | Callable[[Any], bool] = False,
    ) -> None:
        self._caller = caller
        self.requires_approval = requires_approval
        self.server = server
        self.remote_name = remote_name
        self.name = name
        self.description = description
        self._schema = dict(parameters)
        self._properties = properties(self._schema)
        self._required = required(self._schema)
        only = next(iter(self._properties)) if len(self._properties) == 1 else None
        self._single_field = only
        self._text_field = only if takes_one_string(self._schema) else None
        self.examples = tuple(self._fitting_examples())

    def __repr__(self) -> str:
        return f"MCPTool(name={self.name!r}, server={self.server!r})"

    @property
    def parameters(self) -> dict[str, Any]:
        """The input JSON schema the server gave for this tool."""
        return self._schema

    def input_from_arguments(self, arguments: str) -> str:
        """A native tool call's arguments, checked to be a JSON object (blank: no arguments)
        holding every required field; MCPToolError naming the problem otherwise."""
        try:
            value = decode_json(arguments) if arguments.strip() else {}
        except MalformedJSONError as error:
            raise self._invalid(str(error)) from None
        if isinstance(value, str):
            value = _decoded_object(value)  # an object sent double-encoded
            arguments = json.dumps(value, ensure_ascii=False)
        if not isinstance(value, dict):
            raise self._invalid(f"got {quoted(arguments, _EXCERPT)}")
        self._check_required(value)
        return arguments

    def call(self, input: str) -> str:
        return self._caller._call_tool(self, self._arguments(input))

    async def acall(self, input: str) -> str:
        return await self._caller._acall_tool(self, self._arguments(input))

    def _arguments(self, input: str) -> dict[str, Any]:
        """The arguments object `input` stands for, with every required field present."""
        if not input.strip():
            arguments: dict[str, Any] = blank_input_arguments(self._schema, input)
        else:
            arguments = self._parse(input)
        self._check_required(arguments)
        return arguments

    def _parse(self, input: str) -> dict[str, Any]:
        try:
            value = decode_json(input)
        except MalformedJSONError as error:
            if self._text_field is not None:
                return {self._text_field: input}
            if not self._properties:
                return {}  # a tool without parameters ignores the text a MRKL model wrote
            raise self._invalid(str(error)) from None
        if isinstance(value, dict):
            return value
        if self._single_field is not None:
            if self._text_field is not None and not isinstance(value, str):
                value = input  # text that merely parses as JSON ("42") is the text
            return {self._single_field: value}
        if not self._properties:
            return {}
        raise self._invalid(f"got {quoted(input, _EXCERPT)}")

    def _fitting_examples(self) -> Iterator[ToolExample]:
        listed = self._schema.get("examples")
        for arguments in listed if isinstance(listed, list) else ():
            if isinstance(arguments, dict) and all(name in arguments for name in self._required):
                yield ToolExample(arguments)

    def _check_required(self, arguments: Mapping[str, Any]) -> None:
        missing = [name for name in self._required if name not in arguments]
        if missing:
            raise self._invalid(f"missing required field {', '.join(missing)}")

    def _invalid(self, problem: str) -> MCPToolError:
        return MCPToolError(
            f"Invalid arguments for tool {self.name}: {problem}; expected {self._expected()}",
            server=self.server,
            tool=self.name,
        )

    def _expected(self) -> str:
        if not self._properties:
            return "no arguments"
        return f"a JSON object with the fields {fields_text(self._schema)}"


def _decoded_object(text: str) -> object:
    """The object a JSON string holds, when it holds one; else the string."""
    try:
        value = decode_json(text)
    except MalformedJSONError:
        return text
    return value if isinstance(value, dict) else text
