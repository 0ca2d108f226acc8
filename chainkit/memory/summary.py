"""Memories that summarise: older turns are folded, a few at a time, into a running summary
written by a model, so a conversation of any length fits a bound.

Each fold is one call of the summary model: an "llm" run of its own, inside the chain run
that saved the exchange, so events, traces and usage totals show it. The summary is kept in
the memory (the history keeps every message): a memory made afresh over a history that
already holds a conversation folds what does not fit at its first save.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from chainkit.memory._conversation import ConversationMemory
from chainkit.memory._counting import Counter, checked_count, counter_of, require_bound
from chainkit.memory._transcript import transcript
from chainkit.memory.errors import MemoryTypeError, MemoryValueError
from chainkit.memory.window import fitting
from chainkit.schema import Message

INSTRUCTIONS = (
    "You keep a running summary of a conversation. Given the summary so far and the lines "
    "that follow it, write the new summary: keep names, facts, numbers, decisions and open "
    "questions, drop greetings and repetition. Write at most {words} words and nothing but "
    "the summary."
)
SUMMARY_HEADING = "Summary of the conversation so far:"


class ConversationSummary(ConversationMemory):
    """Shows a summary of the conversation, written by `llm` and kept up to date after every
    exchange (one model call each), of at most `max_summary_tokens` tokens: the summary call
    asks for that many at most (`max_tokens`), and a longer reply is cut to it.

    Tokens are counted by `count_tokens` when given, else by `llm`'s own `count_tokens` when
    it has one, else by the project's estimate. `instructions` replace the summary model's
    system message (`{words}` in them is the bound in words). The other settings are
    ConversationBuffer's; as messages, the summary is one system message.
    """

    def __init__(
        self,
        llm: object,
        *,
        max_summary_tokens: int = 256,
        count_tokens: Counter | None = None,
        instructions: str = INSTRUCTIONS,
        **settings: Any,
    ) -> None:
        kind = type(self).__name__
        generate = getattr(llm, "generate", None)
        if not callable(generate):
            raise MemoryTypeError(
                f"{kind} needs a model to write its summary (such as llms.OpenAI(...)), got "
                f"{type(llm).__name__}"
            )
        if not isinstance(instructions, str) or not instructions:
            raise MemoryTypeError(f"{kind} instructions must be a non-empty str")
        self.llm: Any = llm  # a model (llms.Model, a layer above): generate and agenerate
        self.max_summary_tokens = require_bound(kind, "max_summary_tokens", max_summary_tokens, 16)
        self.count_tokens = counter_of(kind, llm, count_tokens)
        self.instructions = instructions
        super().__init__(**settings)
        self.summary = ""
        self._folded = 0  # how many of the kept messages the summary covers
        self._fold_lock = threading.Lock()  # guards summary and _folded, never held over a call

    def _recent_budget(self) -> int:
        """Tokens the unsummarised recent exchanges may take: none here, all is summarised."""
        return 0

    def _select(self, messages: list[Message]) -> list[Message]:
        with self._fold_lock:
            folded = self._covered(messages)
            summary = self.summary
        shown = [_summary_message(summary)] if summary else []
        return shown + messages[folded:]

    def _after_save(self) -> None:
        fold = self._fold_of(self.messages)
        if fold is not None:
            reply = self.llm.generate(fold.request, max_tokens=self.max_summary_tokens)
            self._commit(fold, reply)

    async def _aafter_save(self) -> None:
        fold = self._fold_of(await self.amessages())
        if fold is not None:
            reply = await self.llm.agenerate(fold.request, max_tokens=self.max_summary_tokens)
            self._commit(fold, reply)

    def clear(self) -> None:
        super().clear()
        with self._fold_lock:
            self.summary, self._folded = "", 0

    def _covered(self, messages: list[Message]) -> int:
        """Messages the summary covers; none when the conversation was cleared under it."""
        if self._folded > len(messages):
            self.summary, self._folded = "", 0
        return self._folded

    def _fold_of(self, messages: list[Message]) -> _Fold | None:
        """The fold to make of `messages`, the whole conversation: the oldest unsummarised
        exchanges that do not fit the recent budget, and the request that summarises them."""
        with self._fold_lock:
            folded = self._covered(messages)
            summary = self.summary
        rest = messages[folded:]
        kind, budget = type(self).__name__, self._recent_budget()
        if len(fitting(kind, self.count_tokens, rest, budget)) == len(rest):
            return None
        # Folded down to half the budget, so that a fold comes every few exchanges rather
        # than at each one once the recent exchanges fill their budget.
        recent = fitting(kind, self.count_tokens, rest, budget // 2)
        to_fold = rest[: len(rest) - len(recent)]
        words = max(1, self.max_summary_tokens * 3 // 4)
        lines = transcript(to_fold, self.human_prefix, self.ai_prefix)
        request = [
            Message.system(self.instructions.replace("{words}", str(words))),
            Message.user(
                f"Summary so far:\n{summary or '(none yet)'}\n\n"
                f"The conversation that follows it:\n{lines}"
            ),
        ]
        return _Fold(folded, folded + len(to_fold), request)

    def _commit(self, fold: _Fold, reply: Message) -> None:
        """Keeps the summary `reply` wrote, unless another save folded from the same point
        meanwhile (its summary stands; the next save folds what is left)."""
        summary = self._bounded(str(reply.content).strip())
        with self._fold_lock:
            if self._folded == fold.start:
                self.summary, self._folded = summary, fold.end

    def _bounded(self, text: str) -> str:
        """`text`, cut until its summary message fits `max_summary_tokens`."""
        kind = type(self).__name__
        while text:
            count = checked_count(kind, self.count_tokens, [_summary_message(text)])
            if count <= self.max_summary_tokens:
                break
            text = text[: min(len(text) - 1, len(text) * self.max_summary_tokens // count)]
        return text


class ConversationSummaryBuffer(ConversationSummary):
    """Shows the most recent exchanges as they are, and a summary of the older ones, in
    `max_tokens` together: when the recent exchanges outgrow their budget, `max_tokens` less
    `max_summary_tokens`, the oldest of them are folded into the summary (one model call)
    until the rest take at most half of it, so a fold comes every few exchanges.
    The other settings are ConversationSummary's."""

    def __init__(self, llm: object, *, max_tokens: int = 2000, **settings: Any) -> None:
        kind = type(self).__name__
        self.max_tokens = require_bound(kind, "max_tokens", max_tokens)
        super().__init__(llm, **settings)
        if self.max_tokens <= self.max_summary_tokens:
            raise MemoryValueError(
                f"{kind} max_tokens ({self.max_tokens}) must be more than max_summary_tokens "
                f"({self.max_summary_tokens}): the recent exchanges need room beside the summary"
            )

    def _recent_budget(self) -> int:
        return self.max_tokens - self.max_summary_tokens


@dataclass(frozen=True, slots=True)
class _Fold:
    """Messages [start, end) of the conversation to fold, and the summary model's request."""

    start: int
    end: int
    request: list[Message]


def _summary_message(summary: str) -> Message:
    return Message.system(f"{SUMMARY_HEADING}\n{summary}")
