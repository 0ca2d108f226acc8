"""JSON data a run state may hold: text read without surprises (no NaN, no infinity, no
nesting that exhausts the stack, UTF-8 bytes only), values checked before they are written, and the
one canonical text of a value that a state's tag is computed over."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from chainkit._text import described, shorten
from chainkit.checkpoints.errors import StateFormatError

MAX_DEPTH = 100
"""How deep objects and arrays may nest: far more than any state needs, and far below the
depth at which Python's JSON reader and writer exhaust the stack."""

_MAX_INT_BITS = 13_000
"""About 3,900 digits: Python writes no int of more than 4,300 digits as text."""

_Path: TypeAlias = "tuple[_Path, object] | None"
"""Where a value is: (the path of its container, its key or index), None for the whole."""


def parse(text: object) -> object:
    """The JSON value in `text` (a str, or bytes in UTF-8); raises StateFormatError naming
    what is wrong, never the reader's own errors. What it holds is for `check` to judge."""
    if isinstance(text, bytes | bytearray | memoryview):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise StateFormatError(f"run state is not UTF-8 text: {error}") from None
    if not isinstance(text, str):
        raise StateFormatError(f"run state JSON must be a str or bytes, got {described(text)}")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except StateFormatError:
        raise
    except RecursionError:
        raise StateFormatError(
            f"run state is nested more than {MAX_DEPTH} levels deep (the JSON reader ran out "
            "of stack)"
        ) from None
    except ValueError as error:  # a syntax error, or an int too long to read
        raise StateFormatError(f"run state is not JSON: {shorten(str(error), 200)}") from None
    return value


def check(value: object) -> None:
    """Raises StateFormatError naming the first part of `value` that is no JSON data chainkit
    writes and reads back."""
    problem = problem_of(value)
    if problem is not None:
        raise StateFormatError(f"run state is malformed: {problem}")


def problem_of(value: object) -> str | None:
    """What makes `value` no JSON data (objects with str keys, arrays, str, finite numbers,
    bool, null) nested at most MAX_DEPTH deep, or None. Walked without recursion, so a value
    nested 100,000 deep is answered, not a RecursionError."""
    problem = _scalar_problem(value, None)
    if problem is not None:
        return problem
    stack: list[tuple[object, int, _Path]] = [(value, 0, None)]
    while stack:
        container, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            return f"{_shown(path)} is nested more than {MAX_DEPTH} levels deep"
        if isinstance(container, dict):
            members: Iterable[tuple[object, object]] = container.items()
            for key in container:
                if type(key) is not str and not isinstance(key, str):
                    return f"{_shown(path)} has the key {described(key)}: keys must be text"
        elif isinstance(container, list | tuple):
            members = enumerate(container)
        else:
            continue
        for key, member in members:
            kind = type(member)
            if kind is str or kind is bool or member is None:
                continue
            if kind is dict or kind is list or isinstance(member, dict | list | tuple):
                stack.append((member, depth + 1, (path, key)))
                continue
            problem = _scalar_problem(member, (path, key))
            if problem is not None:
                return problem
    return None


def _scalar_problem(value: object, path: _Path) -> str | None:
    """What makes `value`, when it is no object or array, no JSON a state can hold."""
    if value is None or isinstance(value, str | bool | dict | list | tuple):
        return None
    if isinstance(value, int):
        if value.bit_length() > _MAX_INT_BITS:
            return f"{_shown(path)} is an int of more than 3,900 digits"
        return None
    if isinstance(value, float):
        return (
            None if math.isfinite(value) else f"{_shown(path)} is {value!r}, which JSON cannot hold"
        )
    return f"{_shown(path)} is {described(value)}, which is not JSON"


def canonical(value: Mapping[str, Any]) -> bytes:
    """`value`'s one text (keys sorted, no spaces, UTF-8, a lone surrogate as its code
    point): what a tag is computed over. The value has passed `check`."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


def _no_constant(name: str) -> object:
    raise StateFormatError(f"run state is malformed: {name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise StateFormatError(f"run state is malformed: {shorten(text, 40)} is out of range")
    return number


def _shown(path: _Path) -> str:
    """A path as `steps[0].reply.content`, each key shortened."""
    parts: list[str] = []
    while path is not None:
        path, key = path
        parts.append(f"[{key}]" if isinstance(key, int) else f".{shorten(str(key), 40)}")
    return "the state" if not parts else "".join(reversed(parts)).lstrip(".")
