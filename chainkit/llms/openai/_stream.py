"""Streamed text of the OpenAI backend: reported as it comes, attempt by attempt, and handed on
to the caller once, across retries."""

from __future__ import annotations

from chainkit.callbacks import Handler
from chainkit.llms.openai._reply import Masker, StreamAccumulator
from chainkit.llms.options import StreamingFunc


class StreamRelay:
    """Reports each attempt's streamed text to the callbacks (`handle_streaming_func`) and
    hands one call's text to the caller's `streaming_func` at most once across retries.

    The callbacks hear every attempt as it streamed: a retry reports the text the failed
    attempt had streamed as discarded (`streamed()`), and the next attempt streams its reply
    from the start. The caller's function cannot be told to take text back, so when an
    attempt fails after text was handed over, the retry's stream is held back until it gets
    past that same text, and only what is new is handed over. If a retried stream differs
    from what was handed over (sampling is not repeatable), nothing more of it is handed
    over; the returned Message always holds the whole reply of the attempt that succeeded.
    """

    def __init__(self, streaming_func: StreamingFunc | None, callbacks: Handler | None) -> None:
        self._func = streaming_func
        self._heard = None if callbacks is None else callbacks.handle_streaming_func
        self._sent: list[str] = []
        self._streamed: list[str] = []  # the current attempt's text, as the callbacks heard it
        self._shown = ""  # what was handed over before the current attempt
        self._matched = 0  # how much of it the current attempt has repeated
        self._diverged = False

    def attempt(self, mask: Masker) -> StreamAccumulator:
        """Starts an attempt; returns the accumulator it feeds its lines to."""
        self._streamed = []
        self._shown = "".join(self._sent)
        self._matched = 0
        self._diverged = False
        return StreamAccumulator(self._relay, mask)

    def streamed(self) -> str:
        """The text the current (or last) attempt has streamed so far."""
        return "".join(self._streamed)

    def _relay(self, text: str) -> None:
        self._streamed.append(text)
        if self._heard is not None:
            self._heard(text)
        if self._diverged or self._func is None:
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
