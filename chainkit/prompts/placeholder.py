"""MessagesPlaceholder: a slot in a chat prompt for a list of messages given at format time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chainkit.prompts.errors import PromptError
from chainkit.schema import Message


@dataclass(slots=True, frozen=True)
class MessagesPlaceholder:
    """Expands to the messages passed under `name` (a chat history, an agent scratchpad).

    When `optional`, a missing value expands to nothing.
    """

    name: str
    optional: bool = False

    def messages(self, values: Mapping[str, Any]) -> list[Message]:
        """The messages under `name` in `values`; PromptError if missing (and not optional) or
        not a list of Message."""
        if self.name not in values:
            if self.optional:
                return []
            raise PromptError.missing(self.name)
        value = values[self.name]
        if not isinstance(value, list) or not all(isinstance(m, Message) for m in value):
            raise PromptError(
                f"value for messages placeholder {self.name!r} must be a list of Message, "
                f"got {_describe(value)}",
                variable=self.name,
            )
        return list(value)


def _describe(value: Any) -> str:
    """The type of a wrong value and, for a list, of its first wrong item."""
    if isinstance(value, list):
        wrong = next(item for item in value if not isinstance(item, Message))
        return f"a list holding {type(wrong).__name__}"
    return type(value).__name__
