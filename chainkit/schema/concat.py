"""Joining the chunks of a streamed reply into one message, following Eino's ConcatMessages.

The rules, shared by Message and AgenticMessage chunks:

- all chunks have the same role; `name` (and for Messages `tool_call_id` and `tool_name`) must
  agree: the first non-empty value is kept and a different non-empty value raises ConcatError;
- text and reasoning are concatenated. For content parts and blocks, a chunk's first item
  continues the previous chunk's last item when both are text of the same kind (TextPart,
  UserInputText, AssistantGenText, Reasoning not yet sealed by a signature, FunctionToolResult
  of the same call); every other item is kept as a new one;
- a tool-call chunk joins the call with its `index`; without an index (servers often send it
  in a call's first chunk only), the call with its id; with neither, the call the previous
  tool-call chunk joined. A merged call's id and name must agree like `name` above, and so must
  its type, where "function", the type a chunk that names none is given, agrees with any; its
  arguments are concatenated. Message tool calls come out ordered as Eino orders them (calls
  without index first, then by index); tool-call blocks stay where each call first appeared;
- `finish_reason` is the last non-empty one; usage takes the maximum of each field, as streams
  that report usage repeat running totals and may end with a chunk of zeros;
- `extra` dicts are merged key by key: str values concatenated, dicts merged the same way,
  None ignored, anything else replaced by the later value.

Nothing a later chunk leaves empty (a missing id, a None, an empty string, a zero count) erases
what an earlier chunk said, and every joined value is gathered as pieces and joined once, so
the work grows linearly with the number of chunks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from chainkit.schema._check import check_sequence
from chainkit.schema.agentic import (
    AgenticMessage,
    AssistantGenText,
    ContentBlock,
    FunctionToolCall,
    FunctionToolResult,
    Reasoning,
    UserInputText,
)
from chainkit.schema.errors import ConcatError as ConcatError
from chainkit.schema.message import (
    ContentPart,
    FunctionCall,
    Message,
    ResponseMeta,
    Role,
    TextPart,
    TokenUsage,
    ToolCall,
)

_Text = TypeVar("_Text", str, str | None)


def concat_messages(chunks: Sequence[Message]) -> Message:
    """The Message the chunks of a stream add up to."""
    check_sequence("concat_messages", "chunks", chunks, Message)
    common = _Common.of(chunks)
    content: list[str] = []
    reasoning: list[str] = []
    parts = _Items()
    calls = _Calls()
    tool_call_id = tool_name = None
    for chunk in chunks:
        common.add(chunk)
        if chunk.content:
            content.append(chunk.content)
        reasoning.append(chunk.reasoning_content)
        parts.extend(chunk.parts)
        for call in chunk.tool_calls:
            calls.add(
                call.index,
                call.id,
                call.function.name,
                call.function.arguments,
                call.extra,
                call_type=call.type,
            )
        tool_call_id = _agree("tool_call_id", tool_call_id, chunk.tool_call_id)
        tool_name = _agree("tool_name", tool_name, chunk.tool_name)
    # Eino's order: calls without index first, in arrival order, then by index.
    ordered = sorted(calls.calls, key=lambda call: (call.index is not None, call.index or 0))
    merged_parts = parts.result()
    if content and merged_parts:
        raise ConcatError(
            "cannot concat chunks that give both content and content parts; parts replace "
            "content in a Message",
            field="content",
        )
    return Message(
        common.role,
        "".join(content),
        tool_calls=[call.tool_call() for call in ordered],
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        name=common.name,
        reasoning_content="".join(reasoning),
        parts=merged_parts,
        response_meta=common.response_meta,
        extra=common.extra_result(),
    )


def concat_agentic_messages(chunks: Sequence[AgenticMessage]) -> AgenticMessage:
    """The AgenticMessage the chunks of a stream add up to."""
    check_sequence("concat_agentic_messages", "chunks", chunks, AgenticMessage)
    common = _Common.of(chunks)
    blocks = _Items()
    calls = _Calls()
    for chunk in chunks:
        common.add(chunk)
        for position, block in enumerate(chunk.blocks):
            if isinstance(block, FunctionToolCall):
                new_call = calls.add(
                    block.index, block.call_id, block.name, block.arguments, block.extra
                )
                if new_call is not None:
                    blocks.place(new_call)
            else:
                blocks.add(block, first=position == 0)
    return AgenticMessage(
        common.role,
        [item.block() if isinstance(item, _Call) else item for item in blocks.result()],
        response_meta=common.response_meta,
        extra=common.extra_result(),
        name=common.name,
    )


def _agree(field: str, current: _Text, new: _Text) -> _Text:
    """The first non-empty value of `field`; ConcatError when a later one differs."""
    if not new or new == current:
        return current
    if not current:
        return new
    raise ConcatError.conflict(field, current, new)


@dataclass(slots=True)
class _Common:
    """What every message kind merges the same way: role, name, response meta and extra."""

    role: Role
    name: str | None = None
    response_meta: ResponseMeta | None = None
    extra: _Extra | None = None

    @classmethod
    def of(cls, chunks: Sequence[Message] | Sequence[AgenticMessage]) -> _Common:
        if not chunks:
            raise ConcatError("no chunks to concatenate")
        return cls(chunks[0].role)

    def add(self, chunk: Message | AgenticMessage) -> None:
        if chunk.role != self.role:
            raise ConcatError.conflict("role", self.role, chunk.role)
        self.name = _agree("name", self.name, chunk.name)
        if chunk.response_meta is not None:
            self.response_meta = _merge_meta(self.response_meta, chunk.response_meta)
        if chunk.extra is not None:
            if self.extra is None:
                self.extra = _Extra()
            self.extra.add(chunk.extra)

    def extra_result(self) -> dict[str, Any] | None:
        return None if self.extra is None else self.extra.result()


def _merge_meta(merged: ResponseMeta | None, new: ResponseMeta) -> ResponseMeta:
    if merged is None:
        merged = ResponseMeta()
    if new.finish_reason or merged.finish_reason is None:
        merged.finish_reason = new.finish_reason
    # Every chunk of a stream names the same model and response: the first one that does.
    merged.model = merged.model or new.model
    merged.id = merged.id or new.id
    if new.usage is not None:
        old = merged.usage or TokenUsage()
        merged.usage = TokenUsage(
            **{
                f.name: max(getattr(old, f.name), getattr(new.usage, f.name))
                for f in dataclasses.fields(TokenUsage)
            }
        )
    return merged


class _Pieces(list[str]):
    """The str values one extra key was given, to be joined once."""

    __slots__ = ()


class _Extra:
    """`extra` dicts merged key by key, as the module docstring says. A chunk's own dicts are
    never changed: nested dicts are merged into new _Extra, str values into _Pieces."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def add(self, new: Mapping[str, Any]) -> None:
        values = self._values
        for key, value in new.items():
            old = values.get(key)
            if isinstance(value, str):
                if isinstance(old, _Pieces):
                    old.append(value)
                else:
                    values[key] = _Pieces((value,))
            elif isinstance(value, Mapping):
                if not isinstance(old, _Extra):
                    old = values[key] = _Extra()
                old.add(value)
            elif value is not None or key not in values:
                values[key] = value

    def result(self) -> dict[str, Any]:
        return {key: _joined(value) for key, value in self._values.items()}


