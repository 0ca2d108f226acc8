"""The runs of a served agent that keeps them (an `agents.Executor` with a checkpointer):
`GET /runs` lists them, `GET /runs/{run_id}` shows one's state (no secrets) with the calls it
waits on, `POST /runs/{run_id}/resume` continues it (with decisions for the waiting calls, as
`chains.resume` takes them) and answers as `/invoke` does, or as `/stream` with
`"stream": true`; `GET /runs/{run_id}/trace` is the trace page of a run this process served.

Any worker sharing the checkpointer lists, shows and resumes any run: the store's record is
the run's truth, and its lease lets one process at a time continue it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from chainkit import chains
from chainkit._errors import StoreUnavailableError
from chainkit._plain import plain
from chainkit._redact import mask_secret_fields
from chainkit._threads import in_thread
from chainkit.agents import Executor
from chainkit.agents.errors import AgentConfigError
from chainkit.chains.stream import astream_resumed
from chainkit.checkpoints import (
    Checkpointer,
    InterruptedCallError,
    RunFinishedError,
    RunLockedError,
    RunNotFoundError,
    RunState,
    RunSummary,
    StaleStateError,
    StateMismatchError,
)
from chainkit.serving._body import checked_fields, json_object
from chainkit.serving._decisions import checked_decisions
from chainkit.serving._ids import checked_id
from chainkit.serving._invoke import awaited, event_stream, failure, put_events
from chainkit.serving._outputs import served_outputs, waiting_calls
from chainkit.serving._problems import Problem
from chainkit.serving._server import Server, Slot
from chainkit.serving._sse import Frames
from chainkit.serving._stores import query_count, stored, unavailable
from chainkit.serving._traces import RunTraces, traced

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from chainkit.callbacks import EventHandler
    from chainkit.serving._sse import EventStreamResponse

T = TypeVar("T")

LISTED = 100
"""How many runs `GET /runs` lists unless `?limit=` says (at most `MOST_LISTED`)."""
MOST_LISTED = 1000
_STATUSES = ("running", "paused", "finished")
_INTERRUPTED = ("raise", "repeat", "skip")
_RESUME_FIELDS: dict[str, type | tuple[type, ...]] = {
    "decisions": (dict, list, type(None)),
    "stream": bool,
    "interrupted": str,
}


async def list_runs(request: Request) -> Response:
    from starlette.responses import JSONResponse

    _, store = kept_runs(request.app.state.server)
    limit, status = _listing(request)
    runs = await _stored(store.runs)
    listed = [_summary(run) for run in runs if status is None or run.status == status]
    return JSONResponse({"runs": listed[:limit]})


async def show_run(request: Request) -> Response:
    from starlette.responses import JSONResponse

    executor, store = kept_runs(request.app.state.server)
    run_id = checked_id("run_id", request.path_params["run_id"])
    state = await _stored(store.load, run_id)
    return JSONResponse(run_view(executor, state))


async def resume_run(request: Request) -> Response | EventStreamResponse:
    from starlette.responses import JSONResponse

    server: Server = request.app.state.server
    executor, store = kept_runs(server)
    run_id = checked_id("run_id", request.path_params["run_id"])
    body = await json_object(request, server.settings.max_body_bytes)
    checked_fields(body, {}, _RESUME_FIELDS)
    interrupted = body.get("interrupted", "raise")
    if interrupted not in _INTERRUPTED:
        raise Problem(422, "wrong_type", f"interrupted must be one of {', '.join(_INTERRUPTED)}")
    state = await _stored(store.load, run_id)
    if state.status == "finished":
        raise _finished(run_id)
    waiting = executor.waiting_requests(state)
    decisions = checked_decisions(run_id, body.get("decisions"), waiting)
    resume = _Resume(executor, run_id, decisions, interrupted, traced(request, run_id))
    slot = server.admit(request)
    if body.get("stream", False):
        frames = Frames()
        return event_stream(server, slot, run_id, resume.events(frames, slot), frames)
    outputs = (await awaited(request, slot, resume.outputs(), run_id=run_id)).result()
    return JSONResponse({"run_id": run_id, "outputs": served_outputs(outputs)})


@dataclass(frozen=True, slots=True)
class _Resume:
    """A resume a request asks for, once checked: a refusal found once the run is taken
    (it is held elsewhere, a call was cut), or its failure, is named."""

    executor: Executor
    run_id: str
    decisions: list[Any] | None
    interrupted: str
    callbacks: EventHandler | None

    async def outputs(self) -> dict[str, Any]:
        try:
            return await chains.aresume(
                self.executor,
                self.run_id,
                self.decisions,
                interrupted=self.interrupted,
                callbacks=self.callbacks,
            )
        except Exception as refused:
            raise resume_refused(refused, self.run_id) from None

    async def events(self, frames: Frames, slot: Slot) -> None:
        """The resumed run's events put in `frames`, as `/stream` puts a run's."""
        events = astream_resumed(
            self.executor,
            self.run_id,
            self.decisions,
            interrupted=self.interrupted,
            callbacks=self.callbacks,
        )
        await put_events(events, frames, slot, self.run_id, resume_refused)


async def run_trace(request: Request) -> Response:
    from starlette.responses import HTMLResponse

    from chainkit.callbacks.trace_html import render_html
    from chainkit.callbacks.trace_view import trace_runs

    run_id = checked_id("run_id", request.path_params["run_id"])
    traces: RunTraces = request.app.state.traces
    kept = await in_thread(lambda: traces.lines(run_id))
    if kept is None:
        raise Problem(
            404,
            "trace_not_found",
            f"this server process keeps no trace of run {run_id}: it keeps the traces of the "
            "last runs it served itself (ServerSettings.traces_kept)",
            run_id=run_id,
        )
    lines, cut_short = kept

    def page() -> str:
        roots = trace_runs((line.encode() for line in lines), f"run {run_id}")
        return render_html(roots, f"run {run_id}{' (trace cut short)' if cut_short else ''}")

    return HTMLResponse(
        await in_thread(page),
        headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
    )


def kept_runs(server: Server) -> tuple[Executor, Checkpointer]:
    """The served Executor and its checkpointer; 404 when the served chain keeps no runs."""
    chain = server.chain
    if isinstance(chain, Executor) and chain.checkpointer is not None:
        return chain, chain.checkpointer
    raise Problem(
        404,
        "runs_not_kept",
        "the served chain keeps no runs: serve an agents.Executor with a checkpointer "
        "(chainkit serve --db)",
    )


def run_view(executor: Executor, state: RunState) -> dict[str, Any]:
    """A run's state as a client sees it: what it was asked, its steps, the calls of the
    step in progress, its outputs once finished, and the calls it waits on; no tag, no
    model reply, and the values of fields named like credentials masked."""
    view = {
        "run_id": state.run_id,
        "agent": state.agent,
        "status": state.status,
        "inputs": mask_secret_fields(state.inputs),
        "steps": [
            {
                "tool": step.action.tool,
                "input": step.action.tool_input,
                "tool_call_id": step.action.tool_call_id,
                "observation": step.observation,
            }
            for step in state.steps
        ],
        "in_progress": [
            {
                "tool": call.action.tool,
                "input": call.action.tool_input,
                "tool_call_id": call.action.tool_call_id,
                "started": call.started,
                "observation": call.observation,
                "decision": mask_secret_fields(call.decision),
            }
            for call in state.pending
        ],
        "outputs": None if state.outputs is None else mask_secret_fields(state.outputs),
        "waiting": []
        if state.status == "finished"
        else waiting_calls(executor.waiting_requests(state), state),
    }
    shown: dict[str, Any] = plain(view)
    return shown


def resume_refused(error: Exception, run_id: str) -> Problem:
    """What a client is told when a resume is refused (named), or the run failed."""
    if isinstance(error, Problem):
        return error
    if isinstance(error, RunLockedError):
        return Problem(
            409,
            "run_locked",
            f"run {run_id} is held by another process (running or being resumed there); "
            "try again once it stops, or once its lease expires",
            run_id=run_id,
        )
    if isinstance(error, RunNotFoundError):
        return _not_found(run_id)
    if isinstance(error, RunFinishedError):
        return _finished(run_id)
    if isinstance(error, InterruptedCallError):
        return Problem(
            409,
            "call_interrupted",
            f"the call of {error.tool} (call id {error.tool_call_id}) started but did not "
            f"complete before run {run_id} stopped, and {error.tool} is not idempotent: resume "
            'with "interrupted": "repeat" to make it again, or "skip" to tell the model its '
            "outcome is unknown",
            run_id=run_id,
        )
    if isinstance(error, StaleStateError | AgentConfigError):
        return Problem(
            409,
            "run_moved_on",
            f"run {run_id} changed while the decisions were checked (another client resumed "
            "it): read it again",
            run_id=run_id,
        )
    if isinstance(error, StateMismatchError):
        return Problem(409, "run_mismatch", str(error), run_id=run_id)
    if isinstance(error, StoreUnavailableError):
        return unavailable("run store", run_id)
    return failure(error, run_id)


async def _stored(work: Callable[..., T], run_id: str | None = None) -> T:
    """`work(run_id)` (or `work()`) on the checkpointer; an unknown run 404."""
    try:
        if run_id is None:
            return await stored("run store", work)
        return await stored("run store", work, run_id, run_id=run_id)
    except RunNotFoundError:
        raise _not_found(str(run_id)) from None


def _listing(request: Request) -> tuple[int, str | None]:
    """`?limit=` (1 to MOST_LISTED) and `?status=` of a listing."""
    status = request.query_params.get("status")
    if status is not None and status not in _STATUSES:
        raise Problem(422, "invalid_query", f"status must be one of {', '.join(_STATUSES)}")
    return query_count(request, "limit", LISTED, MOST_LISTED), status


def _summary(run: RunSummary) -> dict[str, Any]:
    summary: dict[str, Any] = plain(
        {
            "run_id": run.run_id,
            "agent": run.agent,
            "status": run.status,
            "steps": run.steps,
            "updated": run.updated,
        }
    )
    return summary


def _not_found(run_id: str) -> Problem:
    return Problem(404, "run_not_found", f"no run {run_id} is kept", run_id=run_id)


def _finished(run_id: str) -> Problem:
    return Problem(
        409,
        "run_finished",
        f"run {run_id} finished already: there is nothing to resume (GET /runs/{run_id} "
        "shows its outputs)",
        run_id=run_id,
    )


_RUN_ID = {
    "name": "run_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"},
}
_ERROR = {"description": "a named refusal: {error: {code, message, run_id?}}"}


def _refusals(*statuses: int) -> dict[str, Any]:
    """The error answers of an operation: `statuses`, and 401 (every route's)."""
    return {str(status): _ERROR for status in sorted({401, *statuses})}


_WAITING_CALL = {
    "type": "object",
    "properties": {
        "key": {"type": ["string", "integer"]},
        "kind": {"enum": ["approval", "input"]},
        "tool": {"type": "string"},
        "tool_call_id": {"type": ["string", "null"]},
        "input": {"type": ["string", "null"]},
        "arguments": {},
        "question": {},
    },
}
PATHS: dict[str, Any] = {
    "/runs": {
        "get": {
            "summary": "The runs the checkpointer keeps, most recently saved first",
            "parameters": [
                {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 100}},
                {"name": "status", "in": "query", "schema": {"enum": list(_STATUSES)}},
            ],
            "responses": {
                "200": {"description": "{runs: [{run_id, agent, status, steps, updated}]}"},
                **_refusals(404, 422, 500, 503),
            },
        }
    },
    "/runs/{run_id}": {
        "get": {
            "summary": "A run's state, without secrets, and the calls it waits on",
            "parameters": [_RUN_ID],
            "responses": {
                "200": {
                    "description": "{run_id, agent, status, inputs, steps, in_progress, "
                    "outputs, waiting}",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "waiting": {"type": "array", "items": _WAITING_CALL}
                                },
                            }
                        }
                    },
                },
                **_refusals(404, 422, 500, 503),
            },
        }
    },
    "/runs/{run_id}/resume": {
        "post": {
            "summary": "Continue a run: decisions for its waiting calls, as chains.resume takes",
            "parameters": [_RUN_ID],
            "requestBody": {
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "decisions": {
                                    "description": "by waiting call key, or a list in order: "
                                    '{"kind": "approve"}, {"kind": "deny", "reason"}, '
                                    '{"kind": "edit", "arguments"}; any JSON answers a question',
                                    "type": ["object", "array", "null"],
                                },
                                "stream": {"type": "boolean", "default": False},
                                "interrupted": {"enum": list(_INTERRUPTED), "default": "raise"},
                            },
                        }
                    }
                }
            },
            "responses": {
                "200": {"description": "{run_id, outputs}, or Server-Sent Events with stream"},
                **_refusals(400, 404, 409, 413, 415, 422, 429, 500, 503),
            },
        }
    },
    "/runs/{run_id}/trace": {
        "get": {
            "summary": "The trace page of a run this server process served",
            "parameters": [_RUN_ID],
            "responses": {"200": {"description": "an HTML page"}, **_refusals(404, 422)},
        }
    },
}
"""The OpenAPI description of these routes (path → method → operation), as every route module
gives its own."""
