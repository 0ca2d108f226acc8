"""GET /openapi.json: behind the token, and describing every route of the app (a route added
without a description in its module's PATHS fails here)."""

from __future__ import annotations

from chainkit.serving import ServerSettings, create_app
from chainkit.serving._openapi import ERROR_STATUSES
from tests.support.held_chains import HeldChain
from tests.support.serving import call, served

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_every_route_is_described() -> None:
    app = create_app(HeldChain(), ServerSettings(token=TOKEN))
    with served(app) as url:
        assert call(url, "GET", "/openapi.json").status == 401
        answer = call(url, "GET", "/openapi.json", headers=AUTH)
    assert answer.status == 200
    paths = answer.json()["paths"]
    routes = {
        (getattr(route, "path", ""), method.lower())
        for route in app.routes
        for method in getattr(route, "methods", None) or ["GET"]
        if method != "HEAD"
    }
    assert routes == {(path, method) for path, operations in paths.items() for method in operations}
    for operations in paths.values():
        for operation in operations.values():
            statuses = {int(status) for status in operation["responses"]} - {200}
            assert 401 in statuses and statuses <= set(ERROR_STATUSES)
    assert {"/invoke", "/stream", "/health", "/ready", "/openapi.json"} <= set(paths)
