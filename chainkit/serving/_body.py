"""A request's JSON body read within the size limit and checked field by field: what was
wrong (not sent as JSON, not JSON, not an object, a field unknown, missing or of the wrong
type) is named.

A body must say it is JSON (`Content-Type: application/json`): a page of another site can
send a form whose text is JSON (`enctype="text/plain"`) without asking the server first, but
a request of that type only after a CORS preflight, which the server refuses unless
`cors_origins` lets the site in."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from chainkit.serving._problems import Problem

if TYPE_CHECKING:
    from starlette.requests import Request


async def json_object(request: Request, limit: int) -> dict[str, Any]:
    """The body as a JSON object; 415 unless it is sent as JSON, 413 once it passes `limit`
    bytes (before reading it all), 400 when it is not JSON or not an object."""
    _check_sent_as_json(request)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    raw = await _body(request, limit)
    try:
        value = json.loads(raw, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        raise Problem(400, "invalid_json", "the body's JSON is nested too deeply") from None
    except ValueError as error:
        raise Problem(400, "invalid_json", f"the body is not JSON: {error}") from None
    if _SURROGATE_ESCAPE.search(raw):
        _check_text(value)
    if not isinstance(value, dict):
        raise Problem(400, "invalid_body", f"the body must be a JSON object, got {_kind(value)}")
    return value


async def _body(request: Request, limit: int) -> bytes:
    from starlette.requests import ClientDisconnect

    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
    except ClientDisconnect:
        # The client closed before its body was whole (Content-Length promised more).
        raise Problem(
            400, "body_incomplete", "the connection closed before the body ended"
        ) from None
    return b"".join(chunks)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A `\\uD800`-`\\uDFFF` escape: only a pair of them is text (one alone cannot be encoded)."""


def _not_json(constant: str) -> float:
    raise ValueError(f"{constant} is not a JSON number")


def _finite(number: str) -> float:
    value = float(number)
    if not math.isfinite(value):
        raise ValueError(f"{number[:20]} is out of range for a number")
    return value


def _check_text(value: Any) -> None:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise Problem(
            400, "invalid_json", "the body has a lone surrogate escape (\\ud800-\\udfff)"
        ) from None


def _check_sent_as_json(request: Request) -> None:
    given = request.headers.get("content-type")
    if given is None or given.partition(";")[0].strip().lower() != "application/json":
        said = "none" if given is None else repr(given[:60])
        raise Problem(
            415,
            "unsupported_media_type",
            f"the body must be sent as Content-Type: application/json, got {said}",
        )


def _too_large(limit: int) -> Problem:
    return Problem(413, "body_too_large", f"the body is over the limit of {limit} bytes")


def checked_fields(
    body: Mapping[str, Any],
    required: Mapping[str, type | tuple[type, ...]],
    optional: Mapping[str, type | tuple[type, ...]],
) -> None:
    """422 naming the first unknown field, missing field, or field of the wrong JSON type."""
    unknown = [name for name in body if name not in required and name not in optional]
    if unknown:
        known = ", ".join(sorted({*required, *optional}))
        raise Problem(422, "unknown_field", f"unknown field {unknown[0]!r}; known: {known}")
    for name in required:
        if name not in body:
            raise Problem(422, "missing_field", f"the field {name!r} is required")
    for name, value in body.items():
        expected = required.get(name) or optional[name]
        if isinstance(value, bool) and bool not in _types(expected):
            raise Problem(422, "wrong_type", f"{name} must be {_names(expected)}, got a boolean")
        if not isinstance(value, expected):
            raise Problem(
                422, "wrong_type", f"{name} must be {_names(expected)}, got {_kind(value)}"
            )


def _types(expected: type | tuple[type, ...]) -> tuple[type, ...]:
    return expected if isinstance(expected, tuple) else (expected,)


_JSON_NAMES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _names(expected: type | tuple[type, ...]) -> str:
    return " or ".join(_JSON_NAMES.get(kind, kind.__name__) for kind in _types(expected))


def _kind(value: object) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)
