"""Streamed text of the OpenAI backend: reported as it comes, attempt by attempt, and handed on
to the caller once, across retries."""

from __future__ import annotations

from chainkit.callbacks import Handler
from chainkit.llms._streaming import HandedOnce
from chainkit.llms.openai._reply import Masker, StreamAccumulator
from chainkit.llms.options import StreamingFunc


class StreamRelay:
    """Reports each attempt's streamed text to the callbacks (`handle_streaming_func`) and
    hands one call's text to the caller's `streaming_func` at most once across retries.

    The callbacks hear every attempt as it streamed: a retry reports the text the failed
    attempt had streamed as discarded (`streamed()`), and the next attempt streams its reply
    from the start. The caller's function hears each piece once (`HandedOnce`): a retried
    stream that differs from what was handed over is not handed over; the returned Message
    always holds the whole reply of the attempt that succeeded.
    """

    def __init__(self, streaming_func: StreamingFunc | None, callbacks: Handler | None) -> None:
        self._once = None if streaming_func is None else HandedOnce(streaming_func)
        self._heard = None if callbacks is None else callbacks.handle_streaming_func
        self._streamed: list[str] = []  # the current attempt's text, as the callbacks heard it

    def attempt(self, mask: Masker) -> StreamAccumulator:
        """Starts an attempt; returns the accumulator it feeds its lines to."""
        self._streamed = []
        if self._once is not None:
            self._once.restart()
        return StreamAccumulator(self._relay, mask)

    def streamed(self) -> str:
        """The text the current (or last) attempt has streamed so far."""
        return "".join(self._streamed)

    def _relay(self, text: str) -> None:
        self._streamed.append(text)
        if self._heard is not None:
            self._heard(text)
        if self._once is not None:
            self._once(text)
