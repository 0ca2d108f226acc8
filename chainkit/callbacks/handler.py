"""The callback contract: a Handler observes a run, it never steers it.

Each `handle_*` method is one row of the table of events (`_events_table.EVENTS`), which says
what run it is about and what its arguments are: a new event is a row there and a method here.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chainkit.callbacks._events_table import EVENTS
from chainkit.schema import AgentAction, AgentFinish, Message


class ModelOptions(dict[str, Any]):
    """The options `handle_llm_start` gets (the model's defaults under the call's own), with
    `provider`: who serves the model ("openai" for the OpenAI backend, else the model class's
    name in lower case), and `server_url`: where, without credentials (None for a model that
    runs in this process)."""

    __slots__ = ("provider", "server_url")

    def __init__(
        self, provider: str, options: Mapping[str, Any], server_url: str | None = None
    ) -> None:
        super().__init__(options)
        self.provider = provider
        self.server_url = server_url


class Handler:
    """Base class whose every method does nothing: subclass it and override what you need.

    An exception raised by a handler is logged on the ``chainkit`` logger and the run goes on,
    unless the handler sets ``raise_error = True``.
    """

    raise_error: bool = False
    _langchain_methods: tuple[tuple[str, str], ...] = ()
    """The LangChain callback methods the class defines without chainkit's, each with the
    chainkit method it means; such a handler is refused where it is given (see `misnamed`)."""
    _stale_methods: tuple[str, ...] = ()
    """The handle_* methods the class defines that cannot take the arguments of their event
    (written for an earlier chainkit); such a handler is refused where it is given."""
    _unknown_methods: tuple[str, ...] = ()
    """The handle_* methods the class defines that are no event's (`handle_tool_stat`), which
    chainkit would never call; such a handler is refused where it is given."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._langchain_methods = tuple(
            (theirs, ours)
            for theirs, ours in _LANGCHAIN_METHODS.items()
            if callable(getattr(cls, theirs, None)) and getattr(cls, ours) is getattr(Handler, ours)
        )
        cls._stale_methods = tuple(
            event.method
            for event in EVENTS
            if getattr(cls, event.method) is not getattr(Handler, event.method, None)
            and not _takes(getattr(cls, event.method), event.arguments)
        )
        cls._unknown_methods = tuple(
            name for name in dir(cls) if name.startswith("handle_") and name not in _EVENT_METHODS
        )

    def handle_text(self, text: str) -> None:
        """Free text a component wants shown, such as a prompt or a notice."""

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        """A model is about to be called with these messages and options."""

    def handle_llm_end(self, message: Message) -> None:
        """A model replied."""

    def handle_llm_error(self, error: BaseException) -> None:
        """A model call failed for good (after any retries)."""

    def handle_chain_start(self, chain: str, inputs: Mapping[str, Any]) -> None:
        """A chain named `chain` starts with these inputs."""

    def handle_chain_end(self, chain: str, outputs: Mapping[str, Any]) -> None:
        """A chain finished with these outputs."""

    def handle_chain_error(self, chain: str, error: BaseException) -> None:
        """A chain failed."""

    def handle_tool_start(self, tool: str, input: str, tool_call_id: str | None) -> None:
        """A tool is called with this input, for the model's tool call `tool_call_id` (None
        for an action parsed from text, as a OneShotAgent's)."""

    def handle_tool_end(self, tool: str, output: str, tool_call_id: str | None) -> None:
        """A tool returned."""

    def handle_tool_error(self, tool: str, error: BaseException, tool_call_id: str | None) -> None:
        """A tool raised."""

    def handle_agent_action(self, action: AgentAction) -> None:
        """The agent chose an action."""

    def handle_agent_finish(self, finish: AgentFinish) -> None:
        """The agent gave its final answer."""

    def handle_retriever_start(self, query: str) -> None:
        """A retriever starts looking for `query`."""

    def handle_retriever_end(self, query: str, documents: Sequence[Any]) -> None:
        """A retriever found these documents (for a tool retriever: the tools selected)."""

    def handle_retriever_error(self, query: str, error: BaseException) -> None:
        """A retriever failed."""

    def handle_streaming_func(self, chunk: str) -> None:
        """A chunk of a streamed model reply arrived: the next piece of its text, in the model's
        run (a `token` event, whose `data["text"]` is `chunk`)."""

    def handle_partial_object(self, value: Any) -> None:
        """A streamed typed result (`llms.generate_object`, or the parser right after the
        model in a pipeline) grew: `value` is what it holds so far, as JSON data."""

    def handle_retry(
        self, attempt: int, error: BaseException, wait_seconds: float, discarded: str
    ) -> None:
        """Attempt number `attempt` failed with `error`; the next starts in `wait_seconds`.

        `discarded` is the text the failed attempt had streamed (`handle_streaming_func`
        heard it): it is no part of the reply, which the next attempt streams from its start.
        """

    def handle_citations(self, cited: Sequence[str], invented: Sequence[str]) -> None:
        """An answer chain read its answer's citations: `cited` the ids that name a document
        the model was shown, `invented` those that name none; both empty for an answer that
        cites nothing. Heard in the answer chain's run."""

    def handle_approval_required(self, tool: str, arguments: str, tool_call_id: str | None) -> None:
        """The call of `tool` with `arguments` (its input as the model wrote it) waits for a
        person's decision; heard in the tool's run, after its start."""

    def handle_approval_decided(
        self,
        tool: str,
        decision: str,
        reason: str | None,
        arguments: str | None,
        tool_call_id: str | None,
    ) -> None:
        """A person decided about the call of `tool`: `decision` is "approve", "deny" (with
        `reason`, which the model reads) or "edit" (the tool runs on `arguments` instead)."""


