"""The app of one worker of `chainkit serve --workers N`: uvicorn starts each worker from the
import string of `app`, an app factory, which builds the chain from the factory the command
was given, with the settings it left in the environment (the token in its own variable)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from chainkit._cli.serve import WORKER_VARIABLE, app_of, chain_to_serve

if TYPE_CHECKING:
    from starlette.applications import Starlette


def app() -> Starlette:
    """This worker's app, as the command planned it (the command checked the plan first)."""
    from chainkit._cli.runs import open_store

    plan = json.loads(os.environ[WORKER_VARIABLE])
    store = None if plan["db"] is None else open_store(plan["db"])
    return app_of(chain_to_serve(plan["factory"], store), plan)
