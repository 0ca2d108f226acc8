"""The output of a batch job: one JSON line per finished run, crash-safe and resumable.

Each line is written by a single `os.write` of its whole bytes to a file opened in append
mode, so lines never interleave, and a process killed mid-run leaves whole lines behind, save
at most a torn last one, which `resume` repairs. Lines reach the disk (fsync) at least every
second and when the job ends. One job at a time may write a file: a second is refused while
the first holds its lock.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from chainkit._batch.records import id_key

_SYNC_INTERVAL = 1.0

try:
    import fcntl
except ImportError:  # not on Windows, where files are locked by whoever opens them
    fcntl = None  # type: ignore[assignment]


class OutputBusyError(OSError):
    """Another process is writing the same output file."""


class OutputFile:
    """The JSONL output file at `path`, opened for appending (made if missing)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._fd)
                raise OutputBusyError(
                    f"{path} is being written by another chainkit batch; wait for it to end"
                ) from None
        self._synced_at = time.monotonic()
        self._unsynced = False

    def resume(
        self, tell: Callable[[str], None], *, drop_failed: bool = False
    ) -> tuple[set[str], set[str]]:
        """The ids (`id_key`) of the runs the file holds, and of those among them that failed.
        A torn last line, left by a process killed while writing it, is cut off (or, if whole
        but for its line break, ended). With `drop_failed`, lines of failed runs are removed,
        so that they run again."""
        done: set[str] = set()
        failed: set[str] = set()
        failed_lines = 0
        kept: list[bytes] = []
        end = 0  # where the file's last whole line ends
        with open(self.path, "rb") as lines:
            for number, raw in enumerate(lines, 1):
                if not raw.endswith(b"\n"):
                    self._repair(raw, end, tell)
                    line = _parsed(raw)
                    if line is not None:
                        done.add(id_key(line["id"]))
                        if "error" in line:
                            failed.add(id_key(line["id"]))
                        kept.append(raw + b"\n")
                    break
                end += len(raw)
                line = _parsed(raw)
                if line is None:
                    if raw.strip():
                        tell(f"line {number} of {self.path} is not a result line; left as it is")
                    kept.append(raw)
                elif drop_failed and "error" in line:
                    failed_lines += 1
                else:
                    done.add(id_key(line["id"]))
                    if "error" in line:
                        failed.add(id_key(line["id"]))
                    kept.append(raw)
        if failed_lines:
            self._rewrite(kept)
            tell(f"removed {failed_lines} failed runs from {self.path}, to run them again")
        return done, failed

    def append(self, line: dict[str, Any]) -> None:
        """Writes `line` as one JSON line, in a single write."""
        data = encode(line)
        written = os.write(self._fd, data)
        while written < len(data):  # a full disk or a signal cut the write short
            written += os.write(self._fd, data[written:])
        self._unsynced = True
        if time.monotonic() - self._synced_at >= _SYNC_INTERVAL:
            self.sync()

    def sync(self) -> None:
        """Makes what was written reach the disk."""
        if self._unsynced:
            os.fsync(self._fd)
            self._unsynced = False
        self._synced_at = time.monotonic()

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            self.sync()
        finally:
            os.close(self._fd)  # releases the lock too
            self._fd = -1

    def _repair(self, torn: bytes, end: int, tell: Callable[[str], None]) -> None:
        if _parsed(torn) is not None:
            os.write(self._fd, b"\n")
            tell(f"the last line of {self.path} lacked its line break; added it")
        else:
            os.truncate(self.path, end)
            tell(
                f"removed the torn last line of {self.path} ({len(torn)} bytes), left by a "
                "job that was stopped while writing it; its run will be done again"
            )
        os.fsync(self._fd)

    def _rewrite(self, lines: list[bytes]) -> None:
        """Replaces the file's content by `lines`, atomically (a new file renamed over it)."""
        temporary = f"{self.path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as new:
            new.writelines(lines)
            new.flush()
            os.fsync(new.fileno())
        os.replace(temporary, self.path)
        _sync_directory(self.path)
        # The descriptor still points at the old file: open the new one, and lock it.
        old = self._fd
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(old)


def encode(line: dict[str, Any]) -> bytes:
    """`line` as one line of JSON (UTF-8, ending in a line break). Values that JSON has no
    form for are written as their text; text that is no valid Unicode, escaped."""
    try:
        text = json.dumps(line, ensure_ascii=False, allow_nan=False, default=_jsonable)
    except (TypeError, ValueError, RecursionError):
        # NaN or a value that refuses to be shown: the output as text rather than no line.
        line = {**line, "output": repr(line.get("output"))}
        text = json.dumps(line, ensure_ascii=False, default=_jsonable)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # lone surrogates: as \u escapes, which JSON allows
        return json.dumps(line, default=_jsonable).encode() + b"\n"


def _jsonable(value: object) -> Any:
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def _parsed(raw: bytes) -> dict[str, Any] | None:
    """A result line's data, or None for a line that is not one."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    run_id = data.get("id")
    return data if isinstance(run_id, int | str) and not isinstance(run_id, bool) else None


def _sync_directory(path: str) -> None:
    """Makes a rename in the directory of `path` reach the disk (POSIX only)."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
