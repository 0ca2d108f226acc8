"""`TypedParser`: a reply read into any output type `llms.generate_object` takes, by the same
schema writer and validator."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from chainkit._jsonschema.lenient import JSONTextError, find_object
from chainkit._jsonschema.output import WRAPPER_KEY, Invalid, OutputShape, instructions_for
from chainkit._text import described, short_repr, shorten, type_text
from chainkit.parsers.base import Parser, checked_text
from chainkit.parsers.errors import ParseError, ParserTypeError
from chainkit.parsers.json_object import ObjectReader

_FENCE: Final = "```"


class TypedParser(Parser):
    """The reply's JSON read into `output_type`: a dataclass, TypedDict, Enum, Literal,
    `list[...]`, a union, any nesting of them, a JSON Schema dict, or a pydantic model (what
    `llms.generate_object` takes). A type whose JSON is no object (a list, an enum) is asked
    for as `{"value": ...}`, as `generate_object` asks; a bare JSON value in the reply is
    taken too. A reply that does not fit raises `ParseError` listing each problem by its path
    (`items[2].price: expected number, got "x"`).

    Right after a model in a pipeline, the model is asked through `generate_object` (with
    `strategy`, None to let the model choose: a server's JSON schema mode when it has one),
    and a reply that does not fit is sent back `max_retries` times (2, as there). Streamed,
    each partial value is the JSON data so far (dicts and lists), each time it grows.
    """

    def __init__(
        self, output_type: Any, *, strategy: str | None = None, max_retries: int = 2
    ) -> None:
        super().__init__(max_retries=max_retries)
        try:
            self.shape = OutputShape(output_type)
        except TypeError as error:
            raise ParserTypeError(
                f"TypedParser output_type {short_repr(output_type, 200)} has no JSON schema: "
                f"{error}"
            ) from None
        if strategy is not None and not isinstance(strategy, str):
            raise ParserTypeError(
                f"TypedParser strategy must be a strategy's name or None, got {described(strategy)}"
            )
        self.output_type = output_type
        self.strategy = strategy
        self._type = self.shape.name if isinstance(output_type, Mapping) else type_text(output_type)
        self._type = shorten(self._type, 80)

    @property
    def name(self) -> str:
        return f"TypedParser({self._type})"

    def __repr__(self) -> str:
        return self.name

    def parse(self, text: str) -> Any:
        text = checked_text(self, text)
        value = self.shape.read(self._data(text))
        if isinstance(value, Invalid):
            raise ParseError(self.name, self._expected(), text, str(value))
        return value

    def _data(self, text: str) -> object:
        """The reply's JSON: its first object, or a bare JSON value standing for a wrapped
        type's `value`."""
        if self.shape.wrapped:
            bare = _bare_json(text)
            if bare is not None and not isinstance(bare, dict):
                return {WRAPPER_KEY: bare}
        try:
            return find_object(text)
        except JSONTextError as error:
            raise ParseError(
                self.name, f"JSON that fits {self.shape.name}", text, str(error)
            ) from None

    def _expected(self) -> str:
        return f"JSON that fits {self._type}"

    def reader(self) -> ObjectReader:
        return ObjectReader(self.shape.unwrap)

    def instructions(self) -> str:
        return instructions_for(self.shape)


def _bare_json(text: str) -> object:
    """The JSON value the whole reply is (inside ``` fences or not), or None."""
    text = text.strip()
    if text.startswith(_FENCE) and text.endswith(_FENCE) and len(text) > 2 * len(_FENCE):
        text = text[len(_FENCE) : -len(_FENCE)]
        first_line, newline, rest = text.partition("\n")
        text = rest if newline and not first_line.strip().startswith(("[", "{", '"')) else text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
