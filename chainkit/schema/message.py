"""Message: one turn of a chat, in the shape OpenAI-compatible servers speak.

`to_dict` and `from_dict` are the one place where chainkit data meets the wire shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from chainkit.schema.errors import MessageFormatError as MessageFormatError

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset(("system", "user", "assistant", "tool"))


@dataclass(slots=True)
class FunctionCall:
    """The function a model asks for; `arguments` is the JSON text exactly as the model wrote it."""

    name: str = ""
    arguments: str = ""


@dataclass(slots=True)
class ToolCall:
    """One tool call in an assistant message. `index` orders the chunks of a streamed call."""

    id: str = ""
    function: FunctionCall = field(default_factory=FunctionCall)
    type: str = "function"
    index: int | None = None
    extra: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "function": {"name": self.function.name, "arguments": self.function.arguments},
        }
        if self.index is not None:
            data["index"] = self.index
        if self.extra:
            data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        function = data.get("function") or {}
        return cls(
            id=data.get("id") or "",
            function=FunctionCall(
                name=function.get("name") or "", arguments=function.get("arguments") or ""
            ),
            type=data.get("type") or "function",
            index=data.get("index"),
            extra=dict(data["extra"]) if data.get("extra") else None,
        )


@dataclass(slots=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        data = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.reasoning_tokens:
            data["reasoning_tokens"] = self.reasoning_tokens
        if self.cached_tokens:
            data["cached_tokens"] = self.cached_tokens
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenUsage:
        return cls(
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            total_tokens=int(data.get("total_tokens") or 0),
            reasoning_tokens=int(data.get("reasoning_tokens") or 0),
            cached_tokens=int(data.get("cached_tokens") or 0),
        )


@dataclass(slots=True)
class ResponseMeta:
    """What the server said about a reply, besides the reply itself."""

    finish_reason: str | None = None
    usage: TokenUsage | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.finish_reason is not None:
            data["finish_reason"] = self.finish_reason
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResponseMeta:
        usage = data.get("usage")
        return cls(
            finish_reason=data.get("finish_reason"),
            usage=TokenUsage.from_dict(usage) if usage else None,
        )


@dataclass(slots=True)
class TextPart:
    """A text part of multi-part user content."""

    text: str


@dataclass(slots=True)
class ImagePart:
    """An image in user content: a URL, or base64 data with its MIME type."""

    url: str | None = None
    base64_data: str | None = None
    mime_type: str | None = None
    detail: str | None = None

    def __post_init__(self) -> None:
        if (self.url is None) == (self.base64_data is None):
            raise MessageFormatError("ImagePart needs either url or base64_data, not both")
        if self.base64_data is not None and not self.mime_type:
            raise MessageFormatError("ImagePart with base64_data needs its mime_type")


@dataclass(slots=True)
class FilePart:
    """A file in user content, as base64 data or a server-side file id."""

    base64_data: str | None = None
    file_id: str | None = None
    filename: str | None = None
    mime_type: str | None = None


ContentPart = TextPart | ImagePart | FilePart


@dataclass(slots=True)
class Message:
    """One chat message. `parts`, when set, is multi-part user content and replaces `content`."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    name: str | None = None
    reasoning_content: str = ""
    parts: list[ContentPart] = field(default_factory=list)
    response_meta: ResponseMeta | None = None
    extra: dict[str, Any] | None = None

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str | list[ContentPart], *, name: str | None = None) -> Message:
        if isinstance(content, str):
            return cls("user", content, name=name)
        return cls("user", parts=list(content), name=name)

    @classmethod
    def assistant(
        cls,
        content: str = "",
        tool_calls: list[ToolCall] | None = None,
        *,
        reasoning_content: str = "",
        response_meta: ResponseMeta | None = None,
    ) -> Message:
        return cls(
            "assistant",
            content,
            tool_calls=tool_calls or [],
            reasoning_content=reasoning_content,
            response_meta=response_meta,
        )

    @classmethod
    def tool(cls, content: str, tool_call_id: str, tool_name: str | None = None) -> Message:
        return cls("tool", content, tool_call_id=tool_call_id, tool_name=tool_name)

    def to_dict(self, *, request: bool = False) -> dict[str, Any]:
        """The OpenAI chat wire shape.

        By default every field is kept, so `from_dict(m.to_dict()) == m`. With `request=True`
        only what a chat-completions request accepts is kept (no tool_name, reasoning or meta).
        """
        data: dict[str, Any] = {"role": self.role}
        data["content"] = [_part_to_dict(p) for p in self.parts] if self.parts else self.content
        if self.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
            if request:
                for call in data["tool_calls"]:
                    call.pop("index", None)
                    call.pop("extra", None)
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if request:
            return data
        if self.tool_name is not None:
            data["tool_name"] = self.tool_name
        if self.reasoning_content:
            data["reasoning_content"] = self.reasoning_content
        if self.response_meta is not None:
            data["response_meta"] = self.response_meta.to_dict()
        if self.extra:
            data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        role = data.get("role")
        if role not in ROLES:
            raise MessageFormatError(f"message role must be one of {sorted(ROLES)}, got {role!r}")
        content = data.get("content")
        parts: list[ContentPart] = []
        if isinstance(content, list):
            parts = [_part_from_dict(p) for p in content]
            content = ""
        meta = data.get("response_meta")
        return cls(
            role=role,
            content=content or "",
            tool_calls=[ToolCall.from_dict(c) for c in data.get("tool_calls") or ()],
            tool_call_id=data.get("tool_call_id"),
            tool_name=data.get("tool_name"),
            name=data.get("name"),
            reasoning_content=data.get("reasoning_content") or "",
            parts=parts,
            response_meta=ResponseMeta.from_dict(meta) if meta is not None else None,
            extra=dict(data["extra"]) if data.get("extra") else None,
        )


def _part_to_dict(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        url = part.url
        if url is None:
            url = f"data:{part.mime_type};base64,{part.base64_data}"
        image: dict[str, Any] = {"url": url}
        if part.detail is not None:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    file: dict[str, Any] = {}
    if part.base64_data is not None:
        # A data URL may leave its media type out, as a FilePart may.
        file["file_data"] = f"data:{part.mime_type or ''};base64,{part.base64_data}"
    if part.file_id is not None:
        file["file_id"] = part.file_id
    if part.filename is not None:
        file["filename"] = part.filename
    return {"type": "file", "file": file}


def _split_data_url(url: str) -> tuple[str, str] | None:
    """`data:<mime>;base64,<data>` -> (mime, data); None for any other URL."""
    if not url.startswith("data:"):
        return None
    header, sep, payload = url[5:].partition(",")
    if not sep or not header.endswith(";base64"):
        return None
    return header[: -len(";base64")], payload


def _part_from_dict(data: dict[str, Any]) -> ContentPart:
    kind = data.get("type")
    if kind == "text":
        return TextPart(data.get("text") or "")
    if kind == "image_url":
        image = data.get("image_url") or {}
        url = image.get("url") or ""
        detail = image.get("detail")
        inline = _split_data_url(url)
        if inline is not None:
            return ImagePart(base64_data=inline[1], mime_type=inline[0], detail=detail)
        return ImagePart(url=url, detail=detail)
    if kind == "file":
        file = data.get("file") or {}
        inline = _split_data_url(file.get("file_data") or "")
        return FilePart(
            base64_data=inline[1] if inline else None,
            file_id=file.get("file_id"),
            filename=file.get("filename"),
            mime_type=(inline[0] or None) if inline else None,
        )
    raise MessageFormatError(
        f"unknown content part type {kind!r}; expected text, image_url or file"
    )
