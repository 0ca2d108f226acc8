"""The uvicorn server `chainkit serve` runs: a served app's runs drained before uvicorn shuts
down, while the server still listens, so that every request in flight gets its answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chainkit.serving._server import Server
from chainkit.serving.errors import ServeConfigError

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

AFTER_DRAIN_SECONDS = 5.0
"""Once the runs are drained, how long uvicorn waits for connections to finish their answers
before it closes them."""


def http_server(app: Starlette, **config: Any) -> uvicorn.Server:
    """A uvicorn server for `app` (made by `create_app`); `config` are uvicorn.Config's
    keyword arguments (host, port, log_level, ...), over the ones that bound what a hostile
    client can hold of it (`uvicorn_options` of the app's settings). Run it with `.run()`.

    On shutdown (SIGINT, SIGTERM, or `should_exit` set) the server still listens while the
    app drains: /ready and new runs answer 503, runs in flight get `grace_seconds` to
    finish, those left are cancelled (their requests answered 503 "shutting_down" with the
    run id; a checkpointed run stays resumable); then uvicorn closes the connections.
    """
    server = getattr(getattr(app, "state", None), "server", None)
    if not isinstance(server, Server):
        raise ServeConfigError(
            f"http_server serves an app made by serving.create_app, got {type(app).__name__}"
        )
    import uvicorn

    from chainkit.serving._draining import DrainingServer
    from chainkit.serving._uvicorn import uvicorn_options

    config = {**uvicorn_options(server.settings), **config}
    config.setdefault("timeout_graceful_shutdown", AFTER_DRAIN_SECONDS)
    return DrainingServer(uvicorn.Config(app, **config), server)
