"""The OpenAI-compatible endpoint: `POST /v1/chat/completions` runs the served chain on a
conversation and answers as a model would (its final answer the assistant's message, with
the tokens the run's model calls used as `usage`), streamed as `chat.completion.chunk`s when
asked; `GET /v1/models` lists the one model served, named as the chain is.

Errors come in OpenAI's shape as well as chainkit's, `{"error": {"message", "type", "code",
"param"}}`, so an OpenAI client raises its own error (BadRequestError, RateLimitError, ...)
with chainkit's message. An agent stopped at its `max_iterations` (or time limit) before an
answer finishes with `finish_reason` "length" and no content."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from chainkit import chains
from chainkit._plain import plain
from chainkit.agents.errors import NotFinishedError
from chainkit.callbacks import AnswerRestart, FinalAnswerStream, UsageTotals
from chainkit.callbacks.final_answer import Piece
from chainkit.checkpoints import named_run
from chainkit.serving._body import json_object
from chainkit.serving._chat_chain import ChatShape, chat_shape, conversation_run
from chainkit.serving._chat_request import ChatRequest, chat_request
from chainkit.serving._invoke import awaited, failure, shut_down
from chainkit.serving._problems import Problem
from chainkit.serving._server import Server, Slot, log
from chainkit.serving._sse import EventStreamResponse, Frames

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from chainkit.callbacks.events import Event
    from chainkit.chains import AsyncEventStream, Chain

OWNER = "chainkit"

PATHS: dict[str, Any] = {
    "/v1/chat/completions": {
        "post": {
            "summary": "Chat with the served chain as with an OpenAI model",
            "description": (
                "OpenAI's chat-completions request and response. The last message (the "
                "user's) is the chain's input, the messages before it its history; with "
                "stream: true the answer comes as chat.completion.chunk Server-Sent Events "
                "ending with data: [DONE]."
            ),
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["messages"],
                            "properties": {
                                "model": {"type": "string"},
                                "messages": {"type": "array", "minItems": 1},
                                "stream": {"type": "boolean"},
                                "stream_options": {"type": "object"},
                            },
                        }
                    }
                },
            },
            "responses": {
                "200": {
                    "description": "a chat.completion, or its chunks as text/event-stream",
                },
                "400": {"description": "a field the served agent cannot take, named"},
                "415": {"description": "the body is not sent as application/json"},
                "429": {"description": "too many runs in flight for this client"},
            },
        }
    },
    "/v1/models": {
        "get": {
            "summary": "The one model served: the chain, by its name",
            "responses": {"200": {"description": "a list of one model"}},
        }
    },
}
"""This module's routes as OpenAPI paths, for the server's OpenAPI description."""


async def chat_completions(request: Request) -> Response | EventStreamResponse:
    try:
        return await _completion(request)
    except Problem as problem:
        return openai_error(problem)


async def models(request: Request) -> Response:
    from starlette.responses import JSONResponse

    server: Server = request.app.state.server
    model = {"id": model_name(server.chain), "object": "model", "created": 0, "owned_by": OWNER}
    return JSONResponse({"object": "list", "data": [model]})


def model_name(chain: Chain) -> str:
    """The model the server is to its OpenAI clients: the chain, by its name."""
    return chain.name


def openai_error(problem: Problem) -> Response:
    """`problem` answered in OpenAI's error shape (chainkit's, with `type` and `param`)."""
    from starlette.responses import JSONResponse

    return JSONResponse(_error_body(problem), status_code=problem.status, headers=problem.headers)


def _error_body(problem: Problem) -> dict[str, Any]:
    body = problem.body()
    body["error"]["type"] = _error_type(problem.status)
    body["error"]["param"] = getattr(problem, "param", None)
    return body


def _error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    return "invalid_request_error" if status < 500 else "server_error"


async def _completion(request: Request) -> Response | EventStreamResponse:
    from starlette.responses import JSONResponse

    server: Server = request.app.state.server
    asked = chat_request(await json_object(request, server.settings.max_body_bytes))
    shape = chat_shape(server.chain)
    chain, inputs = conversation_run(server.chain, shape, asked.messages)
    completion = _Completion(model_name(server.chain))
    slot = server.admit(request)
    if asked.stream:
        frames = Frames()
        chunks = _chunks(completion, chain, shape, inputs, asked, frames, slot)
        # A run shutdown cancels ends with the error an OpenAI client raises.
        cancelled = _data(_error_body(shut_down(completion.run_id)))
        return EventStreamResponse(
            server, slot, completion.run_id, chunks, frames, detach=False, cancelled=cancelled
        )
    whole = _whole(completion, chain, shape, inputs)
    return JSONResponse((await awaited(request, slot, whole, run_id=completion.run_id)).result())


async def _whole(
    completion: _Completion, chain: Chain, shape: ChatShape, inputs: dict[str, Any]
) -> dict[str, Any]:
    """The completion once the run has ended."""
    totals = UsageTotals()
    with named_run(completion.run_id):
        try:
            outputs = await chains.acall(chain, inputs, callbacks=totals)
            answer, finish = _text(outputs[shape.output_key]), "stop"
        except NotFinishedError as stopped:
            answer, finish = "", _stopped(stopped, completion.run_id)
        except Exception as failed:
            raise failure(failed, completion.run_id) from None
    return completion.whole(answer, finish, totals)


class _Completion:
    """One completion's id, time and model, which each of its chunks carries."""

    def __init__(self, model: str) -> None:
        self.run_id = uuid.uuid4().hex
        self.id = f"chatcmpl-{self.run_id}"
        self.created = int(time.time())
        self.model = model

    def whole(self, answer: str, finish: str, totals: UsageTotals) -> dict[str, Any]:
        message = {"role": "assistant", "content": answer, "refusal": None}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        return {**self._head("chat.completion"), "choices": [choice], "usage": _usage(totals)}

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _data({**self._head("chat.completion.chunk"), "choices": [choice]})

    def usage_chunk(self, totals: UsageTotals) -> bytes:
        return _data(
            {**self._head("chat.completion.chunk"), "choices": [], "usage": _usage(totals)}
        )

    def _head(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}


