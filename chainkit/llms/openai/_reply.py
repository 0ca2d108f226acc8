"""Reading a chat-completion reply, whole or streamed, from the bytes the server sent.

Replies are read from the raw JSON rather than through the SDK's typed objects, which would
cost more than the rest of the call. Both kinds go through one reader, `_ReplyParts`, which
takes a reply message or the deltas of one and accepts what OpenAI-compatible servers send:

- content as text, or as a list of parts: text parts are joined, `thinking`/`reasoning`
  parts become the reasoning, `refusal` parts the refusal;
- reasoning under `reasoning_content` or `reasoning` (vLLM sends both, with the same text);
- tool-call arguments as JSON text, or as a JSON value (encoded to text); none at all is
  "{}"; a null id is "" (the agent gives such calls ids of its own);
- the legacy `function_call`, as one more tool call;
- a `refusal`, which is not an answer: ModelRefusalError, carrying it.

Only choice 0 is the reply. Text is always valid Unicode: a UTF-16 surrogate pair split
across two deltas is joined into its character, and a surrogate left alone becomes U+FFFD
(it could not be sent back to the server as UTF-8). A field of the wrong type is a
ModelReplyShapeError naming it; unreadable metadata (usage counts, a finish_reason that is
not text) is left out instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from chainkit._text import shorten
from chainkit._tokens import reported_count
from chainkit.llms.errors import (
    ModelError,
    ModelRefusalError,
    ModelReplyShapeError,
    ModelResponseError,
)
from chainkit.llms.openai._sse import DONE, ServerEvent, SSEDecoder
from chainkit.llms.options import StreamingFunc
from chainkit.schema import FunctionCall, Message, TokenUsage, ToolCall
from chainkit.schema.message import ResponseMeta

Masker = Callable[[str], str]
"""Masks the API key in a text; `Connection.redact`."""

_SNIPPET = 200
_NOT_JSON = object()
_BOM = b"\xef\xbb\xbf"
_TEXT_PARTS = frozenset(("text", "output_text"))
_REASONING_PARTS = frozenset(("thinking", "reasoning"))
_EVENT_FIELDS = (b"data:", b":", b"event:", b"id:", b"retry:")


def parse_completion(body: bytes, mask: Masker) -> Message:
    """The reply message of a chat completion body; `mask` hides the key in error texts. A
    body of events (from a server that streams whatever it is asked) is read as a stream."""
    if body.removeprefix(_BOM).lstrip().startswith(_EVENT_FIELDS):
        stream = StreamAccumulator(_ignore_text, mask)
        stream.feed(body)
        return stream.message()
    data = json_object(body, "reply", mask)
    choice = _choice_zero(data.get("choices"))
    if choice is None or not isinstance(choice.get("message"), dict):
        raise ModelReplyShapeError(
            f"the server's reply has no choice 0 with a message: {mask(snippet(body))!r}"
        )
    reply = _ReplyParts(mask)
    reply.add(choice["message"], whole=True)
    finish_reason = _finish_reason(choice.get("finish_reason"))
    return reply.message(ResponseMeta(finish_reason, _usage(data.get("usage")), *_served(data)))


def json_object(payload: str | bytes, what: str, mask: Masker) -> dict[str, Any]:
    """The JSON object of a reply body or stream event (`what` names which). Not JSON is
    ModelResponseError; another JSON value, ModelReplyShapeError; an object with an `error`,
    ModelResponseError with its message. Bytes are UTF-8, a leading BOM skipped, bytes that
    are not UTF-8 read as U+FFFD."""
    if isinstance(payload, bytes):
        text = payload.removeprefix(_BOM).decode("utf-8", "replace")
    else:
        text = payload
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than the parser goes
        # Raised below, out of this block: the decode error would keep the whole payload.
        data = _NOT_JSON
    if data is _NOT_JSON:
        raise ModelResponseError(
            f"the server's {what} is not valid JSON: {mask(snippet(payload))!r}"
        )
    if not isinstance(data, dict):
        raise ModelReplyShapeError(
            f"the server's {what} is not a JSON object: {mask(snippet(payload))!r}"
        )
    error = data.get("error")
    if error:
        raise ModelResponseError(
            f"the server reported an error in its {what}: {mask(_error_text(error))}"
        )
    return data


def snippet(payload: str | bytes) -> str:
    head = payload[: _SNIPPET + 1]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    return shorten(text, _SNIPPET)


def _error_text(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else error
    text = message if isinstance(message, str) else _json_text(error)
    return _valid_text(shorten(text, 1000))  # it may end up in a log


def _json_text(value: Any) -> str:
    """The JSON text of a value json.loads made."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        raise ModelReplyShapeError("the reply nests JSON deeper than can be read") from None


