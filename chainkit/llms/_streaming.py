"""Feeding a finished text to a streaming callback, as scripted and offline models do."""

from __future__ import annotations

from chainkit.llms.options import StreamingFunc


def stream_text(text: str, streaming_func: StreamingFunc, chunk_size: int) -> None:
    """Hands `text` to `streaming_func` in pieces of `chunk_size` characters."""
    for start in range(0, len(text), chunk_size):
        streaming_func(text[start : start + chunk_size])