async def _chunks(
    completion: _Completion,
    chain: Chain,
    shape: ChatShape,
    inputs: dict[str, Any],
    asked: ChatRequest,
    frames: Frames,
    slot: Slot,
) -> None:
    """The completion as chunks put in `frames`: the answer's text as it is written, then
    the finish (and the usage, when asked), then [DONE]; a failure as the error an OpenAI
    client raises."""
    await frames.put(completion.chunk({"role": "assistant", "content": ""}))
    totals = UsageTotals()
    outputs: dict[str, Any] = {}
    sent: list[str] = []
    withdrawn = False  # text was sent that the answer no longer begins with
    with named_run(completion.run_id):
        pieces = _answer(chain, inputs, shape, totals, outputs)
        try:
            async for piece in pieces:
                if isinstance(piece, AnswerRestart):
                    withdrawn = True
                elif not withdrawn:
                    sent.append(piece)
                    await frames.put(completion.chunk({"content": piece}))
            answer, finish = _text(outputs[shape.output_key]), "stop"
        except NotFinishedError as stopped:
            answer, finish = "".join(sent), _stopped(stopped, completion.run_id)
        except Exception as failed:
            await frames.put(_data(_error_body(failure(failed, completion.run_id))))
            return
        finally:
            await pieces.aclose()
    written = "".join(sent)
    if not answer.startswith(written):
        await frames.put(_data(_error_body(_rewritten(completion.run_id))))
        return
    if len(answer) > len(written):
        await frames.put(completion.chunk({"content": answer[len(written) :]}))
    await frames.put(completion.chunk({}, finish))
    if asked.include_usage:
        await frames.put(completion.usage_chunk(totals))
    slot.release()  # the answer is out: the client may ask again once it has read it
    await frames.put(b"data: [DONE]\n\n")


async def _answer(
    chain: Chain,
    inputs: dict[str, Any],
    shape: ChatShape,
    totals: UsageTotals,
    outputs: dict[str, Any],
) -> AsyncGenerator[Piece, None]:
    """The run's answer in pieces as it is written (see `_chunks`), its outputs put in
    `outputs` when it ends. The run starts at the first piece asked for, so that whatever
    fails, its start included, fails there."""
    events = _watched(chains.astream(chain, inputs, callbacks=totals), outputs)
    if shape.written_as == "agent":
        pieces: FinalAnswerStream | AsyncGenerator[Piece, None] = FinalAnswerStream(events)
    else:
        pieces = _read(events, _reply_piece if shape.written_as == "reply" else _no_piece)
    try:
        async for piece in pieces:
            yield piece
    finally:
        await pieces.aclose()


def _stopped(error: NotFinishedError, run_id: str) -> str:
    """The finish of a run an agent's limit stopped before its answer: "length", as a model
    that ran out of tokens finishes."""
    log.warning("run %s stopped before an answer: %s", run_id, error.reason)
    return "length"


async def _watched(
    events: AsyncEventStream, outputs: dict[str, Any]
) -> AsyncGenerator[Event, None]:
    """`events` as they come, the run's outputs put in `outputs` when it ends."""
    try:
        async for event in events:
            if event.kind == "chain_end" and event.parent_id is None:
                outputs.update(event.data["outputs"])
            yield event
    finally:
        await events.aclose()


async def _read(
    events: AsyncIterator[Event], read: Callable[[Event], tuple[Piece, ...]]
) -> AsyncGenerator[Piece, None]:
    """The pieces `read` finds in `events`."""
    async for event in events:
        for piece in read(event):
            yield piece


def _reply_piece(event: Event) -> tuple[Piece, ...]:
    """What `event` adds to a chain's one model reply: a token, or a restart when a retry of
    the call discards the tokens streamed so far."""
    if event.kind == "token":
        return (event.data["text"],)
    if event.kind == "retry" and event.data["discarded"]:
        return (AnswerRestart(event.data["discarded"]),)
    return ()


def _no_piece(event: Event) -> tuple[Piece, ...]:
    """Nothing: the answer is known when the run ends (`_chunks` sends it then)."""
    return ()


def _rewritten(run_id: str) -> Problem:
    log.warning("run %s: the answer changed after part of it was streamed", run_id)
    return Problem(
        500,
        "answer_rewritten",
        "a model call was retried and wrote another answer than the one streamed so far; ask again",
        run_id=run_id,
    )


def _text(value: Any) -> str:
    """An answer as the assistant's text: text as it is, other values as JSON."""
    return value if isinstance(value, str) else json.dumps(plain(value), ensure_ascii=False)


def _usage(totals: UsageTotals) -> dict[str, int]:
    prompt, completion = totals.input_tokens, totals.output_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _data(payload: dict[str, Any]) -> bytes:
    """One Server-Sent Event as OpenAI sends them: no name, one line of JSON."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return f"data: {text}\n\n".encode()
