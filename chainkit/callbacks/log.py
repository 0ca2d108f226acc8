"""LogHandler: one readable line per event, so a person can follow what an agent did."""

from __future__ import annotations

import dataclasses
import operator
import re
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from chainkit._redact import MASK, redact
from chainkit.callbacks.errors import HandlerConfigError, HandlerTypeError
from chainkit.callbacks.handler import Handler
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Message

# Values under names with a word that says they hold a credential, or carry headers, are
# never shown, at any depth (extra_body={"api_key": ...}); "max_tokens" is a count, not one.
_SECRET_WORDS = frozenset(
    (
        *("key", "apikey", "token", "secret", "password", "passwd", "auth", "authorization"),
        *("header", "headers", "cookie", "cookies", "credential", "credentials"),
    )
)
_WORD = re.compile(r"[a-z0-9]+")
_NOT_SHOWN = frozenset(("streaming_func", "callbacks"))
# Control characters (and the Unicode line breaks and bidirectional overrides) escaped, so a
# model's or a tool's text can neither break a line in two nor restyle the terminal.
_ESCAPES: dict[int, str] = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if code != 0x09
}
_ESCAPES.update(
    {
        code: f"\\u{code:04x}"
        for code in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
    }
)
# Searched for before any is escaped: translate() looks up every character, far slower.
_RARE_CONTROL = re.compile(
    "[" + "".join(chr(code) for code in _ESCAPES if code not in (10, 13)) + "]"
)
_ESCAPES.update({ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r"})
_RECENT_PROMPTS = 8
"""Prompts kept to show only what a later prompt adds: one per run going on at once."""


def _secret(name: object) -> bool:
    return isinstance(name, str) and any(w in _SECRET_WORDS for w in _WORD.findall(name.lower()))


def _masked(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {name: MASK if _secret(name) else _masked(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(item) for item in value]
    return value


def _fields(values: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{name!r}: {_shown(value)}" for name, value in values.items()) + "}"


def _shown(value: Any) -> str:
    """An input or output value, with a list of agent steps summed up rather than dumped."""
    if isinstance(value, list) and value and all(isinstance(v, AgentStep) for v in value):
        return f"[{len(value)} steps]"
    return repr(value)


def _one_line(text: str, limit: int) -> str:
    """`text` with line breaks escaped, and cut in the middle when longer than `limit`: the
    start and the end of a prompt or an output are what tell one from another."""
    if limit and len(text) > limit:
        head = limit - limit // 2
        cut = len(text) - limit
        text = f"{text[:head]}…[{cut:,} characters cut]…{text[len(text) - limit // 2 :]}"
    escaped = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    if _RARE_CONTROL.search(escaped) is None:
        return escaped
    return text.translate(_ESCAPES)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _describe(message: Message) -> str:
    text = message.content
    if message.tool_calls:
        calls = ", ".join(f"{c.function.name}({c.function.arguments})" for c in message.tool_calls)
        text = f"{text} tool_calls: {calls}" if text else f"tool_calls: {calls}"
    if message.tool_call_id is not None:
        text = f"(for {message.tool_call_id}) {text}"
    return f"{message.role}: {text}"


_all_but_content = operator.attrgetter(
    *(field.name for field in dataclasses.fields(Message) if field.name != "content")
)


def _shared(previous: tuple[Message, ...], current: Sequence[Message]) -> tuple[int, int]:
    """How much of `current` repeats `previous`: the number of whole messages, and then, when
    `previous` ends in a message that `current` continues (a MRKL prompt growing its
    scratchpad), how many characters of that message; (0, 0) when `current` does not start
    with all of `previous`."""
    same = 0
    for before, now in zip(previous, current, strict=False):
        # Contents first: they differ far more often, and compare without building tuples.
        if before is not now and (before.content != now.content or before != now):
            break
        same += 1
    if same == len(previous):
        return same, 0
    if same == len(previous) - 1 and same < len(current):
        before, now = previous[same], current[same]
        if (
            before.content
            and now.content.startswith(before.content)
            and _all_but_content(now) == _all_but_content(before)
        ):
            return same, len(before.content)
    return 0, 0


class LogHandler(Handler):
    """Writes each event as one line to `stream`; API keys are masked, texts longer than
    `max_chars` cut in the middle (0 keeps them whole).

    A prompt that starts with one shown before (the next step of a run) is shown as what it
    adds: `[first 2 messages as before] | tool: …`, or `[first 1,234 characters as before]…`
    for a MRKL prompt whose scratchpad grew.
    """

    def __init__(self, stream: TextIO | None = None, *, max_chars: int = 4000) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 0:
            raise HandlerConfigError(
                f"max_chars must be a whole number, 0 or more, got {max_chars!r}"
            )
        if stream is not None and not callable(getattr(stream, "write", None)):
            raise HandlerTypeError(
                f"stream must be a text stream such as sys.stderr, got {stream!r}"
            )
        self.stream = stream if stream is not None else sys.stderr
        self.max_chars = max_chars
        self._recent: deque[tuple[Message, ...]] = deque(maxlen=_RECENT_PROMPTS)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LogHandler(stream={getattr(self.stream, 'name', self.stream)!r})"

    def _write(self, event: str, detail: str) -> None:
        # Redact before cutting: a key cut in two would no longer look like one.
        line = f"[chainkit] {event}: {_one_line(redact(detail), self.max_chars)}"
        self.stream.write(line + "\n")
        self.stream.flush()

    def handle_text(self, text: str) -> None:
        self._write("text", text)

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        shown = _masked({k: v for k, v in options.items() if v is not None and k not in _NOT_SHOWN})
        prompt = self._new_in(messages)
        self._write("llm start", f"{prompt} options={shown}" if shown else prompt)

    def _new_in(self, messages: Sequence[Message]) -> str:
        """`messages` as a line, less what repeats the prompt shown before that they extend."""
        with self._lock:
            # The latest prompt wins a tie: it is the likeliest to be the same run's.
            shared = (_shared(p, messages) for p in reversed(self._recent))
            same, chars = max(shared, default=(0, 0))
            self._recent.append(tuple(messages))
        if chars:
            kept = f"{_count(same, 'message')} and {chars:,}" if same else f"{chars:,}"
            grown = [messages[same].content[chars:], *map(_describe, messages[same + 1 :])]
            return f"[first {kept} characters as before]" + " | ".join(grown)
        if not same:
            return " | ".join(map(_describe, messages))
        if same == len(messages):
            return "[same messages as before]"
        added = " | ".join(map(_describe, messages[same:]))
        return f"[first {_count(same, 'message')} as before] | {added}"

    def handle_llm_end(self, message: Message) -> None:
        detail = _describe(message)
        meta = message.response_meta
        if meta is not None and meta.finish_reason:
            detail += f" (finish_reason={meta.finish_reason})"
        self._write("llm end", detail)

    def handle_llm_error(self, error: BaseException) -> None:
        self._write("llm error", f"{type(error).__name__}: {error}")

    def handle_chain_start(self, chain: str, inputs: Mapping[str, Any]) -> None:
        self._write("chain start", f"{chain} inputs={_fields(inputs)}")

    def handle_chain_end(self, chain: str, outputs: Mapping[str, Any]) -> None:
        self._write("chain end", f"{chain} outputs={_fields(outputs)}")

    def handle_chain_error(self, chain: str, error: BaseException) -> None:
        self._write("chain error", f"{chain} {type(error).__name__}: {error}")

    def handle_tool_start(self, tool: str, input: str) -> None:
        self._write("tool start", f"{tool} input={input!r}")

    def handle_tool_end(self, tool: str, output: str) -> None:
        self._write("tool end", f"{tool} output={output!r}")

    def handle_tool_error(self, tool: str, error: BaseException) -> None:
        self._write("tool error", f"{tool} {type(error).__name__}: {error}")

    def handle_agent_action(self, action: AgentAction) -> None:
        self._write("agent action", f"tool={action.tool!r} input={action.tool_input!r}")

    def handle_agent_finish(self, finish: AgentFinish) -> None:
        self._write("agent finish", repr(finish.return_values))

    def handle_retriever_start(self, query: str) -> None:
        self._write("retriever start", repr(query))

    def handle_retriever_end(self, query: str, documents: Sequence[Any]) -> None:
        self._write("retriever end", f"{query!r}: {len(documents)} documents")

    def handle_retriever_error(self, query: str, error: BaseException) -> None:
        self._write("retriever error", f"{query!r} {type(error).__name__}: {error}")

    def handle_retry(self, attempt: int, error: BaseException, wait_seconds: float) -> None:
        self._write(
            "retry",
            f"attempt {attempt} failed ({type(error).__name__}: {error}); "
            f"retrying in {wait_seconds:.2f}s",
        )
