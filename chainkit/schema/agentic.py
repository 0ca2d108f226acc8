"""AgenticMessage: one chat turn as an ordered list of typed content blocks.

Where a Message keeps text, reasoning and tool calls in separate fields, an AgenticMessage keeps
them as blocks in the order they were produced, so a reply such as "reasoning, text, call, text,
call" keeps its shape. `chainkit.schema.convert` maps between the two forms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainkit.schema.message import ResponseMeta, Role


@dataclass(slots=True)
class UserInputText:
    """Text given to the model: a user's words, or a system prompt."""

    text: str


@dataclass(slots=True)
class UserInputImage:
    """An image given to the model: a URL, or base64 data with its MIME type."""

    url: str | None = None
    base64_data: str | None = None
    mime_type: str | None = None
    detail: str | None = None


@dataclass(slots=True)
class UserInputFile:
    """A file given to the model, as base64 data or a server-side file id."""

    base64_data: str | None = None
    file_id: str | None = None
    filename: str | None = None
    mime_type: str | None = None


@dataclass(slots=True)
class AssistantGenText:
    """Text the model generated."""

    text: str


@dataclass(slots=True)
class Reasoning:
    """The model's thinking. `signature` is the provider's seal over `text`, when it sends one."""

    text: str
    signature: str | None = None


@dataclass(slots=True)
class FunctionToolCall:
    """A function the model asks to call; `arguments` is its JSON text as the model wrote it.

    `index` orders the chunks of a streamed call; `extra` holds provider data kept with the call.
    """

    call_id: str
    name: str
    arguments: str
    index: int | None = None
    extra: dict[str, Any] | None = None


@dataclass(slots=True)
class FunctionToolResult:
    """What a tool returned for the call `call_id`; `name` is the tool's name when known."""

    call_id: str
    name: str | None
    content: str


ContentBlock = (
    UserInputText
    | UserInputImage
    | UserInputFile
    | AssistantGenText
    | Reasoning
    | FunctionToolCall
    | FunctionToolResult
)
TEXT_BLOCKS = (UserInputText, AssistantGenText)


@dataclass(slots=True)
class AgenticMessage:
    """One chat turn as content blocks. `name` is the speaker's name, as in Message."""

    role: Role
    blocks: list[ContentBlock] = field(default_factory=list)
    response_meta: ResponseMeta | None = None
    extra: dict[str, Any] | None = None
    name: str | None = None

    @classmethod
    def system(cls, text: str) -> AgenticMessage:
        return cls("system", [UserInputText(text)])

    @classmethod
    def user(cls, content: str | list[ContentBlock], *, name: str | None = None) -> AgenticMessage:
        blocks: list[ContentBlock] = (
            [UserInputText(content)] if isinstance(content, str) else list(content)
        )
        return cls("user", blocks, name=name)

    @classmethod
    def assistant(
        cls,
        text: str = "",
        tool_calls: list[FunctionToolCall] | None = None,
        *,
        reasoning: str = "",
        response_meta: ResponseMeta | None = None,
    ) -> AgenticMessage:
        """An assistant turn with its blocks in reply order: reasoning, text, tool calls."""
        blocks: list[ContentBlock] = []
        if reasoning:
            blocks.append(Reasoning(reasoning))
        if text:
            blocks.append(AssistantGenText(text))
        blocks.extend(tool_calls or ())
        return cls("assistant", blocks, response_meta=response_meta)

    @classmethod
    def tool_result(cls, call_id: str, name: str | None, content: str) -> AgenticMessage:
        return cls("tool", [FunctionToolResult(call_id, name, content)])

    @property
    def text(self) -> str:
        """The text blocks joined, without reasoning."""
        return "".join(block.text for block in self.blocks if isinstance(block, TEXT_BLOCKS))

    @property
    def tool_calls(self) -> list[FunctionToolCall]:
        return [block for block in self.blocks if isinstance(block, FunctionToolCall)]
