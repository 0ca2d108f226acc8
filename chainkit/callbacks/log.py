"""LogHandler: one readable line per event, so a person can follow what an agent did, and
tell nested and concurrent runs apart."""

from __future__ import annotations

import dataclasses
import operator
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from chainkit._redact import mask_secret_fields, redact
from chainkit._text import counted, one_line
from chainkit.callbacks._found import found_ids, found_scores
from chainkit.callbacks.errors import HandlerConfigError, HandlerTypeError
from chainkit.callbacks.handler import Handler
from chainkit.callbacks.run import RunInfo, current_run
from chainkit.schema import AgentAction, AgentFinish, AgentStep, Message

_NOT_SHOWN = frozenset(("streaming_func", "callbacks"))
_RECENT_PROMPTS = 8
_FOUND_SHOWN = 5
"""How many of a retrieval's documents a line names, best first."""
"""Prompts kept to show only what a later prompt adds: one per run going on at once."""


def _fields(values: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{name!r}: {_shown(value)}" for name, value in values.items()) + "}"


def _shown(value: Any) -> str:
    """An input or output value, with a list of agent steps summed up rather than dumped, and
    messages (a pipeline's prompt and reply) as their role and text."""
    if isinstance(value, Message):
        return repr(_describe(value))
    if isinstance(value, list) and value:
        if all(isinstance(v, AgentStep) for v in value):
            return f"[{counted(len(value), 'step')}]"
        if all(isinstance(v, Message) for v in value):
            return f"[{', '.join(repr(_describe(message)) for message in value)}]"
    return repr(value)


def _describe(message: Message) -> str:
    text = message.content
    if message.tool_calls:
        calls = ", ".join(f"{c.function.name}({c.function.arguments})" for c in message.tool_calls)
        text = f"{text} tool_calls: {calls}" if text else f"tool_calls: {calls}"
    if message.tool_call_id is not None:
        text = f"(for {message.tool_call_id}) {text}"
    return f"{message.role}: {text}"


def _ids_and_scores(found: Sequence[Any]) -> str:
    """The first documents found, by id, each with its score when it has one."""
    ids = [one_line(name, 120) for name in found_ids(found[:_FOUND_SHOWN])]
    scores = found_scores(found[:_FOUND_SHOWN])
    shown = ids if scores is None else [f"{i} ({s:.3g})" for i, s in zip(ids, scores, strict=True)]
    more = ", …" if len(found) > _FOUND_SHOWN else ""
    return ", ".join(shown) + more


def _for(tool_call_id: str | None) -> str:
    """Which of the model's tool calls a tool event answers, as the line says it."""
    return "" if tool_call_id is None else f" (for {tool_call_id})"


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


def _run_column(run: RunInfo | None) -> str:
    """Which run a line is of: the end of its id that tells it from the other runs of the
    process (`0000a3`), then two spaces per run it is nested in."""
    if run is None:
        return ""
    depth = 0
    parent = run.parent
    while parent is not None:
        depth += 1
        parent = parent.parent
    return f"{run.id.rpartition('-')[2]} {'  ' * depth}"


