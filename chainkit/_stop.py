"""StopIteration and StopAsyncIteration raised by user code never leave chainkit as themselves.

Escaping a call, either one silently ends whatever loop the caller is iterating in (the reason
PEP 479 turns them into RuntimeError at generator and coroutine boundaries), and an asyncio
Future cannot hold a StopIteration at all: a worker thread raising one leaves the task awaiting
it waiting forever. chainkit raises an EscapedStopError (a RuntimeError) naming the source in
their place, from the original, so the sync and the async path of a run end the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from chainkit._errors import EscapedStopError
from chainkit._threads import in_thread

P = ParamSpec("P")
T = TypeVar("T")


def stop_escaped(error: StopIteration | StopAsyncIteration, source: str) -> EscapedStopError:
    """The EscapedStopError raised in place of `error`, which `source` (e.g. "tool 'x'")
    raised."""
    detail = f": {error}" if str(error) else ""
    escaped = EscapedStopError(f"{source} raised {type(error).__name__}{detail}")
    escaped.__cause__ = error
    return escaped


def call_guarded(source: str, func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`func(*args, **kwargs)`, raising `stop_escaped` in place of a stop it raises."""
    try:
        return func(*args, **kwargs)
    except (StopIteration, StopAsyncIteration) as error:
        raise stop_escaped(error, source) from error


async def to_thread(source: str, func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`func(...)` awaited in a daemon worker thread (`_threads.in_thread`) that always ends: a
    stop becomes `stop_escaped`."""
    return await in_thread(functools.partial(call_guarded, source, func, *args, **kwargs))
