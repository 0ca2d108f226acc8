"""Messages in the shape of the OpenTelemetry GenAI conventions' `gen_ai.input.messages` and
`gen_ai.output.messages`: a list of {role, parts, name?}, each part typed (`text`,
`tool_call`, `tool_call_response`, `reasoning`, `uri`, `blob`, `file`), an output message
with its `finish_reason`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chainkit.schema import FilePart, ImagePart, Message, TextPart, ToolCall

_FINISH_REASONS = {"tool_calls": "tool_call", "function_call": "tool_call"}
"""OpenAI's finish reasons under the conventions' names; any other is kept as it is."""


def input_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [_message(message) for message in messages]


def output_message(message: Message) -> dict[str, Any]:
    """The reply, with why it ended: the server's reason, or, when it gave none, `tool_call`
    for a reply that calls tools and `stop` for one that does not."""
    data = _message(message)
    meta = message.response_meta
    reason = meta.finish_reason if meta is not None else None
    if not reason:
        reason = "tool_call" if message.tool_calls else "stop"
    data["finish_reason"] = _FINISH_REASONS.get(reason, reason)
    return data


def _message(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message.reasoning_content:
        parts.append({"type": "reasoning", "content": message.reasoning_content})
    if message.role == "tool":
        response = {"type": "tool_call_response", "id": message.tool_call_id}
        parts.append({**response, "response": message.content})
    elif message.parts:
        parts.extend(_part(part) for part in message.parts)
    elif message.content:
        parts.append({"type": "text", "content": message.content})
    parts.extend(_tool_call(call) for call in message.tool_calls)
    data: dict[str, Any] = {"role": message.role, "parts": parts}
    if message.name is not None:
        data["name"] = message.name
    return data


def _part(part: TextPart | ImagePart | FilePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    modality = "image" if isinstance(part, ImagePart) else "document"
    shown: dict[str, Any] = {"modality": modality, "mime_type": part.mime_type}
    if part.base64_data is not None:
        return {"type": "blob", **shown, "content": part.base64_data}
    if isinstance(part, ImagePart):
        return {"type": "uri", **shown, "uri": part.url}
    return {"type": "file", **shown, "file_id": part.file_id}


def _tool_call(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": call.id or None,
        "name": call.function.name,
        "arguments": _arguments(call.function.arguments),
    }


def _arguments(text: str) -> Any:
    """The arguments as the JSON value the model wrote, or its text when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text
