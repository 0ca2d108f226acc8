"""The app of one worker of `chainkit serve --workers N`: uvicorn starts each worker from the
import string of `app`, an app factory, which builds the chain from the factory the command
was given, with the settings it left in the environment (the token in its own variable)."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from chainkit._cli import stderr
from chainkit._cli.serve import COMMAND, WORKER_VARIABLE, app_of, chain_to_serve

if TYPE_CHECKING:
    from starlette.applications import Starlette


def app() -> Starlette:
    """This worker's app, as the command planned it. A worker that cannot build it (the
    command built it once before, so something changed: a database that went away) says why
    and exits as uvicorn's workers do when they cannot start, which stops the command rather
    than have uvicorn start it again and again."""
    from uvicorn.config import STARTUP_FAILURE

    from chainkit._cli.runs import open_store

    plan = json.loads(os.environ[WORKER_VARIABLE])
    try:
        store = None if plan["db"] is None else open_store(plan["db"])
        return app_of(chain_to_serve(plan["factory"], store), plan)
    except Exception as failed:
        stderr.error(
            COMMAND, f"a worker could not build the app: {type(failed).__name__}: {failed}"
        )
        sys.exit(STARTUP_FAILURE)
