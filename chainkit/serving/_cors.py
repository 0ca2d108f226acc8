"""CORS: off unless `cors_origins` names the origins a browser may call from; then Starlette's
CORSMiddleware answers their preflights (which carry no token) and marks the answers of the
requests that follow, which still need the token."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.middleware import Middleware

    from chainkit.serving.settings import ServerSettings


def cors_middleware(settings: ServerSettings) -> list[Middleware]:
    """The middleware CORS needs: none without `cors_origins`."""
    if not settings.cors_origins:
        return []
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware

    return [
        Middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
            expose_headers=["X-Run-Id", "Retry-After"],
        )
    ]
