"""A partial value of a typed result (JSON data cut off anywhere) as the type's own values.

`PartialBuilder(output_type).build(data)` builds what has arrived into the type without
validating it: a dataclass instance whose fields that have not arrived (or cannot be read
yet) are None, a pydantic model made with `model_construct` (such fields left unset:
`model_fields_set` names the ones that came), a TypedDict with the keys that came, lists and
maps of such values. A scalar that does not read as its type yet (a string cut short for an
enum) is None. Nothing here raises on what a model sends; an output type given as a JSON
Schema dict keeps its JSON data. What the builder learns of each type (its fields, a
scalar's spec) is kept, so a partial value costs little more than its size.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from chainkit._jsonschema.specs import (
    INVALID,
    UnsupportedTypeError,
    _is_pydantic_model,
    compile_type,
    resolved_hints,
)

Reader = Callable[[object], object]
"""Builds one partial value (never None: None stays None) of one type."""


class PartialBuilder:
    """Builds partial values of one output type."""

    def __init__(self, output_type: object) -> None:
        self.output_type = output_type
        # By the annotation's id: annotations need not be hashable. Each entry keeps its
        # annotation alive, so the id is never reused for another.
        self._readers: dict[int, tuple[object, Reader]] = {}

    def build(self, data: object) -> object:
        """`data` (a partial value of the output type, as JSON data) built into the type."""
        if isinstance(self.output_type, Mapping):
            return data
        return self._read(self.output_type, data)

    def _read(self, annotation: object, data: object) -> object:
        if data is None:
            return None
        found = self._readers.get(id(annotation))
        if found is None:
            found = self._readers[id(annotation)] = (annotation, self._reader(annotation))
        return found[1](data)

    def _reader(self, annotation: object) -> Reader:
        bare = _bare(annotation)
        origin, args = typing.get_origin(bare), typing.get_args(bare)
        if origin is typing.Union or origin is types.UnionType:
            members = [member for member in args if member is not type(None)]
            return lambda data: self._read(self._member_for(members, data), data)
        if bare is list or origin is list:
            return self._list_reader(args[0] if args else Any)
        if bare is dict or origin is dict:
            return self._map_reader(args[1] if args else Any)
        if isinstance(bare, type):
            if dataclasses.is_dataclass(bare):
                return self._dataclass_reader(bare)
            if typing.is_typeddict(bare):
                return self._typeddict_reader(resolved_hints(bare))
            if _is_pydantic_model(bare):
                return self._pydantic_reader(bare)
        return _scalar_reader(bare)

    def _list_reader(self, item: object) -> Reader:
        def read(data: object) -> object:
            return [self._read(item, value) for value in data] if isinstance(data, list) else None

        return read

    def _map_reader(self, item: object) -> Reader:
        def read(data: object) -> object:
            if not isinstance(data, dict):
                return None
            return {key: self._read(item, value) for key, value in data.items()}

        return read

    def _dataclass_reader(self, cls: type) -> Reader:
        hints = resolved_hints(cls)
        fields = [(field.name, hints[field.name]) for field in dataclasses.fields(cls)]

        def read(data: object) -> object:
            if not isinstance(data, dict):
                return None
            # No __init__: the fields that have not arrived would be refused, and
            # __post_init__ would check a value that is not whole yet.
            instance: object = object.__new__(cls)
            for name, hint in fields:
                object.__setattr__(instance, name, self._read(hint, data.get(name)))
            return instance

        return read

    def _typeddict_reader(self, hints: dict[str, Any]) -> Reader:
        def read(data: object) -> object:
            if not isinstance(data, dict):
                return None
            return {key: self._read(hints[key], v) for key, v in data.items() if key in hints}

        return read

    def _pydantic_reader(self, model: Any) -> Reader:
        fields = {name: field.annotation for name, field in model.model_fields.items()}

        def read(data: object) -> object:
            if not isinstance(data, dict):
                return None
            known = [(name, item) for name, item in data.items() if name in fields]
            values = {name: self._read(fields[name], item) for name, item in known}
            return model.model_construct(**values)

        return read

    def _member_for(self, members: list[object], data: object) -> object:
        """The union member `data` is a partial value of: for an object, the first whose
        fields hold all its keys; else the first that reads it."""
        if isinstance(data, dict):
            for member in members:
                fields = _fields_of(member)
                if fields is not None and fields.issuperset(data):
                    return member
        for member in members:
            if self._read(member, data) is not None:
                return member
        return members[0] if members else Any


def _bare(annotation: object) -> object:
    """The type inside Annotated[...], Required[...] and NotRequired[...]."""
    while typing.get_origin(annotation) in (
        typing.Annotated,
        typing.Required,
        typing.NotRequired,
    ):
        annotation = typing.get_args(annotation)[0]
    return annotation


def _fields_of(annotation: object) -> set[str] | None:
    """The field names of an object type, or None for any other type."""
    annotation = _bare(annotation)
    if isinstance(annotation, type):
        if dataclasses.is_dataclass(annotation):
            return {field.name for field in dataclasses.fields(annotation)}
        if typing.is_typeddict(annotation):
            return set(resolved_hints(annotation))
        if _is_pydantic_model(annotation):
            fields: dict[str, Any] = getattr(annotation, "model_fields", {})
            return set(fields)
    return None


def _scalar_reader(annotation: object) -> Reader:
    """Reads `data` as a value of `annotation` when it reads as one, else None."""
    try:
        spec = compile_type(annotation)
    except UnsupportedTypeError:
        return lambda data: data

    def read(data: object) -> object:
        value = spec.coerce(data, "", [])
        return None if value is INVALID else value

    return read
