"""A partial value of a typed result (JSON data cut off anywhere) as the type's own values.

`typed_partial(annotation, data)` builds what has arrived into the type without validating
it: a dataclass instance whose fields that have not arrived (or cannot be read yet) are None,
a pydantic model made with `model_construct` (such fields left unset: `model_fields_set`
names the ones that came), a TypedDict with the keys that came, lists and maps of such
values. A scalar that does not read as its type yet (a string cut short for an enum) is None.
Nothing here raises on what a model sends; an output type given as a JSON Schema dict keeps
its JSON data.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

from chainkit._jsonschema.specs import (
    INVALID,
    UnsupportedTypeError,
    _is_pydantic_model,
    compile_type,
    resolved_hints,
)


def typed_partial(annotation: object, data: object) -> object:
    """`data` (a partial value of `annotation`, as JSON data) built into the type."""
    if isinstance(annotation, Mapping) or data is None:
        return data
    annotation = _bare(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typed_partial(_member_for(args, data), data)
    if annotation is list or origin is list:
        if not isinstance(data, list):
            return None
        return [typed_partial(args[0], item) for item in data] if args else data
    if annotation is dict or origin is dict:
        if not isinstance(data, dict):
            return None
        return {key: typed_partial(args[1], item) for key, item in data.items()} if args else data
    if isinstance(annotation, type) and isinstance(data, dict):
        if dataclasses.is_dataclass(annotation):
            return _dataclass(annotation, data)
        if typing.is_typeddict(annotation):
            hints = resolved_hints(annotation)
            return {key: typed_partial(hints[key], v) for key, v in data.items() if key in hints}
        if _is_pydantic_model(annotation):
            return _pydantic(annotation, data)
    return _scalar(annotation, data)


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


def _member_for(members: tuple[object, ...], data: object) -> object:
    """The union member `data` is a partial value of: for an object, the first whose fields
    hold all its keys; else the first that reads it."""
    candidates = [member for member in members if member is not type(None)]
    if isinstance(data, dict):
        for member in candidates:
            fields = _fields_of(member)
            if fields is not None and fields.issuperset(data):
                return member
    for member in candidates:
        if _scalar(member, data) is not None:
            return member
    return candidates[0] if candidates else object


def _dataclass(cls: type, data: dict[str, object]) -> object:
    hints = resolved_hints(cls)
    # No __init__: the fields that have not arrived would be refused, and __post_init__
    # would check a value that is not whole yet.
    instance: object = object.__new__(cls)
    for field in dataclasses.fields(cls):
        value = typed_partial(hints[field.name], data[field.name]) if field.name in data else None
        object.__setattr__(instance, field.name, value)
    return instance


def _pydantic(model: Any, data: dict[str, object]) -> object:
    fields = model.model_fields
    values = {
        name: typed_partial(fields[name].annotation, item)
        for name, item in data.items()
        if name in fields
    }
    return model.model_construct(**values)


def _scalar(annotation: object, data: object) -> object:
    """`data` read as a value of `annotation` when it reads as one, else None."""
    try:
        spec = compile_type(annotation)
    except UnsupportedTypeError:
        return data
    value = spec.coerce(data, "", [])
    return None if value is INVALID else value