class LogHandler(Handler):
    """Writes each event as one line to `stream`: `[chainkit] 0000a3   tool end: …`, the
    short id of the run it is of, indented by how deep that run is nested. API keys are
    masked, texts longer than `max_chars` cut in the middle (0 keeps them whole).

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
        where = _run_column(current_run())
        line = f"[chainkit] {where}{event}: {one_line(redact(detail), self.max_chars)}"
        self.stream.write(line + "\n")
        self.stream.flush()

    def handle_text(self, text: str) -> None:
        self._write("text", text)

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        shown = mask_secret_fields(
            {k: v for k, v in options.items() if v is not None and k not in _NOT_SHOWN}
        )
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
            kept = f"{counted(same, 'message')} and {chars:,}" if same else f"{chars:,}"
            grown = [messages[same].content[chars:], *map(_describe, messages[same + 1 :])]
            return f"[first {kept} characters as before]" + " | ".join(grown)
        if not same:
            return " | ".join(map(_describe, messages))
        if same == len(messages):
            return "[same messages as before]"
        added = " | ".join(map(_describe, messages[same:]))
        return f"[first {counted(same, 'message')} as before] | {added}"

    def handle_llm_end(self, message: Message) -> None:
        detail = _describe(message)
        meta = message.response_meta
        if meta is not None:
            # The model that answered, as the server named it: under llms.Fallbacks, not
            # always the model the run started with.
            said = [f"finish_reason={meta.finish_reason}"] if meta.finish_reason else []
            said += [f"model={meta.model}"] if meta.model else []
            said += ["from the cache"] if meta.cached else []
            if said:
                detail += f" ({', '.join(said)})"
        self._write("llm end", detail)

    def handle_llm_error(self, error: BaseException) -> None:
        self._write("llm error", f"{type(error).__name__}: {error}")

    def handle_chain_start(self, chain: str, inputs: Mapping[str, Any]) -> None:
        self._write("chain start", f"{chain} inputs={_fields(inputs)}")

    def handle_chain_end(self, chain: str, outputs: Mapping[str, Any]) -> None:
        self._write("chain end", f"{chain} outputs={_fields(outputs)}")

    def handle_chain_error(self, chain: str, error: BaseException) -> None:
        self._write("chain error", f"{chain} {type(error).__name__}: {error}")

    def handle_tool_start(self, tool: str, input: str, tool_call_id: str | None) -> None:
        self._write("tool start", f"{tool}{_for(tool_call_id)} input={input!r}")

    def handle_tool_end(self, tool: str, output: str, tool_call_id: str | None) -> None:
        self._write("tool end", f"{tool}{_for(tool_call_id)} output={output!r}")

    def handle_tool_error(self, tool: str, error: BaseException, tool_call_id: str | None) -> None:
        self._write("tool error", f"{tool}{_for(tool_call_id)} {type(error).__name__}: {error}")

    def handle_agent_action(self, action: AgentAction) -> None:
        self._write("agent action", f"tool={action.tool!r} input={action.tool_input!r}")

    def handle_agent_finish(self, finish: AgentFinish) -> None:
        self._write("agent finish", repr(finish.return_values))

    def handle_retriever_start(self, query: str) -> None:
        self._write("retriever start", repr(query))

    def handle_retriever_end(self, query: str, documents: Sequence[Any]) -> None:
        found = counted(len(documents), "document")
        if documents:
            found += f": {_ids_and_scores(documents)}"
        self._write("retriever end", f"{query!r}: {found}")

    def handle_retriever_error(self, query: str, error: BaseException) -> None:
        self._write("retriever error", f"{query!r} {type(error).__name__}: {error}")

    def handle_retry(
        self, attempt: int, error: BaseException, wait_seconds: float, discarded: str
    ) -> None:
        dropped = ""
        if discarded:
            dropped = f", {counted(len(discarded), 'streamed character')} discarded"
        self._write(
            "retry",
            f"attempt {attempt} failed ({type(error).__name__}: {error}){dropped}; "
            f"retrying in {wait_seconds:.2f}s",
        )

    def handle_citations(self, cited: Sequence[str], invented: Sequence[str]) -> None:
        if not cited and not invented:
            self._write("citations", "NONE: the answer cites no document")
            return
        detail = f"cites {', '.join(map(repr, cited))}" if cited else "cites no document shown"
        if invented:
            detail += (
                f"; INVENTED (no document shown has these ids): {', '.join(map(repr, invented))}"
            )
        self._write("citations", detail)

    def handle_approval_required(self, tool: str, arguments: str, tool_call_id: str | None) -> None:
        self._write("approval required", f"{tool}{_for(tool_call_id)} input={arguments!r}")

    def handle_approval_decided(
        self,
        tool: str,
        decision: str,
        reason: str | None,
        arguments: str | None,
        tool_call_id: str | None,
    ) -> None:
        detail = f"{tool}{_for(tool_call_id)} {decision}"
        if reason:
            detail += f" reason={reason!r}"
        if arguments is not None:
            detail += f" input={arguments!r}"
        self._write("approval decided", detail)
