"""How a tool is described to a model that calls tools natively."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainkit.schema._check import check_fields


@dataclass(slots=True)
class ToolInfo:
    """A tool's name, description and JSON schema of its arguments; `strict` asks the server
    to hold the arguments to the schema exactly (OpenAI's strict mode: only for a schema that
    fits it)."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool = False

    def __post_init__(self) -> None:
        check_fields(
            self,
            (
                ("name", (str,), "a str"),
                ("description", (str,), "a str"),
                ("parameters", (dict,), "a dict (the arguments' JSON schema)"),
                ("strict", (bool,), "a bool"),
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI `tools` entry for this tool."""
        function: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        if self.strict:
            function["strict"] = True
        return {"type": "function", "function": function}