def _joined(value: Any) -> Any:
    if isinstance(value, _Pieces):
        return "".join(value)
    if isinstance(value, _Extra):
        return value.result()
    return value


@dataclass(slots=True)
class _Call:
    """A tool call gathered from its chunks."""

    index: int | None
    call_id: str
    name: str
    type: str
    arguments: list[str]
    extra: _Extra | None

    def tool_call(self) -> ToolCall:
        return ToolCall(
            self.call_id,
            FunctionCall(self.name, "".join(self.arguments)),
            type=self.type,
            index=self.index,
            extra=self._extra(),
        )

    def block(self) -> FunctionToolCall:
        return FunctionToolCall(
            self.call_id, self.name, "".join(self.arguments), index=self.index, extra=self._extra()
        )

    def _extra(self) -> dict[str, Any] | None:
        return None if self.extra is None else self.extra.result()


_DEFAULT_CALL_TYPE = "function"


class _Calls:
    """Tool-call chunks grouped into calls: by index, else by id, else onto the open call (the
    one the previous tool-call chunk joined)."""

    __slots__ = ("_by_id", "_by_index", "_open", "calls")

    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._by_id: dict[str, _Call] = {}
        self._open: _Call | None = None

    def add(
        self,
        index: int | None,
        call_id: str,
        name: str,
        arguments: str,
        extra: Mapping[str, Any] | None,
        *,
        call_type: str = _DEFAULT_CALL_TYPE,
    ) -> _Call | None:
        """Adds one chunk; returns the call it starts, or None when it continued one."""
        call = self._find(index, call_id)
        started = call is None
        if call is None:
            call = _Call(index, call_id, name, call_type, [], None)
            self.calls.append(call)
        else:
            call.call_id = _agree("tool call id", call.call_id, call_id)
            call.name = _agree("tool call name", call.name, name)
            call.type = _agree_type(call.type, call_type)
            if call.index is None:
                call.index = index
        if call.index is not None:
            self._by_index.setdefault(call.index, call)
        if call.call_id:
            self._by_id.setdefault(call.call_id, call)
        call.arguments.append(arguments)
        if extra is not None:
            if call.extra is None:
                call.extra = _Extra()
            call.extra.add(extra)
        self._open = call
        return call if started else None

    def _find(self, index: int | None, call_id: str) -> _Call | None:
        if index is not None and index in self._by_index:
            return self._by_index[index]
        if call_id:
            call = self._by_id.get(call_id)
            # The same id under another index is another call (and a server's mistake).
            if call is not None and (index is None or call.index is None):
                return call
            return None
        return self._open if index is None else None


