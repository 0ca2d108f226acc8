"""Running the chain for a request: `POST /invoke` waits for the outputs, `POST /stream` sends
the events of `chains.astream` as Server-Sent Events as they happen (see `_sse`).

A request body is `{"inputs": {...}}` (the chain's inputs) or `{"input": value}` (for a chain
of one input, as `chains.run` takes), with optional fields: `run_id` (the id a checkpointed
agent saves the run under; a fresh one otherwise), `session_id` (the conversation, for a chain
served with a history per session), and `on_disconnect` ("cancel", or "continue" for a
checkpointed agent whose run should go on when its client leaves)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from chainkit import chains
from chainkit._errors import ChainkitError
from chainkit.checkpoints import RunExistsError, RunLockedError, named_run
from chainkit.serving._body import checked_fields, json_object
from chainkit.serving._ids import checked_id
from chainkit.serving._openapi import operation
from chainkit.serving._outputs import plain_event, served_outputs, withheld
from chainkit.serving._problems import Problem
from chainkit.serving._server import Server, Slot, disconnected, log
from chainkit.serving._sse import EventStreamResponse, Frames, sse
from chainkit.serving._traces import traced

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from chainkit.callbacks import Event, EventHandler
    from chainkit.chains import AsyncEventStream, Chain

T = TypeVar("T")

_JSON = (dict, list, str, int, float, bool, type(None))
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "inputs": dict,
    "input": _JSON,
    "run_id": str,
    "session_id": str,
    "on_disconnect": str,
}
_CALLER_ERRORS = (chains.errors.ChainKeyError, chains.errors.InputsTypeError)
"""What the chain refuses of its inputs before it starts: the caller's to fix (422)."""
_ROOT_ENDS = ("chain_end", "chain_error")
_CONFLICTS = (RunExistsError, RunLockedError)
"""A run id the checkpointer holds already, or a run going on elsewhere (409)."""


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What a request asks to run: the chain (bound to its session), its inputs, the run's id,
    whether the run goes on when its client leaves, and the handler recording its trace."""

    chain: Chain
    inputs: dict[str, Any]
    run_id: str
    detach: bool = False
    callbacks: EventHandler | None = None
    session_id: str | None = None


async def invoke(request: Request) -> Response:
    from starlette.responses import JSONResponse

    server: Server = request.app.state.server
    call = await run_request(request, server)
    slot = server.admit(request, call.session_id)
    run = await awaited(request, slot, _outputs(call), run_id=call.run_id, detach=call.detach)
    if not run.done():  # its client left, and asked for it to go on: nobody reads this
        return JSONResponse({"run_id": call.run_id, "status": "running"}, status_code=202)
    return JSONResponse({"run_id": call.run_id, "outputs": served_outputs(run.result())})


async def awaited(
    request: Request,
    slot: Slot,
    run: Coroutine[Any, Any, T],
    *,
    run_id: str,
    detach: bool = False,
) -> asyncio.Task[T]:
    """`run` started for the request holding `slot` (which shutdown waits for, then
    cancels), once it ends or its client leaves: then it is cancelled, unless the client
    asked for it to go on (`detach`: the task is returned running). 503 shutting_down when
    shutdown cancelled it."""
    server: Server = request.app.state.server
    task = server.start(run)
    gone = asyncio.ensure_future(disconnected(request.receive))
    try:
        await asyncio.wait([task, gone], return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        await server.let_go(task, slot, detach=detach, run_id=run_id)
    if task.cancelled():
        raise shut_down(run_id)
    return task


async def _outputs(call: RunRequest) -> dict[str, Any]:
    with named_run(call.run_id):
        try:
            return await chains.acall(call.chain, call.inputs, callbacks=call.callbacks)
        except Exception as failed:
            raise problem_of(failed, call.run_id) from None


async def stream(request: Request) -> EventStreamResponse:
    server: Server = request.app.state.server
    call = await run_request(request, server)
    slot = server.admit(request, call.session_id)  # refused before the stream begins
    frames = Frames()
    events = _events(call, frames, slot)
    return event_stream(server, slot, call.run_id, events, frames, detach=call.detach)


def event_stream(
    server: Server,
    slot: Slot,
    run_id: str,
    run: Coroutine[Any, Any, None],
    frames: Frames,
    *,
    detach: bool = False,
) -> EventStreamResponse:
    """The stream of a run's events (`run` puts them in `frames`), ended by a named error
    event when shutdown cancels the run."""
    cancelled = sse("error", shut_down(run_id).body())
    return EventStreamResponse(
        server, slot, run_id, run, frames, detach=detach, cancelled=cancelled
    )


async def _events(call: RunRequest, frames: Frames, slot: Slot) -> None:
    with named_run(call.run_id):
        events = chains.astream(call.chain, call.inputs, callbacks=call.callbacks)
        await put_events(events, frames, slot, call.run_id, problem_of)


async def put_events(
    events: AsyncEventStream,
    frames: Frames,
    slot: Slot,
    run_id: str,
    refused: Callable[[Exception, str], Problem],
) -> None:
    """A run's events put in `frames` as Server-Sent Events; its failure (as `refused`
    names it) as a last `error` event."""
    try:
        async for event in events:
            if event.parent_id is None and event.kind in _ROOT_ENDS:
                # The outputs are out (a session's exchange saved): the client may start
                # its next run as soon as it reads this event.
                slot.release()
            await frames.put(sse(event.kind, served_event(event, run_id)))
    except Exception as failed:
        await frames.put(sse("error", refused(failed, run_id).body()))
    finally:
        await events.aclose()


def served_event(event: Event, run_id: str) -> dict[str, Any]:
    """`event` as a client gets it: as `plain_event` gives it, but for an error's message
    (a model's, a tool's or a chain's), which may carry a provider's text, keys or prompts:
    only its type is told, and the server log has the rest under the run id."""
    served = plain_event(event)
    error = served["data"].get("error") if event.kind.endswith("_error") else None
    if isinstance(error, dict):
        error["message"] = withheld(run_id)
    return served


def shut_down(run_id: str) -> Problem:
    """The answer of a run that shutdown cancelled after the grace period."""
    return Problem(
        503,
        "shutting_down",
        "the server shut down before the run finished; a checkpointed run can be resumed",
        run_id=run_id,
    )


async def run_request(request: Request, server: Server) -> RunRequest:
    """The body of a run route read and checked: 4xx naming what was wrong."""
    body = await json_object(request, server.settings.max_body_bytes)
    checked_fields(body, {}, _FIELDS)
    given_id = body.get("run_id")
    run_id = uuid.uuid4().hex if given_id is None else checked_id("run_id", given_id)
    given_session = body.get("session_id")
    session_id = None if given_session is None else checked_id("session_id", given_session)
    chain = _session_chain(server, session_id)
    detach = _detached(server, body.get("on_disconnect", "cancel"))
    return RunRequest(
        chain,
        _inputs(chain, body),
        run_id,
        detach,
        traced(request, run_id),
        session_id,
    )


def _session_chain(server: Server, session_id: str | None) -> Chain:
    """The chain bound to the session named, for a chain with a history per session."""
    if server.history is None:
        if session_id is not None:
            raise Problem(
                422,
                "no_history",
                "session_id is for a chain served with a history per session; this one keeps "
                "none: serve chains.with_history(chain, history) to keep conversations",
            )
        return server.chain
    if session_id is None:
        raise Problem(
            422,
            "missing_field",
            "this chain keeps a history per session: give a session_id (an id of yours, the "
            "same for every request of one conversation)",
        )
    return server.history.session(session_id)


def _detached(server: Server, on_disconnect: str) -> bool:
    if on_disconnect not in ("cancel", "continue"):
        raise Problem(
            422,
            "wrong_value",
            f"on_disconnect must be 'cancel' or 'continue', got {on_disconnect!r:.40}",
        )
    if on_disconnect == "continue" and getattr(server.chain, "checkpointer", None) is None:
        raise Problem(
            422,
            "not_checkpointed",
            "on_disconnect 'continue' needs an agent with a checkpointer "
            "(agents.Executor(..., checkpointer=...)), whose run is saved at each step and can "
            "be resumed; a run of this chain is cancelled when its client leaves",
        )
    return on_disconnect == "continue"


def _inputs(chain: Chain, body: Mapping[str, Any]) -> dict[str, Any]:
    if ("inputs" in body) == ("input" in body):
        raise Problem(422, "missing_field", "give the chain's inputs as inputs, or input alone")
    remembered = set(chain.memory.memory_variables) if chain.memory is not None else set()
    keys = [key for key in chain.input_keys if key not in remembered]
    if "input" in body:
        if len(keys) != 1:
            raise Problem(
                422,
                "invalid_inputs",
                f"the chain takes {', '.join(keys) or 'no inputs'}: give inputs",
            )
        return {keys[0]: body["input"]}
    inputs = dict(body["inputs"])
    missing = [key for key in keys if key not in inputs]
    if missing:
        raise Problem(
            422,
            "invalid_inputs",
            f"inputs lacks {', '.join(missing)}; the chain takes {', '.join(keys)}",
        )
    return inputs


def problem_of(error: BaseException, run_id: str) -> Problem:
    """A run's failure as the client sees it: the caller's own mistake (inputs the chain
    refuses, a run id taken) with chainkit's message, anything else as `failure`."""
    if isinstance(error, _CALLER_ERRORS):
        return Problem(422, "invalid_inputs", str(error), run_id=run_id)
    if isinstance(error, _CONFLICTS):
        return Problem(409, "run_conflict", str(error), run_id=run_id)
    return failure(error, run_id)


def failure(error: BaseException, run_id: str) -> Problem:
    """A run's failure as the client sees it: a chainkit error's type (the caller may act on
    it), never its text or a provider's (either may carry prompts); the whole of it in the
    server's log under the run id."""
    log.error("run %s failed", run_id, exc_info=error)
    kind = type(error).__name__ if isinstance(error, ChainkitError) else "internal error"
    return Problem(
        500,
        "run_failed",
        f"the run failed ({kind}); the server log has run {run_id}",
        run_id=run_id,
    )


_RUN_FIELDS: dict[str, Any] = {
    "inputs": {"type": "object", "description": "the chain's inputs"},
    "input": {"description": "the one input of a chain of one input (instead of inputs)"},
    "run_id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"},
    "session_id": {
        "type": "string",
        "description": "the conversation, for a chain served with a history per session",
    },
    "on_disconnect": {"enum": ["cancel", "continue"], "default": "cancel"},
}
_RUN = {"type": "object", "properties": _RUN_FIELDS, "additionalProperties": False}
_RUN_ERRORS = [400, 409, 413, 415, 422, 429, 500, 503]
PATHS = {
    "/invoke": {
        "post": operation(
            "Run the chain and wait for its outputs",
            request=_RUN,
            response={
                "type": "object",
                "required": ["run_id", "outputs"],
                "properties": {"run_id": {"type": "string"}, "outputs": {"type": "object"}},
            },
            errors=_RUN_ERRORS,
        )
    },
    "/stream": {
        "post": operation(
            "Run the chain and stream its events (Server-Sent Events: `event: <kind>`, `data:` "
            "the event as JSON; a failed run ends with `event: error`, an Error)",
            request=_RUN,
            response={"type": "string"},
            media_type="text/event-stream",
            errors=[400, 409, 413, 415, 422, 429, 503],
        )
    },
}
