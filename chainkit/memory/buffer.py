"""ConversationBuffer: remembers every exchange, as text or as messages."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from chainkit._text import counted
from chainkit.memory.errors import MemoryKeyError as MemoryKeyError
from chainkit.memory.errors import MemoryTypeError
from chainkit.schema import Message


class ConversationBuffer:
    """Keeps the whole conversation and hands it to the chain under `memory_key`.

    With `return_messages=True` the history is a list of Message (for a MessagesPlaceholder);
    otherwise it is text, one "Human: …" / "AI: …" line per turn.
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
    ) -> None:
        _require_name("memory_key", memory_key)
        for argument, key in (("input_key", input_key), ("output_key", output_key)):
            if key is not None:
                _require_name(argument, key)
        for argument, text in (("human_prefix", human_prefix), ("ai_prefix", ai_prefix)):
            if not isinstance(text, str):
                raise MemoryTypeError(f"ConversationBuffer {argument} must be a str, got {text!r}")
        self.memory_key = memory_key
        self.input_key = input_key
        self.output_key = output_key
        self.return_messages = return_messages
        self.human_prefix = human_prefix
        self.ai_prefix = ai_prefix
        self.messages: list[Message] = []

    def __repr__(self) -> str:
        return (
            f"ConversationBuffer(memory_key={self.memory_key!r}, "
            f"{counted(len(self.messages), 'message')})"
        )

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    def check_keys(self, input_keys: Collection[str], output_keys: Collection[str]) -> None:
        """MemoryKeyError when the exchange to save could not be found among these keys."""
        self._key(input_keys, self.input_key, "input", exclude=self.memory_key)
        self._key(output_keys, self.output_key, "output")

    def load_memory_variables(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        if self.return_messages:
            return {self.memory_key: list(self.messages)}
        return {self.memory_key: self.buffer_text()}

    def buffer_text(self) -> str:
        """The history as text, one line per message."""
        prefixes = {"user": self.human_prefix, "assistant": self.ai_prefix}
        return "\n".join(
            f"{prefixes.get(m.role, m.role.capitalize())}: {m.content}" for m in self.messages
        )

    def save_context(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None:
        question = inputs[self._key(inputs, self.input_key, "input", exclude=self.memory_key)]
        answer = outputs[self._key(outputs, self.output_key, "output")]
        # One extend, so concurrent calls cannot interleave a question with another's answer.
        self.messages.extend((Message.user(str(question)), Message.assistant(str(answer))))

    def clear(self) -> None:
        self.messages.clear()

    @staticmethod
    def _key(
        values: Collection[str], chosen: str | None, kind: str, exclude: str | None = None
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
                f"set ConversationBuffer({kind}_key=...)"
            )
        return keys[0]


def _require_name(argument: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise MemoryTypeError(
            f"ConversationBuffer {argument} must be a non-empty str, got {value!r}"
        )
