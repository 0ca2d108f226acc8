"""FinalAnswerStream: only the final answer of a MRKL run, token by token, from its events."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

from chainkit.callbacks.errors import HandlerConfigError, HandlerTypeError
from chainkit.callbacks.events import Event

DEFAULT_KEYWORD = "Final Answer:"


class _Scan:
    """One model reply read token by token: silent until the keyword has gone by, then the
    text after it."""

    __slots__ = ("found", "started", "tail")

    def __init__(self) -> None:
        self.tail = ""  # the end of the reply so far that could be the keyword's beginning
        self.found = False
        self.started = False  # whether any answer text was given yet

    def feed(self, text: str, keyword: str) -> str:
        if not self.found:
            # The keyword may end in this token and begin in the ones before.
            text = self.tail + text
            at = text.find(keyword)
            if at < 0:
                self.tail = text[max(len(text) - len(keyword) + 1, 0) :]
                return ""
            self.found = True
            text = text[at + len(keyword) :]
        if not self.started:
            text = text.lstrip()
            self.started = bool(text)
        return text


class FinalAnswerStream:
    """Yields the text after `keyword` in each model reply of `events` (what `chains.stream`
    or `chains.astream` yields), piece by piece as the tokens arrive, even when the keyword
    itself is split across tokens. Iterate it with `for`, or `async for` over an async stream.

    Each stream keeps its own keyword and state: streams of different keywords never mix.
    Leaving its loop closes the events it reads, as `close()` / `aclose()` and leaving a
    `with` / `async with` block do: the run they come from stops, each of its runs still open
    ending with `callbacks.StreamClosed`.
    """

    def __init__(
        self, events: Iterable[Event] | AsyncIterable[Event], keyword: str = DEFAULT_KEYWORD
    ) -> None:
        if not isinstance(keyword, str) or not keyword:
            raise HandlerConfigError(f"keyword must be a non-empty str, got {keyword!r}")
        if not isinstance(events, Iterable | AsyncIterable):
            raise HandlerTypeError(
                f"FinalAnswerStream reads the events of chains.stream or chains.astream, got "
                f"{type(events).__name__}"
            )
        self.keyword = keyword
        self._events = events
        self._replies: dict[str, _Scan] = {}

    def _text(self, event: Event) -> str:
        if event.kind != "token":
            if event.kind in ("llm_end", "llm_error"):
                self._replies.pop(event.run_id, None)
            return ""
        scan = self._replies.get(event.run_id)
        if scan is None:
            scan = self._replies[event.run_id] = _Scan()
        return scan.feed(event.data["text"], self.keyword)

    def __iter__(self) -> Iterator[str]:
        if not isinstance(self._events, Iterable):
            raise HandlerTypeError("these events are async: iterate with `async for`")
        try:
            for event in self._events:
                if text := self._text(event):
                    yield text
        finally:  # left early or not: a run still going has no reader left
            self.close()

    async def __aiter__(self) -> AsyncIterator[str]:
        try:
            if isinstance(self._events, AsyncIterable):
                async for event in self._events:
                    if text := self._text(event):
                        yield text
            else:
                for event in self._events:
                    if text := self._text(event):
                        yield text
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
