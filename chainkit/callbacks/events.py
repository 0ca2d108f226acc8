"""Events: each handler call as one record of its run, for consumers that want a stream of
records rather than one method per kind (a trace file, `chains.stream`, OpenTelemetry)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chainkit.callbacks.handler import Handler
from chainkit.callbacks.run import RunKind, current_run
from chainkit.schema import AgentAction, AgentFinish, Message

EventKind = Literal[
    "chain_start",
    "chain_end",
    "chain_error",
    "llm_start",
    "token",
    "llm_end",
    "llm_error",
    "agent_action",
    "tool_start",
    "tool_end",
    "tool_error",
    "agent_finish",
    "retriever_start",
    "retriever_end",
    "retriever_error",
]

START_KINDS = frozenset(("chain_start", "llm_start", "tool_start", "retriever_start"))
END_KINDS = frozenset(("chain_end", "llm_end", "tool_end", "retriever_end"))
ERROR_KINDS = frozenset(("chain_error", "llm_error", "tool_error", "retriever_error"))


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a run.

    `run_id`, `parent_id`, `run_kind` and `name` are those of the run the event belongs to (a
    token or an agent action belongs to the model or chain run that produced it); `time` is in
    seconds since the epoch. `data` by kind:

    - chain_start `{"inputs"}`, chain_end `{"outputs"}`
    - llm_start `{"messages", "options", "model", "provider"}`, token `{"text"}`,
      llm_end `{"message"}` (the reply, with its usage in `response_meta`)
    - tool_start `{"input"}`, tool_end `{"output"}`
    - retriever_start `{"query"}`, retriever_end `{"query", "documents"}`
    - agent_action `{"action"}`, agent_finish `{"finish"}`
    - every *_error `{"error"}`: the exception
    """

    kind: EventKind
    run_id: str
    parent_id: str | None
    run_kind: RunKind
    name: str
    data: Mapping[str, Any]
    time: float


class EventHandler(Handler):
    """Turns every handler call into an `Event` passed to `on_event`; subclasses override it.

    Events heard outside any run (a model called on its own with `callbacks=`) have no run to
    belong to and are dropped: every model, chain and tool call is a run, so none is lost.
    """

    def on_event(self, event: Event) -> None:
        """Receives each event, in the thread that reported it."""

    def _emit(self, kind: EventKind, data: Mapping[str, Any]) -> None:
        run = current_run()
        if run is not None:
            self.on_event(Event(kind, run.id, run.parent_id, run.kind, run.name, data, time.time()))

    def handle_chain_start(self, chain: str, inputs: Mapping[str, Any]) -> None:
        self._emit("chain_start", {"inputs": inputs})

    def handle_chain_end(self, chain: str, outputs: Mapping[str, Any]) -> None:
        self._emit("chain_end", {"outputs": outputs})

    def handle_chain_error(self, chain: str, error: BaseException) -> None:
        self._emit("chain_error", {"error": error})

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        run = current_run()
        model = options.get("model") or (run.name if run is not None else "")
        provider = getattr(options, "provider", None)
        self._emit(
            "llm_start",
            {"messages": messages, "options": options, "model": model, "provider": provider},
        )

    def handle_streaming_func(self, chunk: str) -> None:
        self._emit("token", {"text": chunk})

    def handle_llm_end(self, message: Message) -> None:
        self._emit("llm_end", {"message": message})

    def handle_llm_error(self, error: BaseException) -> None:
        self._emit("llm_error", {"error": error})

    def handle_agent_action(self, action: AgentAction) -> None:
        self._emit("agent_action", {"action": action})

    def handle_agent_finish(self, finish: AgentFinish) -> None:
        self._emit("agent_finish", {"finish": finish})

    def handle_tool_start(self, tool: str, input: str) -> None:
        self._emit("tool_start", {"input": input})

    def handle_tool_end(self, tool: str, output: str) -> None:
        self._emit("tool_end", {"output": output})

    def handle_tool_error(self, tool: str, error: BaseException) -> None:
        self._emit("tool_error", {"error": error})

    def handle_retriever_start(self, query: str) -> None:
        self._emit("retriever_start", {"query": query})

    def handle_retriever_end(self, query: str, documents: Sequence[Any]) -> None:
        self._emit("retriever_end", {"query": query, "documents": documents})

    def handle_retriever_error(self, query: str, error: BaseException) -> None:
        self._emit("retriever_error", {"error": error})
