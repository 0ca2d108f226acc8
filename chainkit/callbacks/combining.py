"""CombiningHandler fans every event out to several handlers, each isolated from the others."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from chainkit._text import described
from chainkit.callbacks.errors import HandlerTypeError
from chainkit.callbacks.handler import Handler, misnamed, stale, unknown
from chainkit.schema import AgentAction, AgentFinish, Message

logger = logging.getLogger("chainkit")


Handlers = Handler | Sequence[Handler] | None
"""What `callbacks=` takes, as a component's argument or a call option: a handler, a list or
tuple of them (as LangChain's `callbacks=[...]`), or None."""


class CombiningHandler(Handler):
    """Sends each event to every handler in order.

    A handler that raises is logged and skipped, unless it sets ``raise_error = True``: then
    the error is raised once every handler has had the event, so none misses a start or end.
    """

    kept_whole = False
    """Whether `guard` keeps it as one handler rather than taking its handlers apart: for a
    subclass that does more than pass events on."""

    def __init__(self, handlers: Iterable[Handler]) -> None:
        self.handlers: list[Handler] = list(handlers)

    def __repr__(self) -> str:
        return f"CombiningHandler({self.handlers!r})"

    def _dispatch(self, event: str, *args: Any) -> None:
        raised: Exception | None = None
        for handler in self.handlers:
            try:
                getattr(handler, event)(*args)
            except Exception as error:
                # While an interrupt is being reported, the interrupt must stay what is raised.
                if getattr(handler, "raise_error", False) and not _reports_interrupt(args):
                    raised = raised or error
                else:
                    logger.exception("callback %s of %s failed", event, type(handler).__name__)
        if raised is not None:
            raise raised

    # One method per row of the event table, written out: a method made from the table would
    # pass its arguments on with *args, which doubles the cost of each event on the agent
    # loop's path. tests/callbacks/test_events_table.py checks them against the table.

    def handle_text(self, text: str) -> None:
        self._dispatch("handle_text", text)

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        self._dispatch("handle_llm_start", messages, options)

    def handle_llm_end(self, message: Message) -> None:
        self._dispatch("handle_llm_end", message)

    def handle_llm_error(self, error: BaseException) -> None:
        self._dispatch("handle_llm_error", error)

    def handle_chain_start(self, chain: str, inputs: Mapping[str, Any]) -> None:
        self._dispatch("handle_chain_start", chain, inputs)

    def handle_chain_end(self, chain: str, outputs: Mapping[str, Any]) -> None:
        self._dispatch("handle_chain_end", chain, outputs)

    def handle_chain_error(self, chain: str, error: BaseException) -> None:
        self._dispatch("handle_chain_error", chain, error)

    def handle_tool_start(self, tool: str, input: str, tool_call_id: str | None) -> None:
        self._dispatch("handle_tool_start", tool, input, tool_call_id)

    def handle_tool_end(self, tool: str, output: str, tool_call_id: str | None) -> None:
        self._dispatch("handle_tool_end", tool, output, tool_call_id)

    def handle_tool_error(self, tool: str, error: BaseException, tool_call_id: str | None) -> None:
        self._dispatch("handle_tool_error", tool, error, tool_call_id)

    def handle_agent_action(self, action: AgentAction) -> None:
        self._dispatch("handle_agent_action", action)

    def handle_agent_finish(self, finish: AgentFinish) -> None:
        self._dispatch("handle_agent_finish", finish)

    def handle_retriever_start(self, query: str) -> None:
        self._dispatch("handle_retriever_start", query)

    def handle_retriever_end(self, query: str, documents: Sequence[Any]) -> None:
        self._dispatch("handle_retriever_end", query, documents)

    def handle_retriever_error(self, query: str, error: BaseException) -> None:
        self._dispatch("handle_retriever_error", query, error)

    def handle_streaming_func(self, chunk: str) -> None:
        self._dispatch("handle_streaming_func", chunk)

    def handle_partial_object(self, value: Any) -> None:
        self._dispatch("handle_partial_object", value)

    def handle_retry(
        self, attempt: int, error: BaseException, wait_seconds: float, discarded: str
    ) -> None:
        self._dispatch("handle_retry", attempt, error, wait_seconds, discarded)

    def handle_citations(self, cited: Sequence[str], invented: Sequence[str]) -> None:
        self._dispatch("handle_citations", cited, invented)

    def handle_approval_required(self, tool: str, arguments: str, tool_call_id: str | None) -> None:
        self._dispatch("handle_approval_required", tool, arguments, tool_call_id)

    def handle_approval_decided(
        self,
        tool: str,
        decision: str,
        reason: str | None,
        arguments: str | None,
        tool_call_id: str | None,
    ) -> None:
        self._dispatch("handle_approval_decided", tool, decision, reason, arguments, tool_call_id)


def join(outer: CombiningHandler | None, extra: CombiningHandler | None) -> CombiningHandler | None:
    """`outer` (the handler active where a run starts) together with `extra` (the run's own).

    No allocation when either is missing or `outer` already holds every handler of `extra`,
    as it does when a component's handler is active already. `outer` stays first, so a
    wrapper such as the executor's per-step handler keeps seeing every event.
    """
    if extra is None or extra is outer:
        return outer
    if outer is None:
        return extra
    if all(any(h is o for o in outer.handlers) for h in extra.handlers):
        return outer
    added = [h for h in extra.handlers if all(h is not o for o in outer.handlers)]
    return CombiningHandler([*outer.handlers, *added])


def guard(*handlers: Handlers, name: str = "callbacks") -> CombiningHandler | None:
    """One handler that isolates failures of the given ones; None when none is given.

    Components call events only through a guarded handler, so a broken handler never breaks a
    run, and no handler at all costs a single `is None` test. Anything but a Handler, a list
    or tuple of them, or None raises TypeError naming it, as `name` (the argument it came in).
    """
    present: list[Handler] = []
    for handler in _flat(handlers, name):
        # The same handler given twice (to an agent and its executor) hears each event once.
        if all(handler is not known for known in present):
            present.append(handler)
    return CombiningHandler(present) if present else None


def _flat(handlers: Iterable[object], name: str) -> Iterator[Handler]:
    for handler in handlers:
        if isinstance(handler, CombiningHandler) and not handler.kept_whole:
            yield from _flat(handler.handlers, name)
        elif isinstance(handler, Handler):
            if handler._langchain_methods:
                raise HandlerTypeError(f"{name}: {misnamed(handler)}")
            if handler._stale_methods:
                raise HandlerTypeError(f"{name}: {stale(handler)}")
            if handler._unknown_methods:
                raise HandlerTypeError(f"{name}: {unknown(handler)}")
            yield handler
        elif isinstance(handler, list | tuple):
            yield from _flat(handler, name)
        elif handler is not None:
            if isinstance(handler, type) and issubclass(handler, Handler):
                advice = f"pass an instance, {handler.__name__}(), not the class"
            else:
                advice = "subclass callbacks.Handler and override the handle_* methods you need"
            raise HandlerTypeError(
                f"{name} must be a chainkit.callbacks.Handler, a list of them, or None; got "
                f"{described(handler)}: {advice}"
            )


def _reports_interrupt(args: tuple[Any, ...]) -> bool:
    return any(isinstance(a, BaseException) and not isinstance(a, Exception) for a in args)
