"""OpenTelemetryHandler: every run as a span, named and described as the OpenTelemetry GenAI
semantic conventions say.

OpenTelemetry is imported when a handler is made, never when chainkit is: install it with
`pip install 'chainkit[otel]'` (the API alone; an SDK or a distro exports the spans).
"""

from __future__ import annotations

import json
import os
import threading
import traceback
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import chainkit
from chainkit._plain import plain
from chainkit._redact import mask_secret_fields, redact
from chainkit.callbacks._found import found_ids, found_scores
from chainkit.callbacks._otel_messages import input_messages, output_message
from chainkit.callbacks.errors import HandlerDependencyError, StreamClosed
from chainkit.callbacks.events import END_KINDS, ERROR_KINDS, START_KINDS, Event, EventHandler
from chainkit.schema import Message

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, TracerProvider

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_AGENT_CHAIN = "Executor"
_REQUEST_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "seed": "gen_ai.request.seed",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
}


_DEFAULT_PORTS = {"http": 80, "https": 443}


class _Open(NamedTuple):
    """A run's span, the context that makes it current while the run executes, and the
    context that was current before."""

    span: Span
    current: Context
    before: Context


class OpenTelemetryHandler(EventHandler):
    """Makes a span of each run, its parent the span of the run's parent, whatever thread or
    task the run's events come from.

    Span names: `invoke_agent {name}` for an agent executor, `chat {model}` for a model call
    (kind CLIENT), `execute_tool {tool}` for a tool call, `chain {name}` for any other chain,
    `retrieve {retriever}` for a retrieval (of documents, or of an agent's tools), with the
    ids of what it found and their scores (`gen_ai.retrieval.documents`; a tool's name for a
    tool). Attributes follow the GenAI conventions
    (gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model and the request
    parameters in effect, gen_ai.response.model and .id, server.address and .port, token
    usage, finish reasons, tool name and call id); a failed run's span has status ERROR,
    `error.type` and an `exception` event. A run stopped because the reader closed its stream
    (`StreamClosed`) is no failure: its span keeps status UNSET and says why in
    `chainkit.cancelled`.

    While a run executes its span is the current one, so spans started inside it (by a tool,
    or an instrumented HTTP or database client) are its children; a run started inside such a
    span is that span's child in turn.

    Messages (as the conventions' `gen_ai.input.messages` and `gen_ai.output.messages`), tool
    arguments and results, chain inputs and outputs, retrieval queries
    (`gen_ai.retrieval.query.text`) and the documents found (`chainkit.retriever.documents`:
    JSON of each one's text, metadata, id and score) and
    exception messages are recorded only with `capture_content=True` or the environment variable
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, with API keys masked; without it
    no span name, attribute or event holds what a user or a model wrote.

    A retried model call adds a `retry` event to its span: `chainkit.retry.attempt` (the one
    that failed), `error.type` and `chainkit.retry.wait` (seconds before the next attempt);
    with content captured, `chainkit.retry.discarded` (the text the attempt had streamed).
    A tool call a person decided on adds an `approval_decided` event to the tool's span:
    `chainkit.approval.decision` ("approve", "deny" or "edit") and `gen_ai.tool.call.id`;
    with content captured, `chainkit.approval.reason` and `chainkit.approval.arguments`.
    An answer chain's answer adds a `citations` event to the chain's span:
    `chainkit.citations.cited` (the ids of the documents it cites) with
    `chainkit.citations.cited_count` and `chainkit.citations.invented_count`; with content
    captured, `chainkit.citations.invented` (the ids the model wrote that name no document).

    `tracer_provider` defaults to OpenTelemetry's global one.
    """

    def __init__(
        self, tracer_provider: TracerProvider | None = None, *, capture_content: bool = False
    ) -> None:
        try:
            from opentelemetry import trace
        except ModuleNotFoundError as error:
            raise HandlerDependencyError(
                "OpenTelemetryHandler needs the OpenTelemetry API: pip install 'chainkit[otel]'"
            ) from error
        from opentelemetry import context

        self._trace = trace
        self._context = context
        self._tracer = trace.get_tracer(
            "chainkit", chainkit.__version__, tracer_provider=tracer_provider
        )
        self.capture_content = bool(capture_content) or (
            os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"
        )
        self._spans: dict[str, _Open] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenTelemetryHandler(capture_content={self.capture_content})"

    def on_event(self, event: Event) -> None:
        kind = event.kind
        if kind in START_KINDS:
            self._start(event)
        elif kind in END_KINDS or kind in ERROR_KINDS:
            with self._lock:
                run = self._spans.pop(event.run_id, None)
            if run is not None:
                self._end(run.span, event)
                # Only in the run's own context: an error reported from elsewhere (a step a
                # deadline abandoned) leaves the context it is reported from as it is.
                if self._context.get_current() is run.current:
                    self._context.attach(run.before)
        elif kind == "agent_action" or kind == "agent_finish":
            with self._lock:
                run = self._spans.get(event.run_id)
            if run is not None:
                _mark_agent(run.span, event.name)
        elif kind == "retry" or kind == "approval_decided" or kind == "citations":
            with self._lock:
                run = self._spans.get(event.run_id)
            if run is not None:
                attributes = _SPAN_EVENTS[kind](event, self.capture_content)
                run.span.add_event(kind, attributes, int(event.time * 1e9))

    def _start(self, event: Event) -> None:
        data = event.data
        attributes: dict[str, Any]
        kind = self._trace.SpanKind.INTERNAL
        if event.kind == "llm_start":
            model = str(data["model"])
            name = f"chat {model}"
            kind = self._trace.SpanKind.CLIENT
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": data["provider"] or model.lower(),
                "gen_ai.request.model": model,
            }
            attributes.update(_request_params(data["options"]))
            attributes.update(_server(getattr(data["options"], "server_url", None)))
            if self.capture_content:
                attributes["gen_ai.input.messages"] = _json(input_messages(data["messages"]))
        elif event.kind == "tool_start":
            name = f"execute_tool {event.name}"
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": event.name,
                "gen_ai.tool.type": "function",
            }
            call_id = data["tool_call_id"]
            if call_id is not None:
                attributes["gen_ai.tool.call.id"] = call_id
            if self.capture_content:
                attributes["gen_ai.tool.call.arguments"] = redact(str(data["input"]))
        elif event.kind == "chain_start":
            if event.name == _AGENT_CHAIN:
                name = f"invoke_agent {event.name}"
                attributes = {"gen_ai.operation.name": "invoke_agent"}
                attributes["gen_ai.agent.name"] = event.name
            else:
                name = f"chain {event.name}"
                attributes = {"chainkit.chain.name": event.name}
            if self.capture_content:
                attributes["chainkit.chain.inputs"] = _json(data["inputs"])
        else:
            name = f"retrieve {event.name}"
            attributes = {"gen_ai.operation.name": "retrieval"}
            attributes["chainkit.retriever.name"] = event.name
            if self.capture_content:
                query = redact(str(data["query"]))
                attributes["gen_ai.retrieval.query.text"] = query
                attributes["chainkit.retriever.query"] = query
        attributes["chainkit.run.id"] = event.run_id
        span = self._tracer.start_span(
            name,
            context=self._parent_context(event),
            kind=kind,
            attributes=attributes,
            start_time=int(event.time * 1e9),
        )
        before = self._context.get_current()
        current = self._trace.set_span_in_context(span, before)
        self._context.attach(current)
        with self._lock:
            self._spans[event.run_id] = _Open(span, current, before)

    def _parent_context(self, event: Event) -> Context | None:
        """The context of the run's parent span: the current one (None) when that is an open
        span of the parent's trace (the parent's, or one a tool started inside it), else the
        span of the run's parent run."""
        with self._lock:
            parent = self._spans.get(event.parent_id) if event.parent_id is not None else None
        if parent is None:
            return None
        if self._context.get_current() is parent.current:  # the usual case, and the cheapest
            return None
        current = self._trace.get_current_span()
        trace_id = current.get_span_context().trace_id
        if current.is_recording() and trace_id == parent.span.get_span_context().trace_id:
            return None
        return parent.current

    def _end(self, span: Span, event: Event) -> None:
        data = event.data
        if event.kind in ERROR_KINDS:
            error: BaseException = data["error"]
            if isinstance(error, StreamClosed):  # stopped by its reader: no failure
                span.set_attribute("chainkit.cancelled", str(error))
            else:
                span.set_attribute("error.type", _qualified(type(error)))
                span.set_status(self._trace.StatusCode.ERROR, type(error).__name__)
                exception = _exception(error, self.capture_content)
                span.add_event("exception", exception, timestamp=int(event.time * 1e9))
        elif event.kind == "llm_end":
            _describe_reply(span, data["message"], self.capture_content)
        elif event.kind == "retriever_end":
            _describe_found(span, data["documents"], self.capture_content)
        elif self.capture_content:
            if event.kind == "tool_end":
                span.set_attribute("gen_ai.tool.call.result", redact(str(data["output"])))
            elif event.kind == "chain_end":
                span.set_attribute("chainkit.chain.outputs", _json(data["outputs"]))
        span.end(end_time=int(event.time * 1e9))


