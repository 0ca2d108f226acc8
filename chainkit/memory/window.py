"""Memories that show only the end of a conversation: the last k exchanges, or the last
exchanges that fit a number of tokens. What they leave out stays kept (in the memory, or in
its history): only what the prompt gets is bounded."""

from __future__ import annotations

from typing import Any

from chainkit.memory._conversation import ConversationMemory, exchanges
from chainkit.memory._counting import Counter, checked_count, counter_of, require_bound
from chainkit.schema import Message


class ConversationWindow(ConversationMemory):
    """Shows the last `k` exchanges (an exchange: a user message and all that answered it,
    tool calls and results included); older ones are dropped whole, never half an exchange.
    The other settings are ConversationBuffer's."""

    def __init__(self, k: int = 5, **settings: Any) -> None:
        self.k = require_bound(type(self).__name__, "k", k)
        super().__init__(**settings)

    def _shown(self) -> list[Message]:
        if self.history is not None:
            end = self.history.messages(self._session, last=self._end_size)
            if self._holds_window(end):
                return self._select(end)
        return self._select(self.messages)

    async def _ashown(self) -> list[Message]:
        if self.history is not None:
            end = await self.history.amessages(self._session, last=self._end_size)
            if self._holds_window(end):
                return self._select(end)
        return self._select(await self.amessages())

    @property
    def _end_size(self) -> int:
        """Messages read first from a history: most exchanges are a question and its answer,
        so this end of the session mostly holds the window, and the rest is read only when
        it does not."""
        return 2 * self.k

    def _holds_window(self, end: list[Message]) -> bool:
        """Whether `end`, the end of the session, holds the last k exchanges whole: k
        questions at least (each exchange starts at one; what comes before them is cut)."""
        return sum(message.role == "user" for message in end) >= self.k

    def _select(self, messages: list[Message]) -> list[Message]:
        return [message for exchange in exchanges(messages)[-self.k :] for message in exchange]


class ConversationTokenWindow(ConversationMemory):
    """Shows the most recent whole exchanges that fit in `max_tokens`; an exchange that alone
    is larger is not shown. Tokens are counted by `count_tokens` (a function of a list of
    messages) when given, else by `llm`'s own `count_tokens` when it has one, else by the
    project's estimate (a quarter of the characters and 4 per message; images and files
    by what providers charge). The other settings are ConversationBuffer's."""

    def __init__(
        self,
        max_tokens: int = 2000,
        *,
        llm: object = None,
        count_tokens: Counter | None = None,
        **settings: Any,
    ) -> None:
        kind = type(self).__name__
        self.max_tokens = require_bound(kind, "max_tokens", max_tokens)
        self.count_tokens = counter_of(kind, llm, count_tokens)
        super().__init__(**settings)

    def _select(self, messages: list[Message]) -> list[Message]:
        return fitting(type(self).__name__, self.count_tokens, messages, self.max_tokens)


def fitting(kind: str, counter: Counter, messages: list[Message], budget: int) -> list[Message]:
    """The most recent whole exchanges of `messages` whose tokens add up to at most `budget`."""
    kept: list[list[Message]] = []
    for exchange in reversed(exchanges(messages)):
        budget -= checked_count(kind, counter, exchange)
        if budget < 0:
            break
        kept.append(exchange)
    return [message for exchange in reversed(kept) for message in exchange]
