"""The app `chainkit serve` serves, built from what the command decided (its plan), and served
in one process: the command's own with one worker, each worker's with several."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from chainkit._cli import exit_status, stderr

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from chainkit.chains import Chain, WithHistory
    from chainkit.checkpoints import Checkpointer
    from chainkit.serving import ServerSettings

COMMAND = "serve"
TOKEN_VARIABLE = "CHAINKIT_SERVE_TOKEN"  # noqa: S105 - the name of a variable, no secret
EXAMPLE = "mypackage.agents:make_agent"


def chain_to_serve(factory: str, store: Checkpointer | None) -> Chain | WithHistory:
    """The chain `factory` gives (one with a history per session, `chains.with_history`,
    included), `store` made its agent's checkpointer (--db's): FactoryError when it gives no
    chain, ServeConfigError when `store` cannot be its checkpointer."""
    from chainkit._batch.runner import chain_of
    from chainkit._factory import load
    from chainkit.agents import Executor
    from chainkit.chains import Chain, WithHistory
    from chainkit.serving.errors import ServeConfigError

    made = load(factory, EXAMPLE, (Chain, WithHistory))
    chain = chain_of(made.chain if isinstance(made, WithHistory) else made, factory)
    if store is not None:
        if not isinstance(chain, Executor):
            raise ServeConfigError(
                f"--db is the checkpointer of an agents.Executor; {factory} gave "
                f"{type(chain).__name__}"
            )
        if chain.checkpointer is not None:
            raise ServeConfigError(
                f"the agent of {factory} has a checkpointer already: leave out --db, or its own"
            )
        chain.checkpointer = store
    served: Chain | WithHistory = made if isinstance(made, WithHistory) else chain
    return served


def built_app(plan: Mapping[str, Any]) -> Starlette:
    """The app `plan` describes, with a store of its own (a worker's)."""
    from chainkit._cli.runs import open_store

    store = None if plan["db"] is None else open_store(plan["db"])
    return app_of(chain_to_serve(plan["factory"], store), plan)


def app_of(chain: Chain | WithHistory, plan: Mapping[str, Any]) -> Starlette:
    """The app serving `chain` with the plan's settings and the token of the environment."""
    from chainkit.serving import create_app

    return create_app(chain, settings_of(plan["settings"], os.environ))


def settings_of(chosen: Mapping[str, Any], environ: Mapping[str, str]) -> ServerSettings:
    from chainkit.serving import ServerSettings

    return ServerSettings(
        token=environ.get(TOKEN_VARIABLE) or None,
        **{**chosen, "cors_origins": tuple(chosen["cors_origins"])},
    )


def serve_app(app: Starlette, listening: socket.socket, plan: Mapping[str, Any]) -> int:
    """Serves `app` on `listening` in this process until it is stopped; the exit status."""
    from uvicorn.config import LOGGING_CONFIG

    from chainkit.serving import http_server

    # The server's own lines (a run's failure, with its id) beside uvicorn's, formatted alike.
    logging = {**LOGGING_CONFIG, "loggers": {**LOGGING_CONFIG["loggers"]}}
    logging["loggers"]["chainkit"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    server = http_server(app, log_config=logging)
    try:
        with _stopped_quietly():
            server.run(sockets=[listening])
    except SystemExit:  # uvicorn's own way out when the app's startup fails
        return not_started()
    return exit_status.SUCCESS if server.started else not_started()


@contextmanager
def _stopped_quietly() -> Iterator[None]:
    """uvicorn, once it has shut down for SIGTERM or SIGINT, raises the signal again for the
    handler it found: this one ignores it, so that a stop asked for ends with status 0
    rather than the signal's (SIGTERM would kill the process, SIGINT raise Ctrl-C)."""
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {stop: signal.signal(stop, signal.SIG_IGN) for stop in stops}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)


def not_started() -> int:
    stderr.error(COMMAND, "the server did not start (uvicorn's lines above say why)")
    return exit_status.FAILED
