"""Health (the process answers) and readiness (it takes runs: not shutting down)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chainkit.serving._openapi import operation
from chainkit.serving._problems import Problem

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response


async def health(request: Request) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse({"status": "ok"})


async def ready(request: Request) -> Response:
    from starlette.responses import JSONResponse

    if request.app.state.server.closing:
        raise Problem(503, "shutting_down", "the server is shutting down")
    return JSONResponse({"status": "ready"})


_STATUS = {"$ref": "#/components/schemas/Status"}
PATHS = {
    "/health": {"get": operation("Whether the process answers", response=_STATUS)},
    "/ready": {
        "get": operation(
            "Whether the server takes runs (503 once shutting down)", response=_STATUS, errors=[503]
        )
    },
}
