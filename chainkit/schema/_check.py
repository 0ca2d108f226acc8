"""Shape checks shared by the schema types, and the error they raise.

Every schema type checks its fields when built. The first test is one `if` over exact-type
comparisons (a few nanoseconds a field, since Message and AgentAction are built on every agent
step); only when it fails do the functions here run, to find the bad field and name it with
what was expected and what was given. A subclass of an expected type fails the quick test and
passes these, so it is accepted, only more slowly.
"""

from __future__ import annotations

import reprlib
from collections.abc import Collection, Iterable
from typing import Any

from chainkit.schema.errors import MessageFormatError

NONE = type(None)
OPTIONAL_STR = (str, NONE)
OPTIONAL_DICT = (dict, NONE)

# (field, accepted types, what to call them in an error)
FieldSpec = tuple[str, tuple[type, ...], str]


def shown(value: object) -> str:
    """`value` as an error message shows what was given: a short repr and its type."""
    if value is None:
        return "None"
    return f"{reprlib.repr(value)} ({type(value).__name__})"


def wrong(owner: str, field: str, expected: str, value: object) -> MessageFormatError:
    message = f"{owner}.{field} must be {expected}, got {shown(value)}"
    return MessageFormatError(message, field=field)


def check_fields(owner: object, specs: Iterable[FieldSpec]) -> None:
    """Raises naming the first field of `owner` whose value is not of its accepted types; a
    bool is never taken for an int."""
    for field, types, expected in specs:
        value = getattr(owner, field)
        if not isinstance(value, types) or (type(value) is bool and bool not in types):
            raise wrong(type(owner).__name__, field, expected, value)


def check_items(owner: object, field: str, types: type | tuple[type, ...], expected: str) -> None:
    """Raises naming the first item of the list `owner.<field>` that is not of `types`."""
    for position, item in enumerate(getattr(owner, field)):
        if not isinstance(item, types):
            raise wrong(type(owner).__name__, f"{field}[{position}]", expected, item)


def check_sequence(function: str, argument: str, items: object, kind: type) -> None:
    """Raises unless `items`, an argument of `function`, is a list or tuple of `kind`."""
    if not isinstance(items, list | tuple):
        raise wrong(function, argument, f"a list of {kind.__name__}", items)
    for position, item in enumerate(items):
        if not isinstance(item, kind):
            raise wrong(function, f"{argument}[{position}]", f"a {kind.__name__}", item)


def check_choice(owner: str, field: str, value: object, choices: Collection[str]) -> None:
    try:
        if value in choices:
            return
    except TypeError:  # unhashable: not a choice either
        pass
    raise wrong(owner, field, f"one of {', '.join(map(repr, sorted(choices)))}", value)


def mapping(owner: str, field: str | None, value: object) -> dict[str, Any]:
    """`value` when it is a dict, as the wire shape needs; MessageFormatError otherwise. A field
    of None means `value` is the whole input of `<owner>.from_dict`."""
    if isinstance(value, dict):
        return value
    if field is None:
        raise MessageFormatError(f"{owner}.from_dict needs a dict, got {shown(value)}")
    raise wrong(owner, field, "a dict", value)


def split_data_url(url: str) -> tuple[str, str] | None:
    """`data:<mime>;base64,<data>` -> (mime, data); None for any other URL."""
    if not url.startswith("data:"):
        return None
    header, sep, payload = url[5:].partition(",")
    if not sep or not header.endswith(";base64"):
        return None
    return header[: -len(";base64")], payload
