"""Feeding text to a caller's streaming callback: a finished text in pieces, as scripted and
offline models do, and one reply's text at most once across attempts that each stream it from
its start (a backend's retries, a `Fallbacks`' models)."""

from __future__ import annotations

from chainkit.llms.options import StreamingFunc


def stream_text(text: str, streaming_func: StreamingFunc, chunk_size: int) -> None:
    """Hands `text` to `streaming_func` in pieces of `chunk_size` characters."""
    for start in range(0, len(text), chunk_size):
        streaming_func(text[start : start + chunk_size])


class HandedOnce:
    """A streaming function that hands `streaming_func` each piece of a reply's text once,
    across attempts (`restart()` begins one) that each stream the reply from its start.

    The caller's function cannot be told to take text back: when an attempt fails after text
    was handed over, the next attempt's text is held back until it gets past that same text,
    and only what is new is handed over. If the next attempt writes something else (sampling
    is not repeatable; another model words it its own way), nothing more of it is handed
    over, so the caller never sees two replies' text joined into one.
    """

    __slots__ = ("_diverged", "_func", "_matched", "_sent", "_shown")

    def __init__(self, streaming_func: StreamingFunc) -> None:
        self._func = streaming_func
        self._sent: list[str] = []
        self._shown = ""  # what was handed over before the current attempt
        self._matched = 0  # how much of it the current attempt has repeated
        self._diverged = False

    def restart(self) -> None:
        """Begins an attempt: the text that follows starts the reply over."""
        self._shown = "".join(self._sent)
        self._matched = 0
        self._diverged = False

    def __call__(self, text: str) -> None:
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
