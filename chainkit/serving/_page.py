"""The chat page: `GET /` and its script and style under `/page/`, package data
(`chainkit/serving/page/`: no build step, nothing fetched from elsewhere). The page talks to
the server's own routes: it streams a run from `POST /stream`, posts the decisions on a paused
run's waiting calls to `/runs/{id}/resume`, and links a finished run's `/runs/{id}/trace`.

Its Content-Security-Policy lets it load its own script and style and call its own origin,
nothing else, and no other site may frame it (no click on an approve button through a frame).
The script shows every text with `textContent`, never parsed as HTML."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from chainkit.serving._problems import Problem

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

ASSETS = {"page.js": "text/javascript", "page.css": "text/css"}
"""The files served under /page/, by name: nothing else of the package is reachable."""
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PATHS = {
    "/": {
        "get": {
            "summary": "The chat page (a browser without the token gets the sign-in form)",
            "responses": {
                "200": {"description": "the page", "content": {"text/html": {}}},
                "401": {"description": "no valid bearer token or session cookie"},
            },
        }
    },
    "/page/{name}": {
        "get": {
            "summary": "The chat page's script or style",
            "parameters": [
                {
                    "name": "name",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string", "enum": sorted(ASSETS)},
                }
            ],
            "responses": {
                "200": {
                    "description": "the file",
                    "content": {kind: {} for kind in ASSETS.values()},
                },
                "401": {"description": "no valid bearer token or session cookie"},
                "404": {"description": "no such file of the page"},
            },
        }
    },
}
"""The routes of the page as the app's OpenAPI description shows them."""
_PLACEHOLDER = re.compile(rb"__(SIGN_OUT|SESSIONS)__")
_HEADERS = {
    "Content-Security-Policy": _POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


async def chat_page(request: Request) -> Response:
    """The page; its sign-out button shown when the server has a token to sign in with, and
    told whether the chain keeps a history per session (the page then names its session)."""
    from starlette.responses import Response

    server = request.app.state.server
    values = {
        b"SIGN_OUT": b"" if server.settings.token is not None else b" hidden",
        # A chain served with chains.with_history: the server holds its WithHistory.
        b"SESSIONS": b"no" if getattr(server, "history", None) is None else b"yes",
    }
    page = _PLACEHOLDER.sub(lambda match: values[match[1]], _read("index.html"))
    return Response(page, media_type="text/html", headers=_HEADERS)


async def page_asset(request: Request) -> Response:
    from starlette.responses import Response

    name = request.path_params["name"]
    if name not in ASSETS:
        raise Problem(404, "not_found", "no such file of the page")
    return Response(_read(name), media_type=ASSETS[name], headers=_HEADERS)


@cache
def _read(name: str) -> bytes:
    return (resources.files(__package__) / "page" / name).read_bytes()
