"""Running the chain for a request: `POST /invoke` waits for the outputs, `POST /stream` sends
the events of `chains.astream` as Server-Sent Events as they happen.

A request body is `{"inputs": {...}}` (the chain's inputs) or `{"input": value}` (for a chain
of one input, as `chains.run` takes), with an optional `run_id` (the id a checkpointed agent
saves the run under; a fresh one otherwise)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from chainkit import chains
from chainkit._errors import ChainkitError
from chainkit.checkpoints import named_run
from chainkit.serving._body import checked_fields, json_object
from chainkit.serving._ids import checked_id
from chainkit.serving._outputs import plain_event, served_outputs
from chainkit.serving._problems import Problem
from chainkit.serving._server import Server, log
from chainkit.serving._traces import traced

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

_JSON = (dict, list, str, int, float, bool, type(None))
_FIELDS: dict[str, type | tuple[type, ...]] = {"inputs": dict, "input": _JSON, "run_id": str}
_CALLER_ERRORS = (chains.errors.ChainKeyError, chains.errors.InputsTypeError)
"""What the chain refuses of its inputs before it starts: the caller's to fix (422)."""


async def invoke(request: Request) -> Response:
    from starlette.responses import JSONResponse

    server: Server = request.app.state.server
    inputs, run_id = await _request(request, server)
    async with server.admitted(request):
        with named_run(run_id):
            try:
                outputs = await chains.acall(
                    server.chain, inputs, callbacks=traced(request, run_id)
                )
            except _CALLER_ERRORS as refused:
                raise Problem(422, "invalid_inputs", str(refused), run_id=run_id) from None
            except Exception as failed:
                raise failure(failed, run_id) from None
    return JSONResponse({"run_id": run_id, "outputs": served_outputs(outputs)})


async def stream(request: Request) -> Response:
    from starlette.responses import StreamingResponse

    server: Server = request.app.state.server
    inputs, run_id = await _request(request, server)
    return StreamingResponse(
        _events(server, request, inputs, run_id),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Run-Id": run_id},
    )


async def _events(
    server: Server, request: Request, inputs: dict[str, Any], run_id: str
) -> AsyncIterator[bytes]:
    async with server.admitted(request):
        with named_run(run_id):
            events = chains.astream(server.chain, inputs, callbacks=traced(request, run_id))
            try:
                async for event in events:
                    yield sse(event.kind, plain_event(event))
            except Exception as failed:
                yield sse("error", failure(failed, run_id).body())
            finally:
                await events.aclose()


def sse(name: str, data: Mapping[str, Any]) -> bytes:
    """One Server-Sent Event: its name and its data as one line of JSON."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return f"event: {name}\ndata: {text}\n\n".encode()


async def _request(request: Request, server: Server) -> tuple[dict[str, Any], str]:
    body = await json_object(request, server.settings.max_body_bytes)
    checked_fields(body, {}, _FIELDS)
    run_id = body.get("run_id")
    return _inputs(server, body), uuid.uuid4().hex if run_id is None else checked_id(
        "run_id", run_id
    )


def _inputs(server: Server, body: Mapping[str, Any]) -> dict[str, Any]:
    if ("inputs" in body) == ("input" in body):
        raise Problem(422, "missing_field", "give the chain's inputs as inputs, or input alone")
    if "inputs" in body:
        return dict(body["inputs"])
    keys = server.chain.input_keys
    if server.chain.memory is not None:
        remembered = set(server.chain.memory.memory_variables)
        keys = [key for key in keys if key not in remembered]
    if len(keys) != 1:
        raise Problem(
            422, "invalid_inputs", f"the chain takes {', '.join(keys) or 'no inputs'}: give inputs"
        )
    return {keys[0]: body["input"]}


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
