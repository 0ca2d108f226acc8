"""A session's conversation, for a chain served with a history per session
(`chains.with_history`): `GET /sessions/{session_id}/messages` gives its messages, oldest
first (the last 100, or `?last=` up to 1000), each as its wire form (`Message.to_dict`), with
key-shaped text masked."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from chainkit._plain import plain
from chainkit.chains import WithHistory
from chainkit.serving._ids import checked_id
from chainkit.serving._problems import Problem
from chainkit.serving._stores import query_count, stored

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

SHOWN = 100
"""How many of a session's last messages are given unless `?last=` says (at most MOST_SHOWN)."""
MOST_SHOWN = 1000


async def session_messages(request: Request) -> Response:
    from starlette.responses import JSONResponse

    history = getattr(request.app.state.server, "history", None)
    if not isinstance(history, WithHistory):
        raise Problem(
            404,
            "no_history",
            "the served chain keeps no history per session: serve chains.with_history(chain, "
            "history) to keep conversations",
        )
    session_id = checked_id("session_id", request.path_params["session_id"])
    last = query_count(request, "last", SHOWN, MOST_SHOWN)
    read = partial(history.history.messages, last=last)
    messages = await stored("history store", read, session_id)
    shown: list[dict[str, Any]] = plain([message.to_dict() for message in messages])
    return JSONResponse({"session_id": session_id, "messages": shown})


_ERROR = {"description": "a named refusal: {error: {code, message}}"}
PATHS: dict[str, Any] = {
    "/sessions/{session_id}/messages": {
        "get": {
            "summary": "A session's messages, oldest first, for a chain with a history per session",
            "parameters": [
                {
                    "name": "session_id",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"},
                },
                {"name": "last", "in": "query", "schema": {"type": "integer", "default": SHOWN}},
            ],
            "responses": {
                "200": {"description": "{session_id, messages: [a message's wire form]}"},
                **{str(status): _ERROR for status in (401, 404, 422, 500, 503)},
            },
        }
    }
}
"""The OpenAPI description of this route."""
