"""A conversation as readable text ("Human: …" / "AI: …" lines), and the values of a chain's
inputs and outputs as the messages a memory keeps.

Text is what a text prompt gets: every message shows what it says, never its Python repr. An
image or a file shows as a bracketed note (its URL, or its name; never base64 data), a tool
call as the call the model made, a tool's result under the tool's name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chainkit.schema import FilePart, ImagePart, Message, TextPart
from chainkit.schema.message import ContentPart


def transcript(messages: Sequence[Message], human_prefix: str, ai_prefix: str) -> str:
    """The messages as text, one "Prefix: text" line (or more) per message."""
    prefixes = {"user": human_prefix, "assistant": ai_prefix}
    lines: list[str] = []
    for message in messages:
        prefix = prefixes.get(message.role, message.role.capitalize())
        if message.role == "tool" and message.tool_name:
            prefix = f"{prefix} ({message.tool_name})"
        said = _said(message)
        if said or not message.tool_calls:
            lines.append(f"{prefix}: {said}")
        lines.extend(
            f"{prefix}: called {call.function.name}({call.function.arguments})"
            for call in message.tool_calls
        )
    return "\n".join(lines)


def _said(message: Message) -> str:
    if not message.parts:
        return message.content
    return " ".join(_part_text(part) for part in message.parts)


def _part_text(part: ContentPart) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ImagePart):
        return f"[image {part.url}]" if part.url else "[image]"
    return f"[file {part.filename}]" if part.filename else "[file]"


def as_message(value: Any, role: str) -> list[Message]:
    """What a chain's input (role "user") or output (role "assistant") is as messages to keep:
    a Message (a model's reply, with its tool calls) or a list of them as they are; a list of
    content parts as one user message of them; text as it is; other values as JSON (their
    str when they are not JSON data)."""
    if isinstance(value, Message):
        return [value]
    if isinstance(value, list) and value and all(isinstance(m, Message) for m in value):
        return list(value)
    if role == "user" and _content_parts(value):
        return [Message.user(list(value))]
    text = value if isinstance(value, str) else _text_of(value)
    return [Message.user(text) if role == "user" else Message.assistant(text)]


def _content_parts(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(part, TextPart | ImagePart | FilePart) for part in value)
    )


def _text_of(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