def _mark_agent(span: Span, name: str) -> None:
    """A chain found to run an agent (an executor of another name) gets the agent's name."""
    span.update_name(f"invoke_agent {name}")
    span.set_attribute("gen_ai.operation.name", "invoke_agent")
    span.set_attribute("gen_ai.agent.name", name)


def _retry_attributes(event: Event, capture_content: bool) -> dict[str, Any]:
    """The attempt that failed, its error's type and the wait before the next; the text it
    had streamed only when content is captured."""
    data = event.data
    attributes = {
        "chainkit.retry.attempt": data["attempt"],
        "error.type": _qualified(type(data["error"])),
        "chainkit.retry.wait": float(data["wait"]),
    }
    if capture_content:
        attributes["chainkit.retry.discarded"] = redact(data["discarded"])
    return attributes


def _approval_attributes(event: Event, capture_content: bool) -> dict[str, Any]:
    """The decision on a tool call; its reason and edited arguments only when content is
    captured (a person's words, the call's data)."""
    data = event.data
    attributes: dict[str, Any] = {"chainkit.approval.decision": data["decision"]}
    if data["tool_call_id"] is not None:
        attributes["gen_ai.tool.call.id"] = data["tool_call_id"]
    if capture_content:
        for key in ("reason", "arguments"):
            if data[key] is not None:
                attributes[f"chainkit.approval.{key}"] = redact(data[key])
    return attributes