def _agree_type(current: str, new: str) -> str:
    """The call's type: a chunk that names none is given "function", which agrees with any."""
    if new in (_DEFAULT_CALL_TYPE, current):
        return current
    if current == _DEFAULT_CALL_TYPE:
        return new
    raise ConcatError.conflict("tool call type", current, new)


_StreamItem = ContentPart | ContentBlock | _Call


class _Items:
    """Content parts or blocks as chunks arrive: text items that continue the previous chunk's
    last item are gathered as pieces and joined once, at the end."""

    __slots__ = ("_items", "_pieces")

    def __init__(self) -> None:
        self._items: list[_StreamItem] = []
        # position -> (the item as merged so far, the text pieces it will be given)
        self._pieces: dict[int, tuple[_Growing, list[str]]] = {}

    def extend(self, items: Iterable[ContentPart]) -> None:
        for position, item in enumerate(items):
            self.add(item, first=position == 0)

    def add(self, item: ContentPart | ContentBlock, *, first: bool) -> None:
        last = len(self._items) - 1
        continued = _continued(self._items[last], item) if first and last >= 0 else None
        if continued is None:
            self._items.append(item)
            return
        merged, text = continued
        pieces = self._pieces[last][1] if last in self._pieces else [_text_of(merged)]
        pieces.append(text)
        self._pieces[last] = (merged, pieces)
        self._items[last] = merged

    def place(self, call: _Call) -> None:
        """Keeps a tool call's position among the items; the call itself fills in later."""
        self._items.append(call)

    def result(self) -> list[Any]:
        for position, (item, pieces) in self._pieces.items():
            self._items[position] = _with_text(item, "".join(pieces))
        return self._items


_JoinsAlways = (TextPart, UserInputText, AssistantGenText)
_Growing = TextPart | UserInputText | AssistantGenText | Reasoning | FunctionToolResult


def _continued(
    previous: _StreamItem, item: ContentPart | ContentBlock
) -> tuple[_Growing, str] | None:
    """`previous` ready to take `item` as its continuation, with `item`'s text to append; None
    when `item` starts an item of its own."""
    if isinstance(previous, Reasoning) and isinstance(item, Reasoning):
        # A signature closes a reasoning block; text after it is a new block.
        if previous.signature is not None:
            return None
        return dataclasses.replace(previous, signature=item.signature), item.text
    if isinstance(previous, FunctionToolResult) and isinstance(item, FunctionToolResult):
        if previous.call_id != item.call_id:
            return None
        name = _agree("tool result name", previous.name, item.name)
        return dataclasses.replace(previous, name=name), item.content
    if isinstance(previous, _JoinsAlways) and type(item) is type(previous):
        return previous, item.text
    return None


def _text_of(item: _Growing) -> str:
    return item.content if isinstance(item, FunctionToolResult) else item.text


def _with_text(item: _Growing, text: str) -> _Growing:
    if isinstance(item, FunctionToolResult):
        return dataclasses.replace(item, content=text)
    return dataclasses.replace(item, text=text)
