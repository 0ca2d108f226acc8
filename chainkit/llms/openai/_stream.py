"""Streamed text of the OpenAI backend handed on to the caller once, across retries."""

from __future__ import annotations

from chainkit.llms.openai._reply import Masker, StreamAccumulator
from chainkit.llms.options import StreamingFunc


class StreamRelay:
    """Hands one call's streamed text to `streaming_func` at most once across retries.

    When an attempt fails after text was handed over, the retry's stream usually starts with
    that same text again: it is held back until the stream gets past it, and only what is new
    is handed over. If a retried stream differs from what was handed over (sampling is not
    repeatable), nothing more of it is handed over, since the text shown so far cannot be
    taken back; the returned Message always holds the whole reply of the attempt that
    succeeded.
    """

    def __init__(self, streaming_func: StreamingFunc) -> None:
        self._func = streaming_func
        self._sent: list[str] = []
        self._shown = ""  # what was handed over before the current attempt
        self._matched = 0  # how much of it the current attempt has repeated
        self._diverged = False

    def attempt(self, mask: Masker) -> StreamAccumulator:
        """Starts an attempt; returns the accumulator it feeds its lines to."""
        self._shown = "".join(self._sent)
        self._matched = 0
        self._diverged = False
        return StreamAccumulator(self._relay, mask)

    def _relay(self, text: str) -> None:
        if self._diverged:
            return
        if self._matched < len(self._shown):
            repeated = self._shown[self._matched : self._matched + len(text)]
            if not text.startswith(repeated):
                self._diverged = True
                return
            self._matched += len(repeated)
            text = text[len(repeated) :]
            if not text:
                return
        self._sent.append(text)
        self._matched += len(text)
        self._func(text)
