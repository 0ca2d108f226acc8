"""A request's JSON body read within the size limit and checked field by field: what was
wrong (not sent as JSON, not JSON, not an object, a field unknown, missing or of the wrong
type) is named.

A body must say it is JSON (`Content-Type: application/json`): a page of another site can
send a form whose text is JSON (`enctype="text/plain"`) without asking the server first, but
a request of that type only after a CORS preflight, which the server refuses unless
`cors_origins` lets the site in."""

from __future__ import annotations

import json
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
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    try:
        value = json.loads(b"".join(chunks))
    except (ValueError, RecursionError) as error:
        raise Problem(400, "invalid_json", f"the body is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise Problem(400, "invalid_body", f"the body must be a JSON object, got {_kind(value)}")
    return value


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
