"""Message: one turn of a chat, in the shape OpenAI-compatible servers speak.

`to_dict` and `from_dict` are the one place where chainkit data meets the wire shape. Every type
checks its fields when built, and `from_dict` checks what it converts: a value in the wrong
shape raises MessageFormatError naming the field, what was expected and what was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from chainkit.schema._check import (
    NONE,
    OPTIONAL_DICT,
    OPTIONAL_STR,
    check_choice,
    check_fields,
    check_items,
    mapping,
    split_data_url,
    wrong,
)
from chainkit.schema._media import FilePayload, ImagePayload
from chainkit.schema.errors import MessageFormatError

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset(("system", "user", "assistant", "tool"))


# Message, ToolCall and FunctionCall are built on every model call and stream chunk, so they
# check their arguments in a hand-written __init__: one expression over the arguments, and the
# slow check that names the bad field runs only when it fails.


@dataclass(slots=True, init=False)
class FunctionCall:
    """The function a model asks for; `arguments` is the JSON text exactly as the model wrote it."""

    name: str
    arguments: str

    def __init__(self, name: str = "", arguments: str = "") -> None:
        self.name = name
        self.arguments = arguments
        if not (type(name) is str and type(arguments) is str):
            check_fields(
                self,
                (
                    ("name", (str,), "a str"),
                    ("arguments", (str,), "a str (the arguments' JSON text)"),
                ),
            )


@dataclass(slots=True, init=False)
class ToolCall:
    """One tool call in an assistant message. `index` orders the chunks of a streamed call."""

    id: str
    function: FunctionCall
    type: str
    index: int | None
    extra: dict[str, Any] | None

    def __init__(
        self,
        id: str = "",
        function: FunctionCall | None = None,
        type: str = "function",
        index: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.function = FunctionCall() if function is None else function
        self.type = type
        self.index = index
        self.extra = extra
        # `.__class__`, as the parameters `id` and `type` hide the builtins.
        if not (
            id.__class__ is str
            and self.function.__class__ is FunctionCall
            and type.__class__ is str
            and (index is None or index.__class__ is int)
            and (extra is None or extra.__class__ is dict)
        ):
            check_fields(
                self,
                (
                    ("id", (str,), "a str"),
                    ("function", (FunctionCall,), "a FunctionCall"),
                    ("type", (str,), "a str"),
                    ("index", (int, NONE), "an int or None"),
                    ("extra", OPTIONAL_DICT, "a dict or None"),
                ),
            )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "function": {"name": self.function.name, "arguments": self.function.arguments},
        }
        if self.index is not None:
            data["index"] = self.index
        if self.extra is not None:
            data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """The call in `data`, the wire shape; a null id, name, arguments or type (as streamed
        chunks send them) counts as not given."""
        data = mapping("ToolCall", None, data)
        function = data.get("function")
        function = {} if function is None else mapping("ToolCall", "function", function)
        return cls(
            id=_or(data.get("id"), ""),
            function=FunctionCall(
                name=_or(function.get("name"), ""), arguments=_or(function.get("arguments"), "")
            ),
            type=_or(data.get("type"), "function"),
            index=data.get("index"),
            extra=_extra("ToolCall", data),
        )


@dataclass(slots=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    def __post_init__(self) -> None:
        if not (
            type(self.prompt_tokens) is int
            and type(self.completion_tokens) is int
            and type(self.total_tokens) is int
            and type(self.reasoning_tokens) is int
            and type(self.cached_tokens) is int
        ):
            check_fields(self, ((name, (int,), "an int") for name in _USAGE_FIELDS))

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
        """The counts in `data`; a missing or null count is 0, and a whole float (some servers
        send 12.0) is taken as the int it is."""
        data = mapping("TokenUsage", None, data)
        return cls(*(_whole_count(data.get(name)) for name in _USAGE_FIELDS))


_USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "reasoning_tokens",
    "cached_tokens",
)


def _whole_count(value: Any) -> Any:
    """A usage count as TokenUsage takes it: 0 for none, 12 for 12.0; anything else as it
    is, for TokenUsage to refuse."""
    if value is None:
        return 0
    if type(value) is float and value.is_integer():
        return int(value)
    return value  # checked by TokenUsage


@dataclass(slots=True)
class ResponseMeta:
    """What the server said about a reply, besides the reply itself: why it stopped, the
    tokens it counted, and the `model` that answered and the response's `id`, as it named
    them (a request for "gpt-4o" is answered by "gpt-4o-2024-08-06"). `cached` is True for a
    reply a response cache gave (`llms.cache`): the server said all this when it first
    answered, and nothing was paid for it this time."""

    finish_reason: str | None = None
    usage: TokenUsage | None = None
    model: str | None = None
    id: str | None = None
    cached: bool = False

    def __post_init__(self) -> None:
        if not (
            (self.finish_reason is None or type(self.finish_reason) is str)
            and (self.usage is None or type(self.usage) is TokenUsage)
            and (self.model is None or type(self.model) is str)
            and (self.id is None or type(self.id) is str)
            and type(self.cached) is bool
        ):
            check_fields(
                self,
                (
                    ("finish_reason", OPTIONAL_STR, "a str or None"),
                    ("usage", (TokenUsage, NONE), "a TokenUsage or None"),
                    ("model", OPTIONAL_STR, "a str or None"),
                    ("id", OPTIONAL_STR, "a str or None"),
                    ("cached", (bool,), "True or False"),
                ),
            )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.finish_reason is not None:
            data["finish_reason"] = self.finish_reason
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        if self.model is not None:
            data["model"] = self.model
        if self.id is not None:
            data["id"] = self.id
        if self.cached:
            data["cached"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResponseMeta:
        data = mapping("ResponseMeta", None, data)
        usage = data.get("usage")
        return cls(
            finish_reason=data.get("finish_reason"),
            usage=TokenUsage.from_dict(mapping("ResponseMeta", "usage", usage)) if usage else None,
            model=data.get("model"),
            id=data.get("id"),
            cached=data.get("cached", False),
        )


@dataclass(slots=True)
class TextPart:
    """A text part of multi-part user content."""

    text: str

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            check_fields(self, (("text", (str,), "a str"),))


@dataclass(slots=True)
class ImagePart(ImagePayload):
    """An image in user content: a URL, or base64 data with its MIME type (`ImagePayload`)."""


@dataclass(slots=True)
class FilePart(FilePayload):
    """A file in user content, as base64 data or a server-side file id (`FilePayload`)."""


ContentPart = TextPart | ImagePart | FilePart
_PARTS = (TextPart, ImagePart, FilePart)

_MESSAGE_FIELDS = (
    ("content", (str,), "a str"),
    ("tool_calls", (list,), "a list of ToolCall"),
    ("tool_call_id", OPTIONAL_STR, "a str or None"),
    ("tool_name", OPTIONAL_STR, "a str or None"),
    ("name", OPTIONAL_STR, "a str or None"),
    ("reasoning_content", (str,), "a str"),
    ("parts", (list,), "a list of TextPart, ImagePart or FilePart"),
    ("response_meta", (ResponseMeta, NONE), "a ResponseMeta or None"),
    ("extra", OPTIONAL_DICT, "a dict or None"),
)


@dataclass(slots=True, init=False)
class Message:
    """One chat message. `parts`, when set, is multi-part user content in place of `content`:
    a message may have one or the other, not both."""

    role: Role
    content: str
    tool_calls: list[ToolCall]
    tool_call_id: str | None
    tool_name: str | None
    name: str | None
    reasoning_content: str
    parts: list[ContentPart]
    response_meta: ResponseMeta | None
    extra: dict[str, Any] | None

    def __init__(
        self,
        role: Role,
        content: str = "",
        tool_calls: list[ToolCall] | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        name: str | None = None,
        reasoning_content: str = "",
        parts: list[ContentPart] | None = None,
        response_meta: ResponseMeta | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.role = role
        self.content = content
        self.tool_calls = [] if tool_calls is None else tool_calls
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.name = name
        self.reasoning_content = reasoning_content
        self.parts = [] if parts is None else parts
        self.response_meta = response_meta
        self.extra = extra
        try:
            valid = role in ROLES
        except TypeError:  # unhashable: no role either
            valid = False
        if not (
            valid
            and type(content) is str
            and (tool_calls is None or type(tool_calls) is list)
            and (tool_call_id is None or type(tool_call_id) is str)
            and (tool_name is None or type(tool_name) is str)
            and (name is None or type(name) is str)
            and type(reasoning_content) is str
            and (parts is None or type(parts) is list)
            and (response_meta is None or type(response_meta) is ResponseMeta)
            and (extra is None or type(extra) is dict)
        ):
            check_choice("Message", "role", role, ROLES)
            check_fields(self, _MESSAGE_FIELDS)
        if tool_calls:
            check_items(self, "tool_calls", ToolCall, "a ToolCall")
        if parts:
            check_items(self, "parts", _PARTS, "a TextPart, ImagePart or FilePart")
            if content:
                raise MessageFormatError(
                    "Message has both content and parts; parts replace content on the wire, "
                    "so give the text as a TextPart",
                    field="content",
                )

    @classmethod
    def system(cls, content: str) -> Message:
        if type(content) is str:
            return _checked(cls, "system", content, None, "", None)
        return cls("system", content)

    @classmethod
    def user(cls, content: str | list[ContentPart], *, name: str | None = None) -> Message:
        """A user message of text, or of content parts when `content` is a list of them."""
        if type(content) is str and (name is None or type(name) is str):
            return _checked(cls, "user", content, name, "", None)
        if isinstance(content, str):
            return cls("user", content, name=name)
        if isinstance(content, list | tuple):
            return cls("user", parts=list(content), name=name)
        raise wrong("Message.user", "content", "a str or a list of content parts", content)

    @classmethod
    def assistant(
        cls,
        content: str = "",
        tool_calls: list[ToolCall] | None = None,
        *,
        reasoning_content: str = "",
        response_meta: ResponseMeta | None = None,
    ) -> Message:
        if (
            type(content) is str
            and tool_calls is None
            and type(reasoning_content) is str
            and (response_meta is None or type(response_meta) is ResponseMeta)
        ):
            return _checked(cls, "assistant", content, None, reasoning_content, response_meta)
        return cls(
            "assistant",
            content,
            tool_calls=tool_calls,
            reasoning_content=reasoning_content,
            response_meta=response_meta,
        )

    @classmethod
    def tool(cls, content: str, tool_call_id: str, tool_name: str | None = None) -> Message:
        if not isinstance(tool_call_id, str):
            raise wrong("Message.tool", "tool_call_id", "a str", tool_call_id)
        return cls("tool", content, tool_call_id=tool_call_id, tool_name=tool_name)

    def to_dict(self, *, request: bool = False) -> dict[str, Any]:
        """The OpenAI chat wire shape.

        By default every field is kept, so `from_dict(m.to_dict()) == m`. With `request=True`
        only what a chat-completions request accepts is kept (no tool_name, reasoning or meta).
        """
        data: dict[str, Any] = {"role": self.role}
        if self.parts:
            data["content"] = [_part_to_dict(part, request) for part in self.parts]
        else:
            data["content"] = self.content
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
        if self.extra is not None:
            data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """The message in `data`, the wire shape. Null content, tool calls and reasoning (as
        servers send them) count as empty; keys chainkit does not know are ignored."""
        data = mapping("Message", None, data)
        check_choice("Message", "role", data.get("role"), ROLES)
        content = data.get("content")
        parts: list[ContentPart] = []
        if isinstance(content, list):
            parts = [_part_from_dict(position, part) for position, part in enumerate(content)]
            content = ""
        elif content is not None and not isinstance(content, str):
            raise wrong("Message", "content", "a str, a list of content parts or None", content)
        calls = data.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise wrong("Message", "tool_calls", "a list of tool calls or None", calls)
        meta = data.get("response_meta")
        return cls(
            role=data["role"],
            content=content or "",
            tool_calls=[
                ToolCall.from_dict(mapping("Message", f"tool_calls[{position}]", call))
                for position, call in enumerate(calls or ())
            ],
            tool_call_id=data.get("tool_call_id"),
            tool_name=data.get("tool_name"),
            name=data.get("name"),
            reasoning_content=_or(data.get("reasoning_content"), ""),
            parts=parts,
            response_meta=(
                None
                if meta is None
                else ResponseMeta.from_dict(mapping("Message", "response_meta", meta))
            ),
            extra=_extra("Message", data),
        )


def _checked(
    cls: type[Message],
    role: Role,
    content: str,
    name: str | None,
    reasoning_content: str,
    response_meta: ResponseMeta | None,
) -> Message:
    """A message from arguments its caller has checked: the constructors that models and
    prompts call on every step (`Message.user(text)`, `Message.assistant(text)`) build through
    here and skip the checks of the fields they leave empty. Positional arguments, as keywords
    would cost more than the checks saved."""
    message = object.__new__(cls)
    message.role = role
    message.content = content
    message.tool_calls = []
    message.tool_call_id = None
    message.tool_name = None
    message.name = name
    message.reasoning_content = reasoning_content
    message.parts = []
    message.response_meta = response_meta
    message.extra = None
    return message


def _or(value: Any, default: str) -> Any:
    """`value`, or `default` when it is None; any other type is left for the constructor to
    refuse."""
    return default if value is None else value


def _extra(owner: str, data: dict[str, Any]) -> dict[str, Any] | None:
    extra = data.get("extra")
    return None if extra is None else dict(mapping(owner, "extra", extra))


def _part_to_dict(part: ContentPart, request: bool) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        image: dict[str, Any] = {"url": _data_url(part.mime_type, part.base64_data, part.url)}
        if part.detail is not None:
            image["detail"] = part.detail
        if part.url is not None and part.mime_type is not None and not request:
            image["mime_type"] = part.mime_type
        return {"type": "image_url", "image_url": image}
    file: dict[str, Any] = {}
    if part.base64_data is not None:
        # A data URL may leave its media type out, as a FilePart may.
        file["file_data"] = _data_url(part.mime_type, part.base64_data, None)
    elif part.mime_type is not None and not request:
        file["mime_type"] = part.mime_type
    if part.file_id is not None:
        file["file_id"] = part.file_id
    if part.filename is not None:
        file["filename"] = part.filename
    return {"type": "file", "file": file}


def _data_url(mime_type: str | None, base64_data: str | None, url: str | None) -> str:
    if base64_data is None:
        assert url is not None  # ImagePart holds one or the other
        return url
    return f"data:{mime_type or ''};base64,{base64_data}"


def _part_from_dict(position: int, data: Any) -> ContentPart:
    owner = f"content[{position}]"
    data = mapping("Message", owner, data)
    kind = data.get("type")
    if kind == "text":
        return TextPart(_or(data.get("text"), ""))
    if kind == "image_url":
        image = mapping("Message", f"{owner}.image_url", data.get("image_url"))
        return ImagePart(
            url=image.get("url"), detail=image.get("detail"), mime_type=image.get("mime_type")
        )
    if kind == "file":
        file = mapping("Message", f"{owner}.file", data.get("file"))
        file_data, mime_type = file.get("file_data"), file.get("mime_type")
        inline = split_data_url(file_data) if isinstance(file_data, str) else None
        if inline is not None:
            mime_type, file_data = inline[0] or None, inline[1]
        return FilePart(
            base64_data=file_data,
            file_id=file.get("file_id"),
            filename=file.get("filename"),
            mime_type=mime_type,
        )
    raise MessageFormatError(
        f"Message.{owner} has unknown type {kind!r}; expected 'text', 'image_url' or 'file'",
        field=owner,
    )
