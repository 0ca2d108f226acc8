"""`create_app(chain, settings)`: the ASGI application that serves a chain or agent."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from chainkit._errors import ChainkitError
from chainkit.chains import WithHistory
from chainkit.chains.api import check_chain
from chainkit.serving._problems import Problem
from chainkit.serving._server import Server, log
from chainkit.serving.errors import ServeConfigError
from chainkit.serving.settings import ServerSettings

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp

    from chainkit.chains import Chain

Endpoint = Callable[["Request"], Awaitable["ASGIApp"]]


def create_app(chain: Chain | WithHistory, settings: ServerSettings) -> Starlette:
    """An ASGI app (Starlette) serving `chain` (any chain, pipeline or agents.Executor, or
    one with a history per session: `chains.with_history`) with `settings`; run it with
    `http_server`, uvicorn, or mount it in an app of your own."""
    try:
        check_chain("serve", chain.chain if isinstance(chain, WithHistory) else chain)
    except ChainkitError as refused:
        raise ServeConfigError(str(refused)) from None
    if not isinstance(settings, ServerSettings):
        raise ServeConfigError(
            f"settings must be a serving.ServerSettings, got {type(settings).__name__}"
        )
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route

    from chainkit.serving import _chat_completions, _invoke, _openapi, _runs, _sessions, _status
    from chainkit.serving._auth import BearerAuth, LocalOnly
    from chainkit.serving._cors import cors_middleware
    from chainkit.serving._deadline import BodyDeadline
    from chainkit.serving._page import chat_page, page_asset
    from chainkit.serving._signin import sign_out
    from chainkit.serving._traces import RunTraces

    server = Server(chain, settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await server.drain()  # at once, when http_server has drained it already

    middleware = cors_middleware(settings)  # outermost: a browser's preflight has no token
    if settings.token is not None:
        middleware.append(Middleware(BearerAuth, token=settings.token))
    else:
        middleware.append(Middleware(LocalOnly, cors_origins=settings.cors_origins))
    middleware.append(Middleware(BodyDeadline, seconds=settings.body_timeout_seconds))
    routes = [
        Route("/health", answered(_status.health), methods=["GET"]),
        Route("/ready", answered(_status.ready), methods=["GET"]),
        Route("/invoke", answered(_invoke.invoke), methods=["POST"]),
        Route("/stream", answered(_invoke.stream), methods=["POST"]),
        Route("/openapi.json", answered(_openapi.openapi), methods=["GET"]),
        Route("/runs", answered(_runs.list_runs), methods=["GET"]),
        Route("/runs/{run_id}", answered(_runs.show_run), methods=["GET"]),
        Route("/runs/{run_id}/resume", answered(_runs.resume_run), methods=["POST"]),
        Route("/runs/{run_id}/trace", answered(_runs.run_trace), methods=["GET"]),
        Route(
            "/sessions/{session_id}/messages",
            answered(_sessions.session_messages),
            methods=["GET"],
        ),
        Route("/", answered(chat_page), methods=["GET"]),
        Route("/page/{name}", answered(page_asset), methods=["GET"]),
        Route("/logout", answered(sign_out), methods=["POST"]),
        Route(
            "/v1/chat/completions",
            answered(_chat_completions.chat_completions),
            methods=["POST"],
        ),
        Route("/v1/models", answered(_chat_completions.models), methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={404: _not_found, 405: _not_allowed},
    )
    app.state.server = server
    app.state.traces = RunTraces(settings.traces_kept)
    return app


def answered(endpoint: Endpoint) -> Endpoint:
    """`endpoint` with a Problem it raises answered as its JSON, and any other exception
    logged and answered 500 with no detail (no traceback, no exception text)."""

    @functools.wraps(endpoint)  # its module's PATHS describe it (_openapi)
    async def route(request: Request) -> ASGIApp:
        try:
            return await endpoint(request)
        except Problem as problem:
            return problem_response(problem)
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return problem_response(Problem(500, "internal", "internal error; see the server log"))

    return route


def problem_response(problem: Problem) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(problem.body(), status_code=problem.status, headers=problem.headers)


async def _not_found(request: Request, error: Any) -> Response:
    return problem_response(Problem(404, "not_found", "no such route"))


async def _not_allowed(request: Request, error: Any) -> Response:
    return problem_response(
        Problem(405, "method_not_allowed", f"{request.url.path} does not take {request.method}")
    )
