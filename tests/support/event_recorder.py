"""One recording handler for the tests: `EventRecorder` hears every Handler event.

Each event is kept as a tuple `(name, *arguments, run)`: the method name without `handle_`,
the arguments as the handler got them, and `current_run()` as the handler saw it. The views
leave the run out, for tests that only check what was heard and in which order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from chainkit.callbacks import Handler, RunInfo, current_run
from chainkit.schema import AgentAction, AgentFinish, Message

T = TypeVar("T")


class EventRecorder(Handler):
    """Records every event with its run; safe to share between threads and tasks."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    def _add(self, name: str, *arguments: Any) -> None:
        run = current_run()
        with self._lock:
            self.events.append((name, *arguments, run))

    def heard(self, *names: str) -> list[tuple[Any, ...]]:
        """The events named (all of them when no name is given) as `(name, *arguments)`."""
        with self._lock:
            events = list(self.events)
        return [event[:-1] for event in events if not names or event[0] in names]

    def described(self, describe: Mapping[str, Callable[..., T]]) -> list[T]:
        """The events `describe` names, each as its function makes it of the event's arguments."""
        return [describe[name](*arguments) for name, *arguments in self.heard(*describe)]

    def runs(self, *names: str) -> list[tuple[str, RunInfo | None]]:
        """The events named (all of them when no name is given) as `(name, run)`."""
        with self._lock:
            events = list(self.events)
        return [(event[0], event[-1]) for event in events if not names or event[0] in names]

    def handle_text(self, text: str) -> None:
        self._add("text", text)

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        self._add("llm_start", list(messages), dict(options))

    def handle_llm_end(self, message: Message) -> None:
        self._add("llm_end", message)

    def handle_llm_error(self, error: BaseException) -> None:
        self._add("llm_error", error)

    def handle_chain_start(self, chain: str, inputs: Mapping[str, Any]) -> None:
        self._add("chain_start", chain, dict(inputs))

    def handle_chain_end(self, chain: str, outputs: Mapping[str, Any]) -> None:
        self._add("chain_end", chain, dict(outputs))

    def handle_chain_error(self, chain: str, error: BaseException) -> None:
        self._add("chain_error", chain, error)

    def handle_tool_start(self, tool: str, input: str) -> None:
        self._add("tool_start", tool, input)

    def handle_tool_end(self, tool: str, output: str) -> None:
        self._add("tool_end", tool, output)

    def handle_tool_error(self, tool: str, error: BaseException) -> None:
        self._add("tool_error", tool, error)

    def handle_agent_action(self, action: AgentAction) -> None:
        self._add("agent_action", action)

    def handle_agent_finish(self, finish: AgentFinish) -> None:
        self._add("agent_finish", finish)

    def handle_retriever_start(self, query: str) -> None:
        self._add("retriever_start", query)

    def handle_retriever_end(self, query: str, documents: Sequence[Any]) -> None:
        self._add("retriever_end", query, list(documents))

    def handle_retriever_error(self, query: str, error: BaseException) -> None:
        self._add("retriever_error", query, error)

    def handle_streaming_func(self, chunk: str) -> None:
        self._add("streaming_func", chunk)

    def handle_retry(self, attempt: int, error: BaseException, wait_seconds: float) -> None:
        self._add("retry", attempt, error, wait_seconds)