_LANGCHAIN_METHODS = {
    "on_text": "handle_text",
    "on_llm_start": "handle_llm_start",
    "on_chat_model_start": "handle_llm_start",
    "on_llm_new_token": "handle_streaming_func",
    "on_llm_end": "handle_llm_end",
    "on_llm_error": "handle_llm_error",
    "on_chain_start": "handle_chain_start",
    "on_chain_end": "handle_chain_end",
    "on_chain_error": "handle_chain_error",
    "on_tool_start": "handle_tool_start",
    "on_tool_end": "handle_tool_end",
    "on_tool_error": "handle_tool_error",
    "on_agent_action": "handle_agent_action",
    "on_agent_finish": "handle_agent_finish",
    "on_retriever_start": "handle_retriever_start",
    "on_retriever_end": "handle_retriever_end",
    "on_retriever_error": "handle_retriever_error",
    "on_retry": "handle_retry",
}
"""LangChain's callback methods, which chainkit never calls, and chainkit's for each event."""


_EVENT_METHODS = frozenset(event.method for event in EVENTS)


def _takes(method: Callable[..., object], arguments: tuple[str, ...]) -> bool:
    """Whether `method`, as defined on a class, can be called with `arguments` after self."""
    try:
        inspect.signature(method).bind(None, *arguments)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): it is taken at its word
        pass
    return True


def stale(handler: Handler) -> str:
    """Why `handler`, whose class defines handle_* methods that cannot take their event's
    arguments, would fail at each of those events."""
    return "; ".join(
        f"{type(handler).__name__}.{name}({_parameters(getattr(type(handler), name))}) cannot "
        f"take the arguments chainkit passes: define {name}({_parameters(getattr(Handler, name))})"
        for name in handler._stale_methods
    )


def _parameters(method: Callable[..., object]) -> str:
    """The names of a method's parameters, as its definition lists them."""
    return ", ".join(inspect.signature(method).parameters)


def unknown(handler: Handler) -> str:
    """Why `handler`, whose class defines handle_* methods that are no event's (misspelt,
    or named after no event), would never hear what they were written for."""
    events = {name.removeprefix("handle_"): name for name in _EVENT_METHODS}
    named = []
    for name in handler._unknown_methods:
        suffix = name.removeprefix("handle_")
        close = difflib.get_close_matches(suffix, events, n=1)
        # LangChain's event names, written after handle_ (handle_llm_new_token).
        meant = _LANGCHAIN_METHODS.get(f"on_{suffix}") or (events[close[0]] if close else None)
        if meant is not None:
            name += f" (did you mean {meant}({_parameters(getattr(Handler, meant))})?)"
        named.append(name)
    return (
        f"{type(handler).__name__} defines handle_* methods of no event, which chainkit never "
        f"calls: {', '.join(named)}. The events' methods are {', '.join(sorted(events.values()))}; "
        "a helper of your own needs a name that does not start with handle_"
    )


def misnamed(handler: Handler) -> str:
    """Why `handler`, whose class defines LangChain's callback methods (`on_llm_start`...)
    in place of chainkit's, would never hear the events it was written for."""
    renames = ", ".join(
        f"{ours}({_parameters(getattr(Handler, ours))}) instead of {theirs}"
        for theirs, ours in handler._langchain_methods
    )
    return (
        f"{type(handler).__name__} defines LangChain's callback methods, which chainkit never "
        f"calls: define {renames}"
    )
