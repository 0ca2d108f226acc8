"""Conversions between Message and AgenticMessage.

`from_agentic(to_agentic(messages)) == messages` for every Message an AgenticMessage can
express. The mapping, role by role:

- system and user: `content` becomes one UserInputText (none when empty); `parts` become
  UserInputText / UserInputImage / UserInputFile blocks. Back, a single non-empty text block
  becomes `content`, anything else becomes `parts`; so `parts=[TextPart(t)]` comes back as
  `content=t`, the same content in its plain form, and an empty text block stays a block.
  System text becomes UserInputText, as it is input to the
  model; back, text blocks of either kind are accepted in every role.
- assistant: blocks in reply order, Reasoning, AssistantGenText, then one FunctionToolCall per
  tool call. A reasoning signature has no field in Message, so it travels in
  `Message.extra[REASONING_SIGNATURE_KEY]`.
- tool: one FunctionToolResult carrying `tool_call_id`, `tool_name` and `content`.
- every role: `name`, `response_meta` and `extra` are carried over as they are.

An AgenticMessage one Message cannot hold is split, never cut short: a tool message with several
results gives one tool Message per result, and assistant blocks out of reply order (text after a
tool call, say) start a new assistant Message at each step back, adjacent text and reasoning
blocks being joined. Each piece keeps `name` and a copy of `extra`; `response_meta` goes on the
last piece only, so usage is counted once. Signed reasoning is never joined with other reasoning.

What neither direction can express raises ConversionError instead of being dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainkit.schema._check import check_sequence
from chainkit.schema.agentic import (
    TEXT_BLOCKS,
    AgenticMessage,
    AssistantGenText,
    ContentBlock,
    FunctionToolCall,
    FunctionToolResult,
    Reasoning,
    UserInputFile,
    UserInputImage,
    UserInputText,
)
from chainkit.schema.errors import ConversionError as ConversionError
from chainkit.schema.message import (
    ContentPart,
    FilePart,
    FunctionCall,
    ImagePart,
    Message,
    Role,
    TextPart,
    ToolCall,
)

REASONING_SIGNATURE_KEY = "reasoning_signature"

# Rank of each assistant block in reply order; a block ranked below its predecessor starts a new
# Message.
_REASONING, _TEXT, _CALL = 0, 1, 2


def to_agentic(messages: Sequence[Message]) -> list[AgenticMessage]:
    """Each Message as an AgenticMessage."""
    check_sequence("to_agentic", "messages", messages, Message)
    return [_to_agentic(message) for message in messages]


def from_agentic(agentic: Sequence[AgenticMessage]) -> list[Message]:
    """The Messages holding the same conversation; one AgenticMessage may give several."""
    check_sequence("from_agentic", "agentic", agentic, AgenticMessage)
    return [message for item in agentic for message in _from_agentic(item)]


def _to_agentic(message: Message) -> AgenticMessage:
    _check_fields(message)
    extra = dict(message.extra) if message.extra is not None else None
    blocks: list[ContentBlock]
    if message.role == "assistant":
        signature = _pop_signature(extra)
        if extra is not None and not extra and message.extra:
            extra = None  # the signature was all the extra there was
        blocks = []
        if message.reasoning_content or signature is not None:
            blocks.append(Reasoning(message.reasoning_content, signature))
        if message.content:
            blocks.append(AssistantGenText(message.content))
        blocks.extend(_call_block(call) for call in message.tool_calls)
    elif message.role == "tool":
        if message.tool_call_id is None:
            raise ConversionError(
                "a tool message needs a tool_call_id to become a FunctionToolResult",
                role="tool",
                field="tool_call_id",
            )
        blocks = [FunctionToolResult(message.tool_call_id, message.tool_name, message.content)]
    elif message.parts:
        blocks = [_part_block(part) for part in message.parts]
    else:
        blocks = [UserInputText(message.content)] if message.content else []
    return AgenticMessage(
        message.role, blocks, message.response_meta, extra=extra, name=message.name
    )


# The fields each role may hold besides content, name, response_meta and extra.
_ROLE_FIELDS: dict[str, frozenset[str]] = {
    "system": frozenset({"parts"}),
    "user": frozenset({"parts"}),
    "assistant": frozenset({"reasoning_content", "tool_calls"}),
    "tool": frozenset({"tool_call_id", "tool_name"}),
}


def _check_fields(message: Message) -> None:
    present = {
        "parts": bool(message.parts),
        "reasoning_content": bool(message.reasoning_content),
        "tool_calls": bool(message.tool_calls),
        "tool_call_id": message.tool_call_id is not None,
        "tool_name": message.tool_name is not None,
    }
    allowed = _ROLE_FIELDS[message.role]
    for name, is_set in present.items():
        if is_set and name not in allowed:
            raise ConversionError(
                f"a {message.role} message cannot hold {name} in an AgenticMessage",
                role=message.role,
                field=name,
            )
    for call in message.tool_calls:
        if call.type != "function":
            raise ConversionError(
                f"tool call {call.id!r} has type {call.type!r}; FunctionToolCall holds "
                "'function' calls only",
                role=message.role,
                field="tool_calls",
            )


def _pop_signature(extra: dict[str, Any] | None) -> str | None:
    if extra is None or REASONING_SIGNATURE_KEY not in extra:
        return None
    signature = extra.pop(REASONING_SIGNATURE_KEY)
    if not isinstance(signature, str):
        raise ConversionError(
            f"extra[{REASONING_SIGNATURE_KEY!r}] must be a str, got {type(signature).__name__}",
            role="assistant",
            field="extra",
        )
    return signature


def _call_block(call: ToolCall) -> FunctionToolCall:
    return FunctionToolCall(
        call.id,
        call.function.name,
        call.function.arguments,
        index=call.index,
        extra=dict(call.extra) if call.extra is not None else None,
    )


def _part_block(part: ContentPart) -> ContentBlock:
    if isinstance(part, TextPart):
        return UserInputText(part.text)
    if isinstance(part, ImagePart):
        return UserInputImage(part.url, part.base64_data, part.mime_type, part.detail)
    return UserInputFile(part.base64_data, part.file_id, part.filename, part.mime_type)


def _from_agentic(message: AgenticMessage) -> list[Message]:
    if message.role == "assistant":
        if message.extra and REASONING_SIGNATURE_KEY in message.extra:
            raise ConversionError(
                f"extra key {REASONING_SIGNATURE_KEY!r} is reserved for reasoning signatures "
                "in assistant Messages",
                role="assistant",
                field="extra",
            )
        pieces = [_assistant_message(message, run) for run in _reply_runs(message.blocks)]
    elif message.role == "tool":
        pieces = [_tool_message(message, block) for block in message.blocks]
        if not pieces:
            raise ConversionError(
                "a tool AgenticMessage needs a FunctionToolResult block",
                role="tool",
                field="blocks",
            )
    else:
        pieces = [_input_message(message)]
    pieces[-1].response_meta = message.response_meta
    return pieces


def _input_message(message: AgenticMessage) -> Message:
    parts = [_block_part(message.role, block) for block in message.blocks]
    if len(parts) == 1 and isinstance(parts[0], TextPart) and parts[0].text:
        return _piece(message, content=parts[0].text)
    return _piece(message, parts=parts)


def _block_part(role: Role, block: ContentBlock) -> ContentPart:
    if isinstance(block, TEXT_BLOCKS):
        return TextPart(block.text)
    if isinstance(block, UserInputImage):
        return ImagePart(block.url, block.base64_data, block.mime_type, block.detail)
    if isinstance(block, UserInputFile):
        return FilePart(block.base64_data, block.file_id, block.filename, block.mime_type)
    raise _misplaced(role, block)


def _tool_message(message: AgenticMessage, block: ContentBlock) -> Message:
    if not isinstance(block, FunctionToolResult):
        raise _misplaced("tool", block)
    return _piece(message, content=block.content, tool_call_id=block.call_id, tool_name=block.name)


def _reply_runs(blocks: list[ContentBlock]) -> list[list[ContentBlock]]:
    """The blocks cut into runs that are each in reply order; always at least one run."""
    runs: list[list[ContentBlock]] = [[]]
    rank = _REASONING
    for block in blocks:
        block_rank = _reply_rank(block)
        run = runs[-1]
        if block_rank < rank or (isinstance(block, Reasoning) and run and _seals(block, run[-1])):
            runs.append([])
        runs[-1].append(block)
        rank = block_rank
    return runs


def _reply_rank(block: ContentBlock) -> int:
    if isinstance(block, Reasoning):
        return _REASONING
    if isinstance(block, TEXT_BLOCKS):
        return _TEXT
    if isinstance(block, FunctionToolCall):
        return _CALL
    raise _misplaced("assistant", block)


def _seals(block: Reasoning, previous: ContentBlock) -> bool:
    """Whether joining `block` to the reasoning before it would misplace a signature."""
    return isinstance(previous, Reasoning) and (
        block.signature is not None or previous.signature is not None
    )


def _assistant_message(message: AgenticMessage, run: list[ContentBlock]) -> Message:
    reasoning = [block for block in run if isinstance(block, Reasoning)]
    piece = _piece(
        message,
        content="".join(block.text for block in run if isinstance(block, TEXT_BLOCKS)),
        reasoning_content="".join(block.text for block in reasoning),
        tool_calls=[_tool_call(block) for block in run if isinstance(block, FunctionToolCall)],
    )
    signature = next((r.signature for r in reasoning if r.signature is not None), None)
    if signature is not None:
        piece.extra = {**(piece.extra or {}), REASONING_SIGNATURE_KEY: signature}
    return piece


def _tool_call(block: FunctionToolCall) -> ToolCall:
    return ToolCall(
        block.call_id,
        FunctionCall(block.name, block.arguments),
        index=block.index,
        extra=dict(block.extra) if block.extra is not None else None,
    )


def _piece(message: AgenticMessage, **fields: Any) -> Message:
    """A Message with the role, name and a copy of the extra of `message`."""
    extra = dict(message.extra) if message.extra is not None else None
    return Message(message.role, name=message.name, extra=extra, **fields)


def _misplaced(role: str, block: ContentBlock) -> ConversionError:
    return ConversionError(
        f"a {role} message cannot hold a {type(block).__name__} block",
        role=role,
        field="blocks",
    )
