"""The work a route does on a store (the checkpointer, a chat history) and the query
parameters that bound it: run in a worker thread (the event loop never waits for a
database), its failures answered by name (503 when the store does not answer, 500 logged
when it fails), and a count a client asks for read as ASCII digits within its bounds."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from chainkit._errors import StoreError, StoreUnavailableError
from chainkit._threads import in_thread
from chainkit.checkpoints import StateFormatError
from chainkit.serving._problems import Problem
from chainkit.serving._server import log

if TYPE_CHECKING:
    from starlette.requests import Request

T = TypeVar("T")


async def stored(what: str, work: Callable[..., T], *args: Any, run_id: str | None = None) -> T:
    """`work(*args)` in a worker thread; `what` names the store in the log (never to the
    client, as a database's words may name hosts and tables)."""
    try:
        return await in_thread(work, *args)
    except StoreUnavailableError:
        raise unavailable(what, run_id) from None
    except (StoreError, StateFormatError):  # a state a store holds is its own: damaged
        log.exception("the %s failed (%s)", what, args[0] if args else "")
        raise Problem(
            500, "store_failed", f"the {what} failed; see the server log", run_id=run_id
        ) from None


def unavailable(what: str, run_id: str | None = None) -> Problem:
    """503 for a store that does not answer (a database down, or out of reach)."""
    return Problem(
        503,
        "store_unavailable",
        f"the {what} does not answer; try again later",
        run_id=run_id,
        headers={"Retry-After": "5"},
    )


def query_count(request: Request, name: str, default: int, most: int) -> int:
    """The query parameter `name`, a whole number 1 to `most` (`default` when absent)."""
    text = request.query_params.get(name, str(default))
    given = text.isascii() and text.isdigit() and len(text) <= len(str(most))
    if not given or not 1 <= int(text) <= most:
        raise Problem(422, "invalid_query", f"{name} must be a whole number, 1 to {most}")
    return int(text)
