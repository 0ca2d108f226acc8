"""What every conversation memory shares: where its messages are kept (in itself, or in a
ChatHistory under a session id), which input and output keys hold the exchange, and how the
history is handed to a prompt (text or messages). A variant says only which messages it
shows (`_shown`) and what it does once an exchange is kept (`_after_save`)."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from chainkit._text import counted
from chainkit.memory._transcript import as_message, transcript
from chainkit.memory.errors import MemoryKeyError, MemoryTypeError
from chainkit.memory.history import ChatHistory, check_session_id
from chainkit.schema import Message


class ConversationMemory:
    """The base of the conversation memories; see ConversationBuffer for the settings.

    With `history` (a ChatHistory) and `session_id` the messages are kept there, so several
    memories, processes or machines share one conversation; without, in the memory itself.
    """

    def __init__(
        self,
        *,
        memory_key: str = "history",
        input_key: str | None = None,
        output_key: str | None = None,
        return_messages: bool = False,
        human_prefix: str = "Human",
        ai_prefix: str = "AI",
        history: ChatHistory | None = None,
        session_id: str | None = None,
    ) -> None:
        kind = type(self).__name__
        _require_name(kind, "memory_key", memory_key)
        for argument, key in (("input_key", input_key), ("output_key", output_key)):
            if key is not None:
                _require_name(kind, argument, key)
        for argument, text in (("human_prefix", human_prefix), ("ai_prefix", ai_prefix)):
            if not isinstance(text, str):
                raise MemoryTypeError(f"{kind} {argument} must be a str, got {text!r}")
        if not isinstance(return_messages, bool):
            raise MemoryTypeError(
                f"{kind} return_messages must be True or False, got {return_messages!r}"
            )
        self.memory_key = memory_key
        self.input_key = input_key
        self.output_key = output_key
        self.return_messages = return_messages
        self.human_prefix = human_prefix
        self.ai_prefix = ai_prefix
        self.history, self.session_id = _storage(kind, history, session_id)
        self._own: list[Message] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        where = (
            counted(len(self._own), "message")
            if self.history is None
            else f"session {self.session_id!r}"
        )
        return f"{type(self).__name__}(memory_key={self.memory_key!r}, {where})"

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    @property
    def messages(self) -> list[Message]:
        """Every message of the conversation kept so far (not only those the memory shows)."""
        if self.history is None:
            with self._lock:
                return list(self._own)
        return self.history.messages(self._session)

    async def amessages(self) -> list[Message]:
        """Async twin of `messages`: a history is read without holding up the event loop."""
        if self.history is None:
            return self.messages
        return await self.history.amessages(self._session)

    def check_keys(self, input_keys: Collection[str], output_keys: Collection[str]) -> None:
        """MemoryKeyError when the exchange to save could not be found among these keys."""
        self._key(input_keys, self.input_key, "input", exclude=self.memory_key)
        self._key(output_keys, self.output_key, "output")

    def load_memory_variables(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return self._variables(self._shown())

    async def aload_memory_variables(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Async twin of `load_memory_variables`, which chains' async calls use (a subclass
        that overrides only the sync method is loaded through it)."""
        if _overrides(self, "load_memory_variables"):
            return self.load_memory_variables(inputs)
        return self._variables(await self._ashown())

    def buffer_text(self) -> str:
        """The history the memory shows, as text."""
        return self.text_of(self._shown())

    def text_of(self, messages: Sequence[Message]) -> str:
        """`messages` as the memory writes them for a text prompt, one line per message."""
        return transcript(messages, self.human_prefix, self.ai_prefix)

    def save_context(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None:
        self._keep(self._exchange(inputs, outputs))
        self._after_save()

    async def asave_context(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None:
        """Async twin of `save_context`, which chains' async calls use (a subclass that
        overrides only the sync method saves through it)."""
        if _overrides(self, "save_context"):
            self.save_context(inputs, outputs)
            return
        exchange = self._exchange(inputs, outputs)
        if self.history is None:
            self._keep(exchange)
        else:
            await self.history.aappend(self._session, exchange)
        await self._aafter_save()

    def clear(self) -> None:
        if self.history is None:
            with self._lock:
                self._own.clear()
        else:
            self.history.clear(self._session)

    # What a variant changes.

    def _shown(self) -> list[Message]:
        """The messages the memory hands to the prompt."""
        return self._select(self.messages)

    async def _ashown(self) -> list[Message]:
        return self._select(await self.amessages())

    def _select(self, messages: list[Message]) -> list[Message]:
        """Of the conversation, what the memory shows: all of it here."""
        return messages

    def _after_save(self) -> None:
        """Work once an exchange is kept (a summary memory folds old turns here)."""

    async def _aafter_save(self) -> None:
        self._after_save()

    # Shared by the variants.

    @property
    def _session(self) -> str:
        assert self.session_id is not None  # set with the history, checked by _storage
        return self.session_id

    def _keep(self, exchange: list[Message]) -> None:
        if self.history is None:
            with self._lock:
                self._own.extend(exchange)
        else:
            self.history.append(self._session, exchange)

    def _variables(self, shown: list[Message]) -> dict[str, Any]:
        return {self.memory_key: shown if self.return_messages else self.text_of(shown)}

    def _exchange(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> list[Message]:
        """The messages to keep of one call: its input's, then its output's. Kept in one
        append, so concurrent calls cannot interleave a question with another's answer."""
        question = inputs[self._key(inputs, self.input_key, "input", exclude=self.memory_key)]
        answer = outputs[self._key(outputs, self.output_key, "output")]
        return [*as_message(question, "user"), *as_message(answer, "assistant")]

    def _key(
        self, values: Collection[str], chosen: str | None, kind: str, exclude: str | None = None
    ) -> str:
        if chosen is not None:
            if chosen not in values:
                raise MemoryKeyError(f"{kind} key {chosen!r} not found; got {sorted(values)}")
            return chosen
        keys = [k for k in values if k != exclude]
        if len(keys) > 1 and kind == "output" and "output" in keys:
            return "output"  # an agent's answer, beside what else it returns (its steps)
        if len(keys) != 1:
            raise MemoryKeyError(
                f"cannot tell which {kind} key to remember among {sorted(keys)}; "
                f"set {type(self).__name__}({kind}_key=...)"
            )
        return keys[0]


def exchanges(messages: Sequence[Message]) -> list[list[Message]]:
    """The messages cut into exchanges: each starts at a user message and holds what followed
    it (the reply, its tool calls and results). Messages before the first user message make
    an exchange of their own."""
    cut: list[list[Message]] = []
    for message in messages:
        if message.role == "user" or not cut:
            cut.append([message])
        else:
            cut[-1].append(message)
    return cut


def _storage(
    kind: str, history: ChatHistory | None, session_id: str | None
) -> tuple[ChatHistory | None, str | None]:
    if history is None:
        if session_id is not None:
            raise MemoryTypeError(
                f"{kind} got a session_id but no history to keep the session in: give "
                "history=memory.InMemoryHistory() (or another ChatHistory) too"
            )
        return None, None
    if not isinstance(history, ChatHistory):
        raise MemoryTypeError(
            f"{kind} history must be a ChatHistory (such as memory.InMemoryHistory()), got "
            f"{type(history).__name__}"
        )
    if session_id is None:
        raise MemoryTypeError(
            f"{kind} keeps its messages in a history under a session id: give session_id=..."
        )
    return history, check_session_id(session_id)


def _overrides(memory: ConversationMemory, method: str) -> bool:
    """Whether `memory`'s class overrides the sync `method` but not its async twin."""
    kind = type(memory)
    twin = f"a{method}"
    return getattr(kind, method) is not getattr(ConversationMemory, method) and getattr(
        kind, twin
    ) is getattr(ConversationMemory, twin)


def _require_name(kind: str, argument: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise MemoryTypeError(f"{kind} {argument} must be a non-empty str, got {value!r}")
