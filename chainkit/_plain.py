"""Any value as plain JSON data: what `Event.to_dict` (and so a trace file line),
OpenTelemetry's captured content and a served chain's outputs are made of.

Plain data is dicts with str keys, lists, str, int, finite float, bool and None, so that
`json.dumps` takes it with no `default=` and with `allow_nan=False`. Key-shaped text is
masked in every string.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import os
from collections.abc import Mapping
from typing import Any

from chainkit._redact import redact
from chainkit._text import shorten

_DEEPEST = 64
"""Nesting kept; deeper values are written as their (shortened) repr."""
_REPR_CHARS = 10_000
_CYCLE = "<cycle>"
"""What a container written inside itself becomes."""
_APART = "\x00"
"""Joins the texts of a value to look for keys in all at once: no key spans it."""


def plain(value: Any) -> Any:
    """`value` as plain JSON data:

    - a message (anything with `to_dict()`) as what its `to_dict()` gives; other dataclasses
      (actions, steps, yours) as a dict of their fields; an exception as `{"type", "message"}`;
    - mappings as dicts (keys that are no str as their str), lists and tuples as lists, sets
      as lists in a stable order; dates and times in ISO 8601, enums as their value, paths as
      str, a non-finite float as its str ("nan", "inf");
    - a tool (anything with a str `name`, as a tool retriever's documents) as its name;
      anything else as its repr, bytes included, as is a value whose conversion raises.
    """
    walk = _Walk()
    converted = walk.value(value, 0)
    # One look for keys in all the texts: an event holds many, and almost never a key.
    texts = _APART.join(walk.texts)
    return converted if redact(texts) == texts else _redacted(converted)


class _Walk:
    """One conversion: the containers being converted (to find cycles) and every text met."""

    __slots__ = ("path", "texts")

    def __init__(self) -> None:
        self.path: set[int] = set()
        self.texts: list[str] = []

    def value(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            self.texts.append(value)
            return value
        if value is None or kind is bool or kind is int:
            return value
        if kind is float:
            return value if math.isfinite(value) else str(value)
        if depth > _DEEPEST:
            return self.text(_repr(value))
        if id(value) in self.path:
            return _CYCLE
        self.path.add(id(value))
        try:
            # The types events hold most, by type before any isinstance: an ABC check is slow.
            if kind is dict:
                return self.mapping(value, depth + 1)
            if kind is list:
                return [self.value(item, depth + 1) for item in value]
            return self.container(value, depth + 1)
        except Exception:  # a to_dict, a field or a str that raises: the value is still written
            return self.text(_repr(value))
        finally:
            self.path.discard(id(value))

    def mapping(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        converted = {}
        for key, item in value.items():
            name = key if type(key) is str else str(key)
            self.texts.append(name)
            converted[name] = self.value(item, depth)
        return converted

    def container(self, value: Any, depth: int) -> Any:
        """A value that may hold others, or one of no JSON type."""
        if isinstance(value, Mapping):
            return self.mapping(value, depth)
        if isinstance(value, list | tuple):
            return [self.value(item, depth) for item in value]
        if isinstance(value, set | frozenset):
            return sorted((self.value(item, depth) for item in value), key=repr)
        if isinstance(value, BaseException):
            return {"type": type(value).__name__, "message": self.text(str(value))}
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            return self.value(to_dict(), depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = dataclasses.fields(value)
            return {f.name: self.value(getattr(value, f.name), depth) for f in fields}
        if isinstance(value, enum.Enum):
            return self.value(value.value, depth)
        return self.scalar(value)

    def scalar(self, value: Any) -> Any:
        """A value of no container type, by what it stands for."""
        if isinstance(value, int):  # a subclass: bool and int are taken before
            return int(value)
        if isinstance(value, float):
            return float(value) if math.isfinite(value) else str(value)
        if isinstance(value, str | os.PathLike):
            return self.text(str(os.fspath(value)))
        if isinstance(value, datetime.date | datetime.time):
            return value.isoformat()
        name = getattr(value, "name", None)
        if isinstance(name, str):  # a tool a retriever selected
            return self.text(name)
        return self.text(_repr(value))

    def text(self, text: str) -> str:
        self.texts.append(text)
        return text


def _repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception as error:  # a broken __repr__ must not cost the event
        text = f"<{type(value).__name__}: repr failed with {type(error).__name__}>"
    return shorten(text, _REPR_CHARS)


def _redacted(value: Any) -> Any:
    """Plain data with keys masked in every text, keys of dicts included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(key): _redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value