def _citations_attributes(event: Event, capture_content: bool) -> dict[str, Any]:
    """How many ids an answer cites and how many of them it invented, and the ids of the
    documents it cites; the invented ids, which the model wrote, only when content is
    captured."""
    cited, invented = event.data["cited"], event.data["invented"]
    attributes: dict[str, Any] = {
        "chainkit.citations.cited_count": len(cited),
        "chainkit.citations.invented_count": len(invented),
        "chainkit.citations.cited": list(cited),
    }
    if capture_content:
        attributes["chainkit.citations.invented"] = [redact(each) for each in invented]
    return attributes


_SPAN_EVENTS = {
    "retry": _retry_attributes,
    "approval_decided": _approval_attributes,
    "citations": _citations_attributes,
}
"""The events that become a span event of their run's span, and its attributes."""


def _server(url: str | None) -> dict[str, Any]:
    """server.address and server.port of the model's server, from its URL."""
    if not url:
        return {}
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # not a URL after all: no address rather than a wrong one
        return {}
    if not parts.hostname:
        return {}
    server: dict[str, Any] = {"server.address": parts.hostname}
    if port is not None:
        server["server.port"] = port
    return server


def _exception(error: BaseException, capture_content: bool) -> dict[str, str]:
    """The attributes of an `exception` event. The message, and the causes' messages in the
    stack trace, are content (an error may quote its input): without capture the trace
    holds only the frames of the error itself."""
    attributes = {"exception.type": _qualified(type(error))}
    if capture_content:
        attributes["exception.message"] = redact(str(error))
        attributes["exception.stacktrace"] = redact("".join(traceback.format_exception(error)))
    elif error.__traceback__ is not None:
        frames = traceback.format_tb(error.__traceback__)
        attributes["exception.stacktrace"] = "".join(
            ["Traceback (most recent call last):\n", *frames, attributes["exception.type"]]
        )
    return attributes


def _request_params(options: Mapping[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for option, attribute in _REQUEST_PARAMS.items():
        value = options.get(option)
        if isinstance(value, int | float) and not isinstance(value, bool):
            params[attribute] = value
    stop = options.get("stop")
    if stop:
        params["gen_ai.request.stop_sequences"] = [str(s) for s in stop]
    return params


def _describe_reply(span: Span, message: Message, capture_content: bool) -> None:
    meta = message.response_meta
    if meta is not None:
        if meta.finish_reason is not None:
            span.set_attribute("gen_ai.response.finish_reasons", [meta.finish_reason])
        if meta.cached:
            # From a response cache: nothing used this time, so no usage a backend would sum.
            span.set_attribute("chainkit.response.cached", True)
        elif meta.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", meta.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", meta.usage.completion_tokens)
        if meta.model is not None:
            span.set_attribute("gen_ai.response.model", meta.model)
        if meta.id is not None:
            span.set_attribute("gen_ai.response.id", meta.id)
    if capture_content:
        span.set_attribute("gen_ai.output.messages", _json([output_message(message)]))


def _describe_found(span: Span, found: Sequence[Any], capture_content: bool) -> None:
    """A retrieval's documents by id with their scores, as the GenAI conventions'
    `gen_ai.retrieval.documents` (JSON: a span attribute holds no list of objects); their
    texts and metadata only with content captured, as a prompt's."""
    ids, scores = found_ids(found), found_scores(found)
    if scores is None:
        documents: list[dict[str, Any]] = [{"id": id_} for id_ in ids]
    else:
        documents = [{"id": id_, "score": score} for id_, score in zip(ids, scores, strict=True)]
    span.set_attribute("gen_ai.retrieval.documents", json.dumps(documents, ensure_ascii=False))
    if capture_content:
        span.set_attribute("chainkit.retriever.documents", _json(found))


def _json(value: Any) -> str:
    return json.dumps(mask_secret_fields(plain(value)), ensure_ascii=False)


def _qualified(error_type: type[BaseException]) -> str:
    module = error_type.__module__
    return (
        error_type.__qualname__ if module == "builtins" else f"{module}.{error_type.__qualname__}"
    )
