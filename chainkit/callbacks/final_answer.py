"""FinalAnswerStream: the final answer of an agent's run, piece by piece, from its events."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from chainkit._mrkl import Settled, StreamedReply, final_answer
from chainkit.callbacks.errors import HandlerTypeError
from chainkit.callbacks.events import END_KINDS, ERROR_KINDS, START_KINDS, Event
from chainkit.schema import AgentFinish, Message


@dataclass(frozen=True, slots=True)
class AnswerRestart:
    """What `FinalAnswerStream` yields when text it yielded is not the answer after all: a
    model call that streamed it failed and was retried, and the retry wrote something else.
    `discarded` is the text withdrawn; the pieces that follow give the answer from its start.
    """

    discarded: str


Piece = str | AnswerRestart
_NOTHING: tuple[Piece, ...] = ()


class FinalAnswerStream:
    """Yields the final answer of the agent run in `events` (what `chains.stream` or
    `chains.astream` yields) as it is written: the text after `Final Answer:` in a MRKL
    agent's reply, read by the rules of the agent's own parser (every form it accepts, and
    not a Thought that merely mentions a final answer); for any other agent, such as a
    `ToolCallingAgent`, whose answer is only known once its reply has ended without calling a
    tool, the answer whole when the agent finishes. Iterate it with `for`, or `async for` over
    an async stream.

    It yields only text the rest of the reply cannot take back, so the pieces add up to the
    answer the run returns. What can still take text back is a model call whose stream broke
    and was retried (a `retry` event): it starts the reply over, and when the retry writes
    something else than what was yielded, an `AnswerRestart` comes first, then the answer
    from its start (as it does whenever the answer the agent finishes with is not what was
    yielded). Show the pieces after the last `AnswerRestart`:

        for piece in FinalAnswerStream(events):
            if isinstance(piece, AnswerRestart):
                clear_the_screen()
            else:
                print(piece, end="")

    Agents run by tools inside the run are not followed: their answers are not the run's.
    A MRKL reply is read as it comes, each token adding to what was read of it (so the cost is
    linear in the reply), except at what may change the course of its answer: a keyword, the
    answer's opening, a line that is a keyword or code-fence line, each of which costs a read
    of the reply so far.

    Leaving its loop closes the events it reads, as `close()` / `aclose()` and leaving a
    `with` / `async with` block do: the run they come from stops, each of its runs still open
    ending with `callbacks.StreamClosed`.
    """

    def __init__(self, events: Iterable[Event] | AsyncIterable[Event]) -> None:
        if not isinstance(events, Iterable | AsyncIterable):
            raise HandlerTypeError(
                f"FinalAnswerStream reads the events of chains.stream or chains.astream, got "
                f"{type(events).__name__}"
            )
        self._events = events
        self._replies: dict[str, StreamedReply] = {}  # by model run: its text, read as MRKL
        self._shown: dict[str, _Shown] = {}  # by agent run: the answer yielded so far
        self._unread: set[str] = set()  # runs whose replies are no answer of the run's agent

    def __iter__(self) -> Iterator[Piece]:
        if not isinstance(self._events, Iterable):
            raise HandlerTypeError("these events are async: iterate with `async for`")
        try:
            for event in self._events:
                yield from self._read(event)
        finally:  # left early or not: a run still going has no reader left
            self.close()

    async def __aiter__(self) -> AsyncIterator[Piece]:
        try:
            if isinstance(self._events, AsyncIterable):
                async for event in self._events:
                    for piece in self._read(event):
                        yield piece
            else:
                for event in self._events:
                    for piece in self._read(event):
                        yield piece
        finally:
            await self.aclose()

    def close(self) -> None:
        """Closes the stream of events it reads (a `chains.stream`), which stops its run."""
        close = getattr(self._events, "close", None)
        if callable(close):
            close()

    async def aclose(self) -> None:
        """Closes the stream of events it reads, sync or async (`chains.astream`)."""
        aclose = getattr(self._events, "aclose", None)
        if callable(aclose):
            await aclose()
        else:
            self.close()

    def __enter__(self) -> FinalAnswerStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> FinalAnswerStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _read(self, event: Event) -> tuple[Piece, ...]:
        """The pieces `event` adds to the answer."""
        kind, run = event.kind, event.run_id
        if kind == "token":
            if run in self._unread:
                return _NOTHING
            reply = self._replies.get(run)
            if reply is None:
                reply = self._replies[run] = StreamedReply()
            settled = reply.add(event.data["text"])
            return self._grown(_agent_of(event), reply, settled)
        if kind in START_KINDS:
            self._start(event)
        elif kind == "retry":
            self._replies.pop(run, None)  # the next attempt writes the reply from its start
        elif kind == "llm_end":
            return self._ended(event, event.data.get("message"))
        elif kind == "agent_finish" and run not in self._unread:
            return self._show(run, _answer(event.data["finish"]), final=True)
        elif kind in END_KINDS or kind in ERROR_KINDS:
            self._forget(run)
        return _NOTHING

    def _start(self, event: Event) -> None:
        """Marks the runs whose replies are not read as the answer: a model asked to call
        tools natively (its text is the answer only if it calls none, which the agent's
        finish tells), and every run inside a tool."""
        inside_tool = event.kind == "tool_start" or event.parent_id in self._unread
        if inside_tool or (event.kind == "llm_start" and _offers_tools(event.data["options"])):
            self._unread.add(event.run_id)

    def _ended(self, event: Event, reply: object) -> tuple[Piece, ...]:
        """A reply has ended: read whole, its final answer if it gives one."""
        run = event.run_id
        self._replies.pop(run, None)
        if run in self._unread:
            self._unread.discard(run)
            return _NOTHING
        answer = final_answer(reply.content) if isinstance(reply, Message) else None
        return self._show(_agent_of(event), answer, final=True)

    def _grown(
        self, agent: str, reply: StreamedReply, settled: Settled | None
    ) -> tuple[Piece, ...]:
        """What to yield now that `reply`'s answer is settled as far as `settled` says: as
        `_show` would for the answer whole, reading only what it adds when `reply` gave the
        answer before."""
        if settled is None:
            return _NOTHING
        shown = self._shown.get(agent)
        if settled.whole or shown is None or shown.reply is not reply:
            return self._show(agent, reply.answer(), final=False, reply=reply)
        added = settled.text
        overlap = min(len(added), shown.size - shown.matched)
        if overlap:  # a retry writing again what was yielded
            if not shown.repeats(added[:overlap]):
                return self._show(agent, reply.answer(), final=False, reply=reply)
            added = added[overlap:]
        if not added:
            return _NOTHING
        shown.add(added)
        return (added,)

    def _show(
        self, agent: str, answer: str | None, *, final: bool, reply: StreamedReply | None = None
    ) -> tuple[Piece, ...]:
        """What to yield now that `answer` is (the beginning of, unless `final`) the answer
        of `agent`, which `reply` gives: the text that follows what was yielded, else a
        restart and the answer."""
        if answer is None:
            return _NOTHING
        shown = self._shown.get(agent)
        if shown is None:
            shown = self._shown[agent] = _Shown()
        yielded = shown.text()
        shown.follow(reply, len(answer))  # `answer` begins what is yielded, whatever comes
        if answer.startswith(yielded):
            if len(answer) == len(yielded):
                return _NOTHING
            shown.add(answer[len(yielded) :])
            return (answer[len(yielded) :],)
        if yielded.startswith(answer) and not final:
            return _NOTHING  # a retry writing again what was yielded: nothing new yet
        shown.restart(answer)
        return (AnswerRestart(yielded), answer) if answer else (AnswerRestart(yielded),)

    def _forget(self, run: str) -> None:
        self._replies.pop(run, None)
        self._shown.pop(run, None)
        self._unread.discard(run)


class _Shown:
    """The answer yielded so far for one agent, in pieces, and the reply that gives it: the
    first `matched` characters yielded are that reply's answer so far."""

    __slots__ = ("_pieces", "matched", "reply", "size")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self.size = 0
        self.reply: StreamedReply | None = None
        self.matched = 0

    def text(self) -> str:
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    def follow(self, reply: StreamedReply | None, matched: int) -> None:
        self.reply, self.matched = reply, matched

    def repeats(self, text: str) -> bool:
        """Whether `text` follows the reply's answer in what was yielded; if so the reply's
        answer now takes it in."""
        if not self.text().startswith(text, self.matched):
            return False
        self.matched += len(text)
        return True

    def add(self, text: str) -> None:
        """Yields `text` after all that was yielded, which the reply's answer had reached."""
        self._pieces.append(text)
        self.size += len(text)
        self.matched = self.size

    def restart(self, answer: str) -> None:
        self._pieces, self.size, self.matched = [answer], len(answer), len(answer)


def _agent_of(event: Event) -> str:
    """The run whose answer a model run's reply gives: the agent's that called the model."""
    return event.parent_id or event.run_id


def _offers_tools(options: Mapping[str, Any]) -> bool:
    return bool(options.get("tools"))


def _answer(finish: AgentFinish) -> str | None:
    """The answer an agent finished with: its `output`, or its one return value, as text."""
    values = finish.return_values
    if "output" in values:
        answer = values["output"]
    elif len(values) == 1:
        [answer] = values.values()
    else:
        return None
    return answer if isinstance(answer, str) else None
