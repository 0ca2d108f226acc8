"""The progress line of a job of many runs (`chains.batch`, `chainkit batch`): done, failed and
total, the rate and the time left, on stderr.

On a terminal the line is redrawn in place, at most ten times a second; anywhere else (a log
file, CI) a new line is written at most every two seconds, so the log stays readable. It is
safe to update from many threads, and a stream that fails to write loses the line, never the
job.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import suppress
from typing import TextIO

_BAR_WIDTH = 20
_TERMINAL_INTERVAL = 0.1
_LOG_INTERVAL = 2.0


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal, where a progress line belongs by default."""
    return sys.stderr is not None and _is_terminal(sys.stderr)


class Progress:
    """Counts finished runs of `total` and shows them on `stream` (stderr by default).

    `skipped` runs were done before this job started (a resumed batch): they count towards
    the total but not the rate.
    """

    def __init__(
        self, total: int, label: str, *, skipped: int = 0, stream: TextIO | None = None
    ) -> None:
        self.total = total
        self.label = label
        self.skipped = skipped
        self.done = 0
        self.failed = 0
        self._stream = stream if stream is not None else sys.stderr
        self._terminal = _is_terminal(self._stream)
        self._interval = _TERMINAL_INTERVAL if self._terminal else _LOG_INTERVAL
        self._started = time.monotonic()
        self._shown_at = float("-inf")
        self._lock = threading.Lock()
        self._closed = False
        self._show(force=True)

    def add(self, *, failed: bool = False) -> None:
        """One more run finished (and failed, if `failed`)."""
        with self._lock:
            self.done += 1
            self.failed += failed
        self._show()

    def skip(self) -> None:
        """One more run of the total turned out to be done before (a resumed batch)."""
        with self._lock:
            self.skipped += 1
        self._show()

    def drop(self) -> None:
        """One of the total turned out to be no run (a repeated id)."""
        with self._lock:
            self.total -= 1
        self._show()

    def note(self, text: str) -> None:
        """Writes `text` as a line of its own, above the progress line."""
        with self._lock:
            if self._terminal and not self._closed:
                text = f"\r{text}\x1b[K\n{self.line()}"
            else:
                text += "\n"
        with suppress(OSError, ValueError, AttributeError):
            self._stream.write(text)
            self._stream.flush()

    def close(self) -> None:
        """Shows the final count and ends the line."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._show(force=True, final=True)

    def line(self) -> str:
        """The progress as one line of text."""
        finished = self.skipped + self.done
        total = max(self.total, finished)
        filled = _BAR_WIDTH * finished // total if total else _BAR_WIDTH
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        elapsed = time.monotonic() - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.label}: [{bar}] {finished}/{total}"]
        if self.failed:
            parts.append(f"({self.failed} failed)")
        parts.append(f"{rate:.1f}/s")
        left = total - finished
        if left and rate > 0:
            parts.append(f"ETA {_duration(left / rate)}")
        elif not left:
            parts.append(f"in {_duration(elapsed)}")
        return " ".join(parts)

    def _show(self, *, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            if self._closed and not final:
                return
            if not force and now - self._shown_at < self._interval:
                return
            self._shown_at = now
            text = self.line()
        if self._terminal:
            text = f"\r{text}\x1b[K" + ("\n" if final else "")
        else:
            text += "\n"
        with suppress(OSError, ValueError, AttributeError):
            self._stream.write(text)
            self._stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a stand-in for a stream, or a closed one
        return False


def _duration(seconds: float) -> str:
    """ "42s", "3m05s", "2h07m"."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
