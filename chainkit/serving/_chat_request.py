"""A chat-completions request body read as OpenAI reads it: the conversation (text only), and
whether to stream. What the served agent cannot honour is refused by name (400, as OpenAI
answers a bad request), never silently dropped: tools of the client's (the agent has its
own), more than one choice, log probabilities, a structured response format, images and audio.
The sampling settings a client sends by habit (temperature, max_tokens, stop, ...) are taken
and ignored: the agent's own model settings decide them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chainkit.schema import Message
from chainkit.serving._body import _kind
from chainkit.serving._problems import Problem

_IGNORED = frozenset(
    {
        "frequency_penalty",
        "logit_bias",
        "max_completion_tokens",
        "max_tokens",
        "metadata",
        "parallel_tool_calls",
        "presence_penalty",
        "prompt_cache_key",
        "reasoning_effort",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "temperature",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
    }
)
"""Fields taken and ignored: settings of sampling or bookkeeping the agent's model decides."""

_NOT_NULL_REFUSED = {
    "tools": "the served agent calls its own tools; a client's tools are not taken",
    "functions": "the served agent calls its own tools; a client's functions are not taken",
    "function_call": "the served agent calls its own tools; function_call is not taken",
    "audio": "the served agent answers in text; audio output is not taken",
    "prediction": "predicted outputs are not taken by the served agent",
    "web_search_options": "web search is not taken; the agent has its own tools",
}
"""Fields refused unless null, with why."""

_TAKEN = frozenset(
    {
        *_NOT_NULL_REFUSED,
        "messages",
        "model",
        "stream",
        "stream_options",
        "n",
        "logprobs",
        "response_format",
        "tool_choice",
        "modalities",
    }
)
"""The fields read (those refused unless null or neutral among them)."""

_ROLES_TAKEN = frozenset({"system", "developer", "user", "assistant"})
_MESSAGE_FIELDS = frozenset({"role", "content", "name"})
_ASSISTANT_FIELDS = frozenset({"refusal", "tool_calls", "function_call", "audio"})


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """What a chat-completions body asks for: the conversation (its last message the user's),
    the model name it gave (None when it gave none), and whether and how to stream."""

    messages: list[Message]
    model: str | None
    stream: bool
    include_usage: bool


def chat_request(body: Mapping[str, Any]) -> ChatRequest:
    """The request in `body` (a JSON object); a Problem (400) naming the first field that is
    wrong, unknown or asks for what the agent cannot do."""
    for name in body:
        if name not in _TAKEN and name not in _IGNORED:
            raise refused(f"unrecognized request argument supplied: {name}", name)
    for name, why in _NOT_NULL_REFUSED.items():
        if body.get(name) is not None:
            raise refused(why, name)
    _check_neutral(body)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise refused(f"model must be a string, got {_kind(model)}", "model")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise refused(f"stream must be a boolean, got {_kind(stream)}", "stream")
    return ChatRequest(
        messages=_messages(body.get("messages")),
        model=model,
        stream=bool(stream),
        include_usage=_include_usage(body.get("stream_options"), bool(stream)),
    )


class Refused(Problem):
    """A 400 for the request's field `param` (OpenAI's error names it)."""

    def __init__(self, message: str, param: str | None, code: str) -> None:
        super().__init__(400, code, message)
        self.param = param


def refused(message: str, param: str | None = None, code: str = "invalid_request") -> Refused:
    return Refused(message, param, code)


def _check_neutral(body: Mapping[str, Any]) -> None:
    """Refuses the fields that, set to anything but their default, ask for what an agent's
    answer cannot be: several choices, log probabilities, JSON, a tool call, non-text output."""
    if body.get("n") not in (None, 1) or isinstance(body.get("n"), bool):
        raise refused("n must be 1: the agent gives one answer", "n")
    if body.get("logprobs") not in (None, False):
        raise refused("logprobs are not taken: an agent's answer has none", "logprobs")
    response_format = body.get("response_format")
    if response_format is not None and response_format != {"type": "text"}:
        raise refused(
            "response_format other than text is not taken: the agent's own settings decide "
            "its answer's shape",
            "response_format",
        )
    if body.get("tool_choice") not in (None, "none", "auto"):
        raise refused("tool_choice is not taken: the agent chooses its own tools", "tool_choice")
    if body.get("modalities") not in (None, ["text"]):
        raise refused("modalities must be ['text']: the agent answers in text", "modalities")


def _include_usage(options: Any, stream: bool) -> bool:
    if options is None:
        return False
    if not stream:
        raise refused("stream_options is only taken with stream: true", "stream_options")
    if not isinstance(options, dict):
        raise refused(f"stream_options must be an object, got {_kind(options)}", "stream_options")
    for name, value in options.items():
        if name not in ("include_usage", "include_obfuscation"):
            raise refused(f"unknown stream option {name!r}", f"stream_options.{name}")
        if not isinstance(value, bool):
            raise refused(f"stream_options.{name} must be a boolean", f"stream_options.{name}")
    return bool(options.get("include_usage", False))


def _messages(value: Any) -> list[Message]:
    if value is None:
        raise refused("messages is required", "messages")
    if not isinstance(value, list):
        raise refused(f"messages must be an array, got {_kind(value)}", "messages")
    if not value:
        raise refused("messages must not be empty", "messages")
    messages = [_message(index, item) for index, item in enumerate(value)]
    if messages[-1].role != "user":
        raise refused(
            f"the last message must be the user's (the agent answers it), got "
            f"{messages[-1].role!r}",
            f"messages[{len(messages) - 1}].role",
        )
    return messages


def _message(index: int, item: Any) -> Message:
    where = f"messages[{index}]"
    if not isinstance(item, dict):
        raise refused(f"{where} must be an object, got {_kind(item)}", where)
    role = item.get("role")
    if role in ("tool", "function"):
        raise refused(
            f"{where} is a {role} message: the served agent calls its own tools, so no "
            "client tool results are taken",
            f"{where}.role",
        )
    if role not in _ROLES_TAKEN:
        raise refused(
            f"{where}.role must be one of {', '.join(sorted(_ROLES_TAKEN))}, got {role!r}",
            f"{where}.role",
        )
    known = _MESSAGE_FIELDS | _ASSISTANT_FIELDS if role == "assistant" else _MESSAGE_FIELDS
    for name in item:
        if name not in known:
            raise refused(f"{where} has an unknown field {name!r}", f"{where}.{name}")
    if role == "assistant" and (item.get("tool_calls") or item.get("function_call")):
        raise refused(
            f"{where} has tool calls: the served agent calls its own tools, so a "
            "conversation of client tool calls is not taken",
            f"{where}.tool_calls",
        )
    text = _text(where, item.get("content"), optional=role == "assistant")
    if role == "user":
        return Message.user(text)
    if role == "assistant":
        return Message.assistant(text)
    return Message.system(text)  # a developer message is the system's, as OpenAI treats it


def _text(where: str, content: Any, *, optional: bool) -> str:
    """A message's content as text: a string, or the text parts of an array joined."""
    if content is None and optional:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise refused(
            f"{where}.content must be a string or an array of parts, got {_kind(content)}",
            f"{where}.content",
        )
    texts = []
    for position, part in enumerate(content):
        at = f"{where}.content[{position}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "refusal" and optional:
            continue
        if kind != "text":
            raise refused(
                f"{at} is {kind!r} content: the served agent takes text parts only",
                at,
                code="unsupported_content",
            )
        if not isinstance(part.get("text"), str):
            raise refused(f"{at}.text must be a string", f"{at}.text")
        texts.append(part["text"])
    return "\n".join(texts)
