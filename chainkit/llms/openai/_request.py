"""The requests of the OpenAI backend: chat options sorted into the SDK's arguments, the
request body and the HTTP request's settings."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from chainkit.llms.errors import ModelConfigError
from chainkit.schema import Message, ToolInfo

# Options `create` has a parameter of its own for: fields of the request body, and settings of
# the HTTP request (timeout, headers, query) that must not reach the body, where a server
# would refuse an unknown key and a header's value, perhaps a credential, does not belong.
# Any other option goes into extra_body.
_SDK_PARAMETERS = frozenset(
    (
        *("model", "stop", "temperature", "max_tokens", "top_p", "seed"),
        *("timeout", "extra_headers", "extra_query"),
    )
)

_HTTP_OPTIONS = {"timeout": "timeout", "extra_headers": "headers", "extra_query": "params"}
"""`create` arguments that set the HTTP request, and their names in the SDK's request options."""
_RAW_RESPONSE = "X-Stainless-Raw-Response"
"""The header `with_raw_response` adds to a request: the SDK then returns the reply unparsed,
its body read ("true") or left for the caller to read ("stream")."""
CHAT_PATH = "/chat/completions"
_ESSENTIAL = frozenset(("model", "messages", "stream", "stream_options", "extra_body"))
"""Fields every chat request has: a server that names one in an error refuses the request,
not a field it could do without."""


def build_request(
    model: str,
    messages: Sequence[Message],
    stop: Sequence[str] | None,
    tools: Sequence[ToolInfo] | None,
    options: Mapping[str, Any],
    *,
    stream: bool,
) -> dict[str, Any]:
    """Keyword arguments for `chat.completions.create`.

    Options the SDK has a parameter for go there (so `timeout`, `extra_headers` and
    `extra_query` set the HTTP request); any other goes into `extra_body`, so it reaches the
    server rather than being dropped. Options set to None are left out.
    """
    request: dict[str, Any] = {"model": model}
    extra: dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key in _SDK_PARAMETERS:
            request[key] = value
        elif key == "extra_body":
            extra.update(value)
        else:
            extra[key] = value
    choices = extra.get("n", 1)
    if choices != 1:
        raise ModelConfigError(
            f"n={choices!r}: a model call returns one reply, so n (how many replies the "
            "server makes) must be 1 or left out"
        )
    request["messages"] = [m.to_dict(request=True) for m in messages]
    stop = stop or request.get("stop")
    if stop:
        request["stop"] = [stop] if isinstance(stop, str) else list(stop)
    if tools:
        request["tools"] = [t.to_dict() for t in tools]
    if stream:
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
    if extra:
        request["extra_body"] = extra
    return request


def post_arguments(request: Mapping[str, Any], *, read_body: bool = True) -> dict[str, Any]:
    """Keyword arguments for the client's `post(CHAT_PATH, ...)` that send what
    `chat.completions.with_raw_response.create(**request)` sends, `request` being what
    `build_request` made; with `read_body=False` the reply's body is left unread, for the
    caller to read. `create` would first walk the whole body to convert it to wire form,
    which costs more than the rest of the call on the client; the body is in wire form
    already."""
    body: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, value in request.items():
        option = _HTTP_OPTIONS.get(key)
        if option is not None:
            options[option] = value
        elif key != "extra_body":
            body[key] = value
    body.update(request.get("extra_body") or {})
    raw = "true" if read_body else "stream"
    options["headers"] = {**options.get("headers", {}), _RAW_RESPONSE: raw}
    return {"cast_to": object, "body": body, "options": options}


def refusable_fields(request: Mapping[str, Any]) -> Iterator[str]:
    """The fields of `request` (what `build_request` made) a server may not take (tools,
    response_format, a grammar in extra_body...): those of the body but the essential ones."""
    for key in request:
        if key not in _ESSENTIAL and key not in _HTTP_OPTIONS:
            yield key
    yield from request.get("extra_body") or ()
