"""`JSONParser`: the JSON object in a reply, read tolerantly, whole or as it streams."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chainkit._jsonschema.lenient import JSONTextError, ObjectStream, find_object
from chainkit.parsers.base import CopyBudget, Parser, checked_text
from chainkit.parsers.errors import ParseError

_INSTRUCTIONS = "Answer with one JSON object, and nothing else."


class JSONParser(Parser):
    """The first JSON object of the reply, as a dict: prose before it, ``` fences around it
    and text after it are passed over, trailing commas allowed (LangChain's
    JsonOutputParser). Streamed, each partial value is the object so far, each time it grows
    (members complete or partly there; a string cut short as far as it goes).

    For a list or a value of your own type, use `TypedParser`."""

    output_type = dict[str, Any]

    def parse(self, text: str) -> dict[str, Any]:
        return read_object(self, checked_text(self, text))

    def reader(self) -> ObjectReader:
        return ObjectReader()

    def instructions(self) -> str:
        return _INSTRUCTIONS


def read_object(parser: Parser, text: str) -> dict[str, Any]:
    """The first JSON object in `text`; ParseError naming `parser` when there is none."""
    try:
        return find_object(text)
    except JSONTextError as error:
        raise ParseError(parser.name, "a JSON object", text, str(error)) from None


class ObjectReader:
    """The object of a streamed reply so far (through `shown`, the value it stands for), handed
    on each time it grows: each character read once, and a large object copied only when the
    text since the last copy pays for it (see `CopyBudget`); the finished object always."""

    def __init__(self, shown: Callable[[dict[str, object]], object] | None = None) -> None:
        self._stream = ObjectStream()
        self._shown = shown
        self._budget = CopyBudget()
        self._last: object = None

    def feed(self, chunk: str) -> list[Any]:
        if not chunk or self._stream.complete:
            return []
        self._stream.feed(chunk)
        self._budget.read(len(chunk))
        complete = self._stream.complete
        if not (complete or self._budget.due(self._stream.copy_cost)):
            return []
        self._budget.spent()
        data = self._stream.partial()
        if data is None or (data == {} and not complete):
            return []
        value = data if self._shown is None else self._shown(data)
        if value == self._last:
            return []
        self._last = value
        return [value]
