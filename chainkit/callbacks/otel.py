"""OpenTelemetryHandler: every run as a span, named and described as the OpenTelemetry GenAI
semantic conventions say.

OpenTelemetry is imported when a handler is made, never when chainkit is: install it with
`pip install 'chainkit[otel]'` (the API alone; an SDK or a distro exports the spans).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import chainkit
from chainkit._redact import mask_secret_fields, redact
from chainkit.callbacks.errors import HandlerDependencyError, StreamClosed
from chainkit.callbacks.events import END_KINDS, ERROR_KINDS, START_KINDS, Event, EventHandler
from chainkit.callbacks.trace_file import plain_json
from chainkit.schema import AgentAction, Message

if TYPE_CHECKING:
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


class OpenTelemetryHandler(EventHandler):
    """Makes a span of each run, its parent the span of the run's parent, whatever thread or
    task the run's events come from.

    Span names: `invoke_agent {name}` for an agent executor, `chat {model}` for a model call
    (kind CLIENT), `execute_tool {tool}` for a tool call, `chain {name}` for any other chain.
    Attributes follow the GenAI conventions (gen_ai.operation.name, gen_ai.provider.name,
    gen_ai.request.model, token usage, finish reasons, tool name and call id, request
    parameters); a failed run's span has status ERROR and `error.type`. A run stopped because
    the reader closed its stream (`StreamClosed`) is no failure: its span keeps status UNSET
    and says why in `chainkit.cancelled`.

    Messages, tool arguments and results, and chain inputs and outputs are recorded only with
    `capture_content=True` or the environment variable
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, with API keys masked.
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
        self._trace = trace
        self._tracer = trace.get_tracer(
            "chainkit", chainkit.__version__, tracer_provider=tracer_provider
        )
        self.capture_content = bool(capture_content) or (
            os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"
        )
        self._spans: dict[str, Span] = {}
        # Native tool calls the agent chose, by agent run: a tool run takes its call id here.
        self._actions: dict[str, list[AgentAction]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenTelemetryHandler(capture_content={self.capture_content})"

    def on_event(self, event: Event) -> None:
        kind = event.kind
        if kind in START_KINDS:
            self._start(event)
        elif kind in END_KINDS or kind in ERROR_KINDS:
            with self._lock:
                span = self._spans.pop(event.run_id, None)
                if event.run_kind == "chain":
                    self._actions.pop(event.run_id, None)
            if span is not None:
                self._end(span, event)
        elif kind == "agent_action" or kind == "agent_finish":
            with self._lock:
                span = self._spans.get(event.run_id)
                if kind == "agent_action":
                    action: AgentAction = event.data["action"]
                    if action.tool_call_id is not None:
                        self._actions.setdefault(event.run_id, []).append(action)
            if span is not None:
                _mark_agent(span, event.name)

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
            if self.capture_content:
                attributes["gen_ai.input.messages"] = _json([m.to_dict() for m in data["messages"]])
        elif event.kind == "tool_start":
            name = f"execute_tool {event.name}"
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": event.name,
                "gen_ai.tool.type": "function",
            }
            call_id = self._call_id(event)
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
            attributes = {"chainkit.retriever.name": event.name}
            if self.capture_content:
                attributes["chainkit.retriever.query"] = redact(str(data["query"]))
        attributes["chainkit.run.id"] = event.run_id
        with self._lock:
            parent = self._spans.get(event.parent_id) if event.parent_id is not None else None
        # The parent is the span of the run's parent, never OpenTelemetry's current span: the
        # events of parallel tools and batch items come from threads with contexts of their own.
        context = None if parent is None else self._trace.set_span_in_context(parent)
        span = self._tracer.start_span(
            name,
            context=context,
            kind=kind,
            attributes=attributes,
            start_time=int(event.time * 1e9),
        )
        with self._lock:
            self._spans[event.run_id] = span

    def _call_id(self, event: Event) -> str | None:
        """The id of the native call this tool run makes: the first one the agent chose for
        this tool and no run took yet."""
        if event.parent_id is None:
            return None
        with self._lock:
            pending = self._actions.get(event.parent_id)
            if not pending:
                return None
            folded = event.name.casefold()
            for index, action in enumerate(pending):
                if action.tool.casefold() == folded:
                    return pending.pop(index).tool_call_id
        return None

    def _end(self, span: Span, event: Event) -> None:
        data = event.data
        if event.kind in ERROR_KINDS:
            error: BaseException = data["error"]
            if isinstance(error, StreamClosed):  # stopped by its reader: no failure
                span.set_attribute("chainkit.cancelled", str(error))
            else:
                span.set_attribute("error.type", _qualified(type(error)))
                span.set_status(self._trace.StatusCode.ERROR, type(error).__name__)
        elif event.kind == "llm_end":
            _describe_reply(span, data["message"], self.capture_content)
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
        if meta.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", meta.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", meta.usage.completion_tokens)
    model = (message.extra or {}).get("model")
    if isinstance(model, str):
        span.set_attribute("gen_ai.response.model", model)
    if capture_content:
        span.set_attribute("gen_ai.output.messages", _json([message.to_dict()]))


def _json(value: Any) -> str:
    try:
        text = json.dumps(mask_secret_fields(value), default=plain_json, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return redact(text)


def _qualified(error_type: type[BaseException]) -> str:
    module = error_type.__module__
    return (
        error_type.__qualname__ if module == "builtins" else f"{module}.{error_type.__qualname__}"
    )
