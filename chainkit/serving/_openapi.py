"""The app's OpenAPI description (`GET /openapi.json`), written by hand: each route module
describes its own paths in a `PATHS` dict (path → method → operation, made with `operation`),
and `document` gathers them from the app's routes, so a route added with its description is
listed with no edit here (tests/serving/test_openapi.py checks every route is)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

ERROR_STATUSES = {
    400: "the body is not JSON, or not a JSON object",
    401: "no valid bearer token",
    404: "no such route, or no such run",
    405: "the route does not take this method",
    409: "the run id is taken, the run is going on elsewhere, or the session has a run in flight",
    413: "the body is over the size limit",
    415: "the body is not sent as Content-Type: application/json",
    422: "a field unknown, missing, of the wrong type or value, or inputs the chain refuses",
    429: "too many runs in flight for this client, or started this minute (see Retry-After)",
    500: "the run failed: the server log has its run id",
    503: "the server is shutting down",
}
"""Every error status the routes answer, with what it means; each body is an Error."""

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "description": "what went wrong, to branch on"},
                    "message": {"type": "string", "description": "what was wrong, for people"},
                    "run_id": {"type": "string", "description": "the run, once one started"},
                },
            }
        },
    },
    "Status": {
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string"}},
    },
}


def operation(
    summary: str,
    *,
    request: Mapping[str, Any] | None = None,
    response: Mapping[str, Any] | None = None,
    media_type: str = "application/json",
    errors: Iterable[int] = (),
) -> dict[str, Any]:
    """One operation: its summary, its JSON request body's schema, its 200 answer's schema
    (of `media_type`), and the error statuses it may answer besides 401."""
    described: dict[str, Any] = {"summary": summary}
    if request is not None:
        described["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": dict(request)}},
        }
    answers: dict[str, Any] = {
        "200": {"description": "done", "content": {media_type: {"schema": dict(response or {})}}}
    }
    for status in sorted({401, *errors}):
        answers[str(status)] = _error(status)
    described["responses"] = answers
    return described


def _error(status: int) -> dict[str, Any]:
    return {
        "description": ERROR_STATUSES[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def document(routes: Iterable[Any]) -> dict[str, Any]:
    """The description of the app whose routes are `routes`: each route's operations as its
    module's `PATHS` describes them."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        described = _described(route)
        for method in getattr(route, "methods", None) or ():
            if method.lower() in described:
                operation = dict(described[method.lower()])
                # Every route is behind the token: its 401 is listed whether or not its
                # module says so.
                operation["responses"] = {"401": _error(401), **operation.get("responses", {})}
                paths.setdefault(route.path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "chainkit serve", "version": "1"},
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _described(route: Any) -> Mapping[str, Any]:
    """The operations the module of `route`'s endpoint describes for its path."""
    module = sys.modules.get(getattr(getattr(route, "endpoint", None), "__module__", ""))
    paths: Mapping[str, Mapping[str, Any]] = getattr(module, "PATHS", {})
    return paths.get(getattr(route, "path", ""), {})


async def openapi(request: Request) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(document(request.app.routes))


PATHS = {
    "/openapi.json": {
        "get": operation("This description of the server's routes", response={"type": "object"})
    }
}
