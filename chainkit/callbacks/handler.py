"""The callback contract: a Handler observes a run, it never steers it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chainkit.schema import AgentAction, AgentFinish, Message


class ModelOptions(dict[str, Any]):
    """The options `handle_llm_start` gets, and `provider`: who serves the model ("openai" for
    the OpenAI backend, else the model class's name in lower case)."""

    __slots__ = ("provider",)

    def __init__(self, provider: str, options: Mapping[str, Any]) -> None:
        super().__init__(options)
        self.provider = provider


class Handler:
    """Base class whose every method does nothing: subclass it and override what you need.

    An exception raised by a handler is logged on the ``chainkit`` logger and the run goes on,
    unless the handler sets ``raise_error = True``.
    """

    raise_error: bool = False

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

    def handle_tool_start(self, tool: str, input: str) -> None:
        """A tool is called with this input."""

    def handle_tool_end(self, tool: str, output: str) -> None:
        """A tool returned."""

    def handle_tool_error(self, tool: str, error: BaseException) -> None:
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
        """A chunk of a streamed model reply arrived."""

    def handle_retry(self, attempt: int, error: BaseException, wait_seconds: float) -> None:
        """Attempt number `attempt` failed with `error`; the next starts in `wait_seconds`."""