def _choice_zero(choices: Any) -> dict[str, Any] | None:
    """The choice with index 0 (or no index) of a `choices` list; None when there is none."""
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index") in (0, None):
            return choice
    return None


def _finish_reason(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _served(data: dict[str, Any]) -> tuple[str | None, str | None]:
    """The model that answered and the response's id, as a reply body or stream chunk names
    them; a missing or non-text one is None, a long one shortened (it goes into traces)."""
    return _short_text(data.get("model")), _short_text(data.get("id"))


def _short_text(value: Any) -> str | None:
    return _valid_text(shorten(value, 200)) if isinstance(value, str) and value else None


def _count_or_zero(value: Any) -> int:
    return reported_count(value) or 0


def _usage(data: Any) -> TokenUsage | None:
    """Token counts, flattened (OpenAI nests the reasoning and cached counts); a count that is
    not a number counts as 0."""
    if not isinstance(data, dict):
        return None
    completion = data.get("completion_tokens_details")
    prompt = data.get("prompt_tokens_details")
    return TokenUsage(
        prompt_tokens=_count_or_zero(data.get("prompt_tokens")),
        completion_tokens=_count_or_zero(data.get("completion_tokens")),
        total_tokens=_count_or_zero(data.get("total_tokens")),
        reasoning_tokens=_count_or_zero(completion.get("reasoning_tokens"))
        if isinstance(completion, dict)
        else 0,
        cached_tokens=_count_or_zero(prompt.get("cached_tokens"))
        if isinstance(prompt, dict)
        else 0,
    )


def _valid_text(text: str) -> str:
    """`text` with each surrogate pair joined into its character and each lone surrogate
    replaced by U+FFFD: what json.loads makes of "\\ud83d" cannot be encoded as UTF-8."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


class _Text:
    """Text that arrives in pieces. A high surrogate that ends a piece waits for the next one,
    which may begin with its low half."""

    __slots__ = ("_held", "pieces")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self._held = ""

    def add(self, piece: str) -> str:
        """Adds `piece`; returns the text it completes, ready to hand on."""
        if self._held:
            piece = self._held + piece
            self._held = ""
        if piece and "\ud800" <= piece[-1] <= "\udbff":  # a high surrogate
            self._held = piece[-1]
            piece = piece[:-1]
        if not piece.isascii():
            piece = _valid_text(piece)
        if piece:
            self.pieces.append(piece)
        return piece

    def flush(self) -> str:
        """Ends the text; returns what was still held back (a lone surrogate, as U+FFFD)."""
        held = "\ufffd" if self._held else ""
        self._held = ""
        if held:
            self.pieces.append(held)
        return held

    def text(self) -> str:
        self.flush()
        return "".join(self.pieces)


@dataclass(slots=True)
class _Call:
    """A tool call as its deltas arrive."""

    index: int | None
    id: str
    name: str
    type: str
    arguments: list[str]


class _ToolCalls:
    """Tool calls put together from whole calls, or from the deltas of streamed ones.

    A delta continues the call with its index, else the call with its id, else the call that
    the last delta went to; it starts a new call when it brings a new index, or a new id and
    a function name (a call's first delta names its function). So a delta whose id is new
    but that names nothing continues a call (some servers send a fresh id in every delta),
    and one with a new id and a name is a new call even at a known index (some servers number
    parallel calls all 0).
    """

    __slots__ = ("_by_id", "_by_index", "_mask", "_open", "calls")

    def __init__(self, mask: Masker) -> None:
        self.calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._by_id: dict[str, _Call] = {}
        self._open: _Call | None = None
        self._mask = mask

    def add(self, data: Any, *, whole: bool) -> None:
        if not isinstance(data, dict):
            raise _wrong_type("tool call", data, "an object")
        index = data.get("index")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise _wrong_type("tool call index", index, "an integer")
        call_id = _text_field(data, "id", "tool call id")
        function = data.get("function")
        if function is None:
            function = {}
        elif not isinstance(function, dict):
            raise _wrong_type("tool call function", function, "an object")
        name = _text_field(function, "name", "tool call function name")
        call_type = _text_field(data, "type", "tool call type")
        call = None if whole else self._continued(index, call_id, name)
        if call is None:
            call = _Call(index, call_id, name, call_type or "function", [])
            self.calls.append(call)
        else:
            if name and name != call.name:
                if call.name:
                    raise ModelReplyShapeError(
                        "the stream's tool calls do not add up: one call is named "
                        f"{self._mask(_valid_text(call.name))!r} and "
                        f"{self._mask(_valid_text(name))!r}"
                    )
                call.name = name
            call.id = call.id or call_id
            call.type = call_type or call.type
        if index is not None:
            self._by_index[index] = call
        if call_id:
            self._by_id.setdefault(call_id, call)
        call.arguments.append(_arguments(function.get("arguments")))
        self._open = call

    def _continued(self, index: int | None, call_id: str, name: str) -> _Call | None:
        """The call a delta continues; None when it starts a new one."""
        if index is not None and index in self._by_index:
            call = self._by_index[index]
            if not (name and call_id and call.id and call_id != call.id):
                return call
            # A new id with a name: a new call, though numbered like an earlier one.
        if call_id and call_id in self._by_id:
            return self._by_id[call_id]
        if name or index is not None:
            return None  # a call's first delta names its function, or brings a new index
        return self._open

    def result(self) -> list[ToolCall]:
        calls = self.calls
        if all(call.index is not None for call in calls):
            calls = sorted(calls, key=lambda call: call.index or 0)
        result = []
        for position, call in enumerate(calls):
            if not call.name:
                shown = self._mask(_valid_text(call.id))
                raise ModelReplyShapeError(
                    f"tool call {position} of the reply (id {shown!r}) names no function"
                )
            function = FunctionCall(
                _valid_text(call.name), _valid_text("".join(call.arguments)) or "{}"
            )
            result.append(ToolCall(_valid_text(call.id), function, type=_valid_text(call.type)))
        return result


def _arguments(value: Any) -> str:
    """Tool-call arguments as text: some servers send them as a JSON value, not its text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _json_text(value)


def _text_field(data: dict[str, Any], key: str, what: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _wrong_type(what, value, "text")
    return value


def _wrong_type(what: str, value: Any, expected: str) -> ModelReplyShapeError:
    # The value's type only: the value itself may be long, or echo what it should not.
    return ModelReplyShapeError(
        f"the reply's {what} should be {expected}, not {type(value).__name__}"
    )


class _ReplyParts:
    """The parts of one reply message, from the message whole or from its deltas."""

    __slots__ = ("_mask", "calls", "content", "function_call", "reasoning", "refusal")

    def __init__(self, mask: Masker) -> None:
        self._mask = mask
        self.content = _Text()
        self.reasoning = _Text()
        self.refusal = _Text()
        self.calls = _ToolCalls(mask)
        self.function_call = _ToolCalls(mask)  # the legacy field: one call, in deltas

    def add(self, fields: dict[str, Any], *, whole: bool) -> str:
        """Takes a reply message (`whole`) or a delta of one; returns the content it adds."""
        content = fields.get("content")
        added = ""
        if isinstance(content, str):
            added = self.content.add(content)
        elif isinstance(content, list):
            added = self._add_parts(content)
        elif content is not None:
            raise _wrong_type("content", content, "text or a list of content parts")
        reasoning = fields.get("reasoning_content") or fields.get("reasoning")
        if isinstance(reasoning, str):
            self.reasoning.add(reasoning)
        elif reasoning:
            raise _wrong_type("reasoning", reasoning, "text")
        refusal = fields.get("refusal")
        if refusal:
            self.refusal.add(_text_field(fields, "refusal", "refusal"))
        tool_calls = fields.get("tool_calls")
        if isinstance(tool_calls, list):
            for call in tool_calls:
                self.calls.add(call, whole=whole)
        elif tool_calls is not None:
            raise _wrong_type("tool_calls", tool_calls, "a list")
        function_call = fields.get("function_call")
        if isinstance(function_call, dict):
            self.function_call.add({"function": function_call}, whole=False)
        elif function_call is not None:
            raise _wrong_type("function_call", function_call, "an object")
        return added

    def _add_parts(self, parts: list[Any]) -> str:
        added = []
        for part in parts:
            if not isinstance(part, dict):
                raise _wrong_type("content part", part, "an object")
            kind = _text_field(part, "type", "content part type")
            if kind in _TEXT_PARTS:
                added.append(self.content.add(_text_field(part, "text", f"{kind} part")))
            elif kind in _REASONING_PARTS:
                self.reasoning.add(_reasoning_of(part, kind))
            elif kind == "refusal":
                self.refusal.add(_text_field(part, "refusal", "refusal part"))
            else:
                shown = self._mask(_valid_text(shorten(kind, 40)))
                raise ModelReplyShapeError(
                    f"the reply has a content part of type {shown!r}; expected text, "
                    "thinking, reasoning or refusal parts"
                )
        return "".join(added)

    def message(self, meta: ResponseMeta) -> Message:
        """The reply; ModelRefusalError, carrying it, when it is a refusal."""
        reply = Message.assistant(
            self.content.text(),
            [*self.function_call.result(), *self.calls.result()],
            reasoning_content=self.reasoning.text(),
            response_meta=meta,
        )
        refusal = self.refusal.text()
        if refusal:
            reply.extra = {"refusal": refusal}
            raise ModelRefusalError(self._mask(refusal), reply)
        return reply


def _reasoning_of(part: dict[str, Any], kind: str) -> str:
    """The text of a thinking or reasoning part: under its own name or `text`, as text or as
    a list of text parts (Mistral's shape)."""
    value = part.get(kind, part.get("text"))
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        return "".join(_text_field(p, "text", f"{kind} part") for p in value)
    raise _wrong_type(f"{kind} part", value, "text or a list of text parts")


class StreamAccumulator:
    """Puts one streamed reply together from the bytes of the server's body, handing on each
    content delta as it arrives.

    The body is read as server-sent events, unless it is one JSON document (it begins with
    `{` or `[`, which no event does): an error body, or a server that ignored
    `stream: true`. Such a body is read as a plain reply, whose content is handed on whole.
    The Content-Type is not asked: servers label either kind as the other.

    The stream is whole once it has sent [DONE] or a finish_reason for choice 0: servers that
    send no finish_reason still end with [DONE], and some end after the finish_reason
    without it. Once the finish_reason has arrived, whatever goes wrong after it (a broken
    connection, a stall, a garbled event) ends the stream and the reply stands: sending the
    request again would pay for it twice.
    """

    def __init__(self, on_text: StreamingFunc, mask: Masker) -> None:
        self._on_text = on_text
        self._mask = mask
        self._events = SSEDecoder()
        self._sniffing = True  # until the body's first bytes say whether it is JSON
        self._body: bytearray | None = None  # a JSON body, or its first bytes while sniffing
        self._start = b""  # the body's first bytes, for an error message
        self._reply = _ReplyParts(mask)
        self._whole: Message | None = None
        self._finish_reason: str | None = None
        self._usage: TokenUsage | None = None
        self._served: tuple[str | None, str | None] = (None, None)
        self._choice_seen = False
        self._done = False

    def feed(self, data: bytes) -> bool:
        """Takes the next bytes of the body; True once the stream says it is done."""
        if not self._sniffing:
            if self._body is not None:
                self._body += data
                return False
            return self._add_events(self._events.feed(data))
        if self._body is None:
            self._body = bytearray()
        # What came before was blank: only the new bytes need looking at, unless the first
        # few may yet be a byte order mark.
        seen = len(self._body) if len(self._body) >= len(_BOM) else 0
        self._body += data
        is_json = _looks_like_json(bytes(self._body[seen:]), at_start=not seen)
        if is_json is None:
            return False
        self._sniffing = False
        self._start = bytes(self._body[: _SNIPPET + 1])
        if is_json:
            return False
        head, self._body = bytes(self._body), None
        return self._add_events(self._events.feed(head))

    def message(self, failure: ModelError | None = None) -> Message:
        """The whole reply, once the body has ended, or has failed with `failure`.

        `failure` is raised again unless the reply was already whole. A stream that ended
        with neither [DONE] nor a finish_reason was cut off (a proxy may end a body early
        without breaking the connection): ModelResponseError.
        """
        if failure is None:
            try:
                self._end()
            except ModelError as error:
                failure = error
        if failure is not None and self._finish_reason is None:
            raise failure
        if self._whole is not None:
            return self._whole
        if not self._done and self._finish_reason is None:
            raise ModelResponseError(
                "the stream ended before the server sent [DONE] or a finish_reason"
                + self._what_came()
            )
        if not self._choice_seen:
            raise ModelReplyShapeError("the stream ended without sending any choice 0")
        held = self._reply.content.flush()
        if held:
            self._on_text(held)
        return self._reply.message(ResponseMeta(self._finish_reason, self._usage, *self._served))

    def _end(self) -> None:
        if self._sniffing:  # the body ended before its kind was clear: only blanks or nothing
            self._sniffing = False
            head, self._body = bytes(self._body or b""), None
            self._start = head[: _SNIPPET + 1]
            if self._add_events(self._events.feed(head)):
                return
        if self._body is not None:
            self._whole = parse_completion(bytes(self._body), self._mask)
            if self._whole.content:
                self._on_text(self._whole.content)
            return
        if not self._done:
            self._add_events(self._events.close())

    def _what_came(self) -> str:
        if self._choice_seen or self._usage is not None:
            return ""
        if not self._start.strip():
            return ", and sent nothing"
        return f"; its body began: {self._mask(snippet(self._start))!r}"

    def _add_events(self, events: list[ServerEvent]) -> bool:
        for event in events:
            data = event.data
            if data == DONE or data.strip() == DONE:
                self._done = True
                return True
            if event.type == "error":
                raise ModelResponseError(
                    "the server reported an error in its stream: "
                    f"{self._mask(_error_text(_error_of(data)))}"
                )
            if data.strip():
                self._add_chunk(json_object(data, "stream event", self._mask))
        return False

    def _add_chunk(self, chunk: dict[str, Any]) -> None:
        if self._served == (None, None):
            self._served = _served(chunk)
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if not isinstance(choice, dict):
                    raise _wrong_type("choice", choice, "an object")
                if choice.get("index") not in (0, None):
                    continue  # only choice 0 is the reply
                self._choice_seen = True
                delta = choice.get("delta")
                if isinstance(delta, dict):
                    added = self._reply.add(delta, whole=False)
                    if added:
                        self._on_text(added)
                elif delta is not None:
                    raise _wrong_type("delta", delta, "an object")
                finish_reason = choice.get("finish_reason")
                if finish_reason and isinstance(finish_reason, str):
                    self._finish_reason = finish_reason
        elif choices is not None:
            raise _wrong_type("choices", choices, "a list")
        if chunk.get("usage") is not None:
            usage = _usage(chunk["usage"])
            if usage is not None:
                self._usage = usage if self._usage is None else _larger(self._usage, usage)


def _larger(usage: TokenUsage, other: TokenUsage) -> TokenUsage:
    """Each count the larger of the two: streams that repeat usage send running totals, and
    a trailing chunk of zeros must not wipe what came before."""
    return TokenUsage(
        **{f.name: max(getattr(usage, f.name), getattr(other, f.name)) for f in fields(TokenUsage)}
    )


def _error_of(data: str) -> Any:
    """What an `error` event says: its JSON's `error` (or the JSON itself), or its text."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return data
    return value.get("error") or value if isinstance(value, dict) else value


def _ignore_text(text: str) -> None:
    pass


def _looks_like_json(body: bytes, *, at_start: bool) -> bool | None:
    """Whether a body that holds `body` (at its start, or after blanks) is one JSON document
    (its first character is `{` or `[`) rather than events; None while only a BOM and blanks
    have come."""
    if at_start:
        if len(body) < len(_BOM) and _BOM.startswith(body):
            return None
        body = body.removeprefix(_BOM)
    start = body.lstrip()
    if not start:
        return None
    return start[0] in b"{["
