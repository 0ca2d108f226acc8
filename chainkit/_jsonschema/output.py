"""The shape of a typed result a model is asked for: its JSON schema, and the reading of a
reply's JSON back into the type.

A root that is no object (a list, an enum, a number) is wrapped as `{"value": ...}`: OpenAI's
`response_format` and every tool's parameters must be objects, and one shape for every
strategy keeps their replies alike.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from chainkit._jsonschema.dict_schema import DictSchemaSpec
from chainkit._jsonschema.lenient import JSONTextError, find_object
from chainkit._jsonschema.specs import INVALID, ArgumentProblem, Definitions, Spec, compile_type

WRAPPER_KEY: Final = "value"
SCHEMA_MARK: Final = "matches this JSON Schema"
"""The words that lead to the schema in the instructions (the offline model looks for them)."""
INSTRUCTIONS: Final = (
    f"Answer with one JSON object that {SCHEMA_MARK}, and nothing else:\n```json\n{{schema}}\n```"
)
"""What a model is told when the request itself cannot carry the schema (the prompted and
JSON-mode strategies, an output parser's instructions); the schema in a ```json fence."""
_NAME_CHARACTERS: Final = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME: Final = 64
_STRICT_KEYWORDS: Final = frozenset(
    (
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "description",
        "title",
        "$defs",
        "$ref",
        "format",
    )
)
_STRICT_FORMATS: Final = frozenset(
    ("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid")
)
"""The string formats OpenAI's strict mode takes (pydantic writes the first three and uuid for
datetime, time, date and UUID fields)."""


@dataclass(frozen=True, slots=True)
class Invalid:
    """A reply that did not give a value of the type: each thing wrong with it."""

    problems: tuple[ArgumentProblem, ...]

    def __str__(self) -> str:
        return "; ".join(str(problem) for problem in self.problems)


class OutputShape:
    """What a model must answer with: `schema` (always an object), `name` (for a tool or a
    response format), whether the schema fits OpenAI's `strict` mode, and `read`.

    UnsupportedTypeError, naming it, for a type with no JSON schema."""

    def __init__(self, output_type: object) -> None:
        self.output_type = output_type
        self.spec: Spec = (
            DictSchemaSpec(output_type)
            if isinstance(output_type, Mapping)
            else compile_type(output_type)
        )
        inner = self.spec.schema()
        self.wrapped = inner.get("type") != "object" or "properties" not in inner
        self.name = _name_of(output_type, inner)
        self.schema: dict[str, Any] = _wrapped(inner) if self.wrapped else inner
        self.strict = _fits_strict(self.schema)
        self.item_type: object = None
        """T for an output type `list[T]`: what each of its items is read into."""
        if typing.get_origin(output_type) is list and typing.get_args(output_type):
            self.item_type = typing.get_args(output_type)[0]

    def unwrap(self, data: object) -> object:
        """The value a reply's object stands for: its `value` member for a wrapped type."""
        if self.wrapped and isinstance(data, dict) and list(data) == [WRAPPER_KEY]:
            return data[WRAPPER_KEY]
        return data

    def read(self, data: object) -> object:
        """`data` (a reply's decoded JSON) as a value of the type, or Invalid."""
        problems: list[ArgumentProblem] = []
        inner = self.unwrap(data)
        # Problems are named as the model wrote the value: inside its "value" member.
        path = WRAPPER_KEY if inner is not data else ""
        value = self.spec.coerce(inner, path, problems)
        if value is INVALID:
            return Invalid(tuple(problems))
        return value

    def read_text(self, text: str) -> object:
        """The first JSON object in a reply's text, read as a value of the type, or Invalid."""
        try:
            data = find_object(text)
        except JSONTextError as error:
            return Invalid((ArgumentProblem("", str(error)),))
        return self.read(data)


def instructions_for(shape: OutputShape, template: str = INSTRUCTIONS) -> str:
    """`template` (of `{schema}`) with the shape's schema written in."""
    return template.format(schema=json.dumps(shape.schema, ensure_ascii=False))


def _wrapped(inner: dict[str, Any]) -> dict[str, Any]:
    """`inner` as the `value` member of an object; its definitions at the object's root, where
    its `$ref`s point."""
    definitions = Definitions()
    value = definitions.take(dict(inner))
    return definitions.into(
        {
            "type": "object",
            "properties": {WRAPPER_KEY: value},
            "required": [WRAPPER_KEY],
            "additionalProperties": False,
        }
    )


def _name_of(output_type: object, schema: Mapping[str, Any]) -> str:
    """A name for the shape as OpenAI takes it (letters, digits, _ and -; 64 at most)."""
    given = schema.get("title") if isinstance(output_type, Mapping) else None
    raw = str(given or getattr(output_type, "__name__", "") or "result")
    return _NAME_CHARACTERS.sub("_", raw)[:_MAX_NAME] or "result"


def _fits_strict(schema: object) -> bool:
    """Whether OpenAI's strict mode takes `schema`: every object closed, with every property
    required, no map objects, no empty (any-value) schema, and only the keywords it knows."""
    if not isinstance(schema, Mapping):
        return False
    if not schema or not _STRICT_KEYWORDS.issuperset(schema):
        return False
    if "format" in schema and schema["format"] not in _STRICT_FORMATS:
        return False
    if schema.get("type") == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
    children = [
        schema.get("items"),
        *(schema.get("anyOf") or ()),
        *(schema.get("properties") or {}).values(),
        *(schema.get("$defs") or {}).values(),
    ]
    return all(_fits_strict(child) for child in children if child is not None)
