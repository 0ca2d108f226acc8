"""MessagesPlaceholder: a slot in a chat prompt for a list of messages given at format time,
and `to_messages`, the one reading of a conversation given as data (agents use it too)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Never

from chainkit._text import counted
from chainkit.prompts.errors import PromptError, PromptTypeError
from chainkit.schema import AgenticMessage, Message, from_agentic
from chainkit.schema.message import Role

ROLE_ALIASES: dict[str, Role] = {
    "system": "system",
    "developer": "system",  # OpenAI's newer name for the system role
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
}
"""The role names a history item may use: chainkit's, LangChain's "human"/"ai", OpenAI's."""

_EXPECTED = (
    "expected a Message, an AgenticMessage, a (role, content) pair such as ('human', 'hi'), "
    "or a dict such as {'role': 'user', 'content': 'hi'}"
)


def to_messages(value: object, name: str) -> list[Message]:
    """The conversation in `value`, a list or tuple of Message (kept as they are),
    AgenticMessage, (role, content) pairs and OpenAI-style dicts (LangChain's {"type": ...}
    too); roles may be any of ROLE_ALIASES.

    Raises PromptTypeError or PromptError naming `name`, the index of the first item not understood,
    its type and what was expected: history silently dropped is worse than an error.
    """
    if not isinstance(value, list | tuple):
        raise PromptTypeError(
            f"{name} must be a list or tuple of messages, got {type(value).__name__}"
        )
    messages: list[Message] = []
    for index, item in enumerate(value):
        if isinstance(item, Message):
            messages.append(item)
        else:
            messages.extend(_converted(item, f"{name}[{index}]"))
    return messages


def _converted(item: object, where: str) -> list[Message]:
    if isinstance(item, AgenticMessage):
        try:
            return from_agentic([item])
        except ValueError as error:
            raise PromptError(f"{where}: {error}") from error
    if isinstance(item, Mapping):
        return [_from_dict(dict(item), item.get("role", item.get("type")), where)]
    if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str):
        role_name, content = item
        if isinstance(content, str):
            return [Message(_role(role_name, where, {}), content)]
        if isinstance(content, list):  # content parts, read as the wire shape reads them
            return [_from_dict({"content": content}, role_name, where)]
        raise PromptTypeError(
            f"{where}: the content of a ({role_name!r}, …) pair must be a str or a list of "
            f"content parts, got {type(content).__name__}"
        )
    raise PromptTypeError(f"{where} is a {_kind(item)}; {_EXPECTED}")


def _from_dict(data: dict[str, Any], role_name: object, where: str) -> Message:
    role = _role(role_name, where, data)
    try:
        return Message.from_dict({**data, "role": role})
    except ValueError as error:
        raise PromptError(f"{where}: {error}") from error


def _role(name: object, where: str, data: Mapping[str, Any]) -> Role:
    role = ROLE_ALIASES.get(name) if isinstance(name, str) else None
    if role is None:
        raise PromptError(f"{where} has role {name!r}; expected one of {sorted(ROLE_ALIASES)}")
    if role == "tool" and not data.get("tool_call_id"):
        raise PromptError(
            f"{where}: a tool message needs the tool_call_id of the call it answers; give "
            "Message.tool(content, tool_call_id) or a dict with 'tool_call_id'"
        )
    return role


def _kind(item: object) -> str:
    """The type of an item not understood; for a bare str, how to write it instead."""
    if isinstance(item, str):
        return "str (a bare text has no role: write ('user', text) or ('ai', text))"
    if isinstance(item, tuple | list):
        return f"{type(item).__name__} of {counted(len(item), 'item')}"
    return type(item).__name__


@dataclass(slots=True, frozen=True, init=False)
class MessagesPlaceholder:
    """Expands to the messages passed under `name` (a chat history, an agent scratchpad), in
    any form `to_messages` reads.

    When `optional`, a missing value expands to nothing.
    """

    name: str
    optional: bool = False

    def __init__(self, name: str | None = None, optional: bool = False, **langchain: Never) -> None:
        if "variable_name" in langchain:  # LangChain's MessagesPlaceholder(variable_name=...)
            raise PromptTypeError(
                f"MessagesPlaceholder takes its variable's name first: write "
                f"MessagesPlaceholder({langchain['variable_name']!r}), not variable_name="
            )
        if langchain:
            raise PromptTypeError(
                f"MessagesPlaceholder takes name and optional, not {', '.join(langchain)}"
            )
        if not isinstance(name, str) or not name:
            raise PromptTypeError(
                f"MessagesPlaceholder needs the name of its variable, a non-empty str; got {name!r}"
            )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "optional", optional)

    def messages(self, values: Mapping[str, Any]) -> list[Message]:
        """The messages under `name` in `values`; PromptError if missing (and not optional) or
        not a conversation `to_messages` understands."""
        if self.name not in values:
            if self.optional:
                return []
            raise PromptError.missing(self.name)
        try:
            return to_messages(values[self.name], self.name)
        except (TypeError, ValueError) as error:
            raise PromptError(
                f"value for messages placeholder {self.name!r} is not understood: {error}",
                variable=self.name,
            ) from error
