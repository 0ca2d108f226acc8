"""AgenticMessage: one chat turn as an ordered list of typed content blocks.

Where a Message keeps text, reasoning and tool calls in separate fields, an AgenticMessage keeps
them as blocks in the order they were produced, so a reply such as "reasoning, text, call, text,
call" keeps its shape. `chainkit.schema.convert` maps between the two forms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainkit.schema._check import (
    NONE,
    OPTIONAL_DICT,
    OPTIONAL_STR,
    check_choice,
    check_fields,
    check_items,
    wrong,
)
from chainkit.schema._media import FilePayload, ImagePayload
from chainkit.schema.message import ROLES, ResponseMeta, Role

_TEXT = (("text", (str,), "a str"),)


@dataclass(slots=True)
class UserInputText:
    """Text given to the model: a user's words, or a system prompt."""

    text: str

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            check_fields(self, _TEXT)


@dataclass(slots=True)
class UserInputImage(ImagePayload):
    """An image given to the model: a URL, or base64 data with its MIME type (`ImagePayload`)."""


@dataclass(slots=True)
class UserInputFile(FilePayload):
    """A file given to the model, as base64 data or a server-side file id (`FilePayload`)."""


@dataclass(slots=True)
class AssistantGenText:
    """Text the model generated."""

    text: str

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            check_fields(self, _TEXT)


@dataclass(slots=True)
class Reasoning:
    """The model's thinking. `signature` is the provider's seal over `text`, when it sends one."""

    text: str
    signature: str | None = None

    def __post_init__(self) -> None:
        if not (type(self.text) is str and (self.signature is None or type(self.signature) is str)):
            check_fields(self, (*_TEXT, ("signature", OPTIONAL_STR, "a str or None")))


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

    def __post_init__(self) -> None:
        if not (
            type(self.call_id) is str
            and type(self.name) is str
            and type(self.arguments) is str
            and (self.index is None or type(self.index) is int)
            and (self.extra is None or type(self.extra) is dict)
        ):
            check_fields(
                self,
                (
                    ("call_id", (str,), "a str"),
                    ("name", (str,), "a str"),
                    ("arguments", (str,), "a str (the arguments' JSON text)"),
                    ("index", (int, NONE), "an int or None"),
                    ("extra", OPTIONAL_DICT, "a dict or None"),
                ),
            )


@dataclass(slots=True)
class FunctionToolResult:
    """What a tool returned for the call `call_id`; `name` is the tool's name when known."""

    call_id: str
    name: str | None
    content: str

    def __post_init__(self) -> None:
        if not (
            type(self.call_id) is str
            and (self.name is None or type(self.name) is str)
            and type(self.content) is str
        ):
            check_fields(
                self,
                (
                    ("call_id", (str,), "a str"),
                    ("name", OPTIONAL_STR, "a str or None"),
                    ("content", (str,), "a str"),
                ),
            )


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
_BLOCKS = (
    UserInputText,
    UserInputImage,
    UserInputFile,
    AssistantGenText,
    Reasoning,
    FunctionToolCall,
    FunctionToolResult,
)


@dataclass(slots=True)
class AgenticMessage:
    """One chat turn as content blocks. `name` is the speaker's name, as in Message."""

    role: Role
    blocks: list[ContentBlock] = field(default_factory=list)
    response_meta: ResponseMeta | None = None
    extra: dict[str, Any] | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        try:
            valid = self.role in ROLES
        except TypeError:  # unhashable: no role either
            valid = False
        if not (
            valid
            and type(self.blocks) is list
            and (self.response_meta is None or type(self.response_meta) is ResponseMeta)
            and (self.extra is None or type(self.extra) is dict)
            and (self.name is None or type(self.name) is str)
        ):
            check_choice("AgenticMessage", "role", self.role, ROLES)
            check_fields(
                self,
                (
                    ("blocks", (list,), "a list of content blocks"),
                    ("response_meta", (ResponseMeta, NONE), "a ResponseMeta or None"),
                    ("extra", OPTIONAL_DICT, "a dict or None"),
                    ("name", OPTIONAL_STR, "a str or None"),
                ),
            )
        if self.blocks:
            check_items(self, "blocks", _BLOCKS, "a content block")

    @classmethod
    def system(cls, text: str) -> AgenticMessage:
        return cls("system", [UserInputText(text)])

    @classmethod
    def user(cls, content: str | list[ContentBlock], *, name: str | None = None) -> AgenticMessage:
        """A user turn of text, or of blocks when `content` is a list of them."""
        if isinstance(content, str):
            return cls("user", [UserInputText(content)], name=name)
        if isinstance(content, list | tuple):
            return cls("user", list(content), name=name)
        raise wrong("AgenticMessage.user", "content", "a str or a list of content blocks", content)

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
        for argument, value in (("text", text), ("reasoning", reasoning)):
            if not isinstance(value, str):
                raise wrong("AgenticMessage.assistant", argument, "a str", value)
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
