"""The output of a batch job: one JSON line per finished run, crash-safe and resumable.

Each line is written by `os.write` of its whole bytes to a file opened in append mode, so
lines never interleave, and a process killed mid-run leaves whole lines behind, save at most
a torn last one, which `resume` repairs. A write that fails (a full disk, an I/O error, the
file removed or replaced) is cut back to the last whole line at once and raises
`OutputWriteError`: the job must stop, as nothing more it does can be kept. Lines reach the
disk (fsync) within a second of being written, and when the job ends. One job at a time may
write a file: a second is refused while the first holds its lock.

An output that is not a regular file (a pipe, /dev/stdout, /dev/null) is only written to:
there is nothing to resume from, lock or sync.
"""

from __future__ import annotations

import json
import json.scanner
import os
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any, Protocol

from chainkit._batch.records import run_key
from chainkit._errors import OutputBusyError, OutputWriteError
from chainkit._text import counted

_HEAD = b'{"id": '
_LINE = ', "line": '
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]

SYNC_INTERVAL = 1.0
"""The longest a written line waits before it is made durable (fsync), in seconds."""

try:
    import fcntl
except ImportError:  # not on Windows, where files are locked by whoever opens them
    fcntl = None  # type: ignore[assignment]


Done = dict[str, bool | None]


class Timer(Protocol):
    def cancel(self) -> None: ...


Schedule = Callable[[float, Callable[[], None]], Timer]
"""Calls a function after a delay in seconds, in another thread; what it gives cancels it."""


def in_a_thread(delay: float, function: Callable[[], None]) -> Timer:
    """The default `Schedule`: a daemon timer thread."""
    timer = threading.Timer(delay, function)
    timer.daemon = True
    timer.start()
    return timer


class OutputFile:
    """The JSONL output file at `path`, opened for appending (made if missing).

    `fsync` makes a descriptor's writes durable and `schedule` runs the sync that follows a
    write by a second; tests give their own, to count the syncs and to run the schedule on a
    simulated clock.
    """

    def __init__(
        self,
        path: str,
        *,
        fsync: Callable[[int], None] = os.fsync,
        schedule: Schedule = in_a_thread,
    ) -> None:
        self.path = path
        self._fsync = fsync
        self._schedule = schedule
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self.regular = stat.S_ISREG(os.fstat(self._fd).st_mode)
            if self.regular:
                _lock(self._fd, path)
                self._end = os.fstat(self._fd).st_size  # where the last whole line ends
        except BaseException:
            os.close(self._fd)
            raise
        self._mutex = threading.Lock()  # the sync timer's thread shares the descriptor
        self._timer: Timer | None = None
        self._unsynced = False
        self._broken: OutputWriteError | None = None
        self._unreported = False  # _broken came from the timer's sync: no caller has seen it

    def resume(self, tell: Callable[[str], None], *, drop_failed: bool = False) -> Done:
        """The run keys (`records.run_key`) of the runs the file holds, each with whether it
        failed (a reader may then set None, to mark runs it met). A torn last line, left by a
        process killed while writing it, is cut off (or, if whole but for its line break,
        ended). With `drop_failed`, lines of failed runs are removed, so that they run
        again."""
        done: Done = {}
        if not self.regular:
            return done
        for number, raw in self._lines(tell):
            known = _known_line(raw)
            if known is None:
                if raw.strip():
                    tell(f"line {number} of {self.path} is not a result line; left as it is")
                continue
            key, failed = known
            done[key] = done.get(key, False) or failed
        if drop_failed and any(done.values()):
            dropped = {key for key, failed in done.items() if failed}
            self._rewrite_without(dropped)
            for key in dropped:
                del done[key]
            tell(f"removed {counted(len(dropped), 'failed run')} from {self.path}, to run again")
        return done

    def append(self, line: dict[str, Any]) -> None:
        """Writes `line` as one JSON line; OutputWriteError if it cannot be, once a line has
        failed to be, or once the file was removed or replaced."""
        data = encode(line)
        with self._mutex:
            self._check()
            try:
                _write_all(self._fd, data)
            except OSError as error:
                self._fail(error.strerror or str(error), error)
            if not self.regular:
                return
            gone = self._gone()
            if gone:
                self._fail(gone)
            self._end += len(data)
            self._unsynced = True
            if self._timer is None:
                self._timer = self._schedule(SYNC_INTERVAL, self._timed_sync)

    def close(self) -> None:
        """Makes what was written durable, and lets go of the file and its lock;
        OutputWriteError if the last lines cannot be made durable."""
        with self._mutex:
            if self._fd < 0:
                return
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            try:
                if self._broken is None:
                    self._sync()
            finally:
                os.close(self._fd)  # releases the lock too
                self._fd = -1
        if self._broken is not None and self._unreported:
            self._unreported = False
            raise self._broken

    def _timed_sync(self) -> None:
        with self._mutex:
            self._timer = None
            if self._fd < 0 or self._broken is not None:
                return
            try:
                self._sync()
            except OutputWriteError:  # kept in _broken: the next append or close raises it
                self._unreported = True

    def _sync(self) -> None:
        if not self._unsynced:
            return
        try:
            self._fsync(self._fd)
        except OSError as error:
            self._fail(error.strerror or str(error), error)
        self._unsynced = False

    def _check(self) -> None:
        if self._fd < 0:
            raise OutputWriteError(f"{self.path} is closed")
        if self._broken is not None:
            self._unreported = False
            raise self._broken

    def _gone(self) -> str:
        """Why the path no longer leads to the file being written ("" while it does)."""
        try:
            there = os.stat(self.path)
        except FileNotFoundError:
            return "it was removed"
        mine = os.fstat(self._fd)
        if (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino):
            return "it was replaced by another file"
        return ""

    def _fail(self, reason: str, error: OSError | None = None) -> None:
        """Cuts a line written in part back off, and raises (for good) OutputWriteError."""
        if self.regular:
            with suppress(OSError):
                os.ftruncate(self._fd, self._end)
        self._broken = OutputWriteError(
            f"cannot write to {self.path}: {reason}; stopped, the lines written so far are "
            "kept: run the same command again to go on"
        )
        raise self._broken from error

    def _lines(self, tell: Callable[[str], None]) -> Iterator[tuple[int, bytes]]:
        """The file's lines, numbered. A torn last line is repaired (see `resume`) before it
        is given, if it is kept."""
        with open(self.path, "rb") as lines:
            for number, raw in enumerate(lines, 1):
                if raw.endswith(b"\n"):
                    yield number, raw
                elif self._repaired(raw, tell):
                    yield number, raw + b"\n"

    def _repaired(self, torn: bytes, tell: Callable[[str], None]) -> bool:
        """Ends a last line that is whole but for its line break (True), or cuts off a torn
        one (False)."""
        whole = _parsed(torn) is not None
        if whole:
            os.write(self._fd, b"\n")
            tell(f"the last line of {self.path} lacked its line break; added it")
        else:
            os.ftruncate(self._fd, os.fstat(self._fd).st_size - len(torn))
            tell(
                f"removed the torn last line of {self.path} ({counted(len(torn), 'byte')}), left "
                "by a job that was stopped while writing it; its run will be done again"
            )
        self._fsync(self._fd)
        self._end = os.fstat(self._fd).st_size
        return whole

    def _rewrite_without(self, failed: set[str]) -> None:
        """Replaces the file by a copy without the lines of `failed` runs, atomically: a new
        file, locked before it is renamed over the old one (through a symbolic link, the
        file it leads to), so that no other job can take it in between."""
        target = os.path.realpath(self.path)
        temporary = f"{target}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _lock(fd, temporary)
            os.fchmod(fd, stat.S_IMODE(os.fstat(self._fd).st_mode))
            with open(self.path, "rb") as lines:
                for raw in lines:
                    known = _known_line(raw)
                    if known is None or known[0] not in failed:
                        _write_all(fd, raw)
            self._fsync(fd)
            os.replace(temporary, target)
        except BaseException:
            os.close(fd)
            with suppress(OSError):
                os.unlink(temporary)
            raise
        _sync_directory(target, self._fsync)
        os.close(self._fd)
        self._fd = fd
        self._end = os.fstat(fd).st_size


def encode(line: dict[str, Any]) -> bytes:
    """`line` as one line of JSON (UTF-8, ending in a line break). Values that JSON has no
    form for are written as their text; text that is no valid Unicode, escaped."""
    try:
        text = json.dumps(line, ensure_ascii=False, allow_nan=False, default=_jsonable)
    except (TypeError, ValueError, RecursionError):
        # NaN, a value nested too deep or one that refuses to be shown: the output as text
        # rather than no line (and no job: a result that cannot be written stops it).
        line = {**line, "output": _as_text(line.get("output"))}
        text = json.dumps(line, ensure_ascii=False, default=_jsonable)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # lone surrogates: as \u escapes, which JSON allows
        return json.dumps(line, default=_jsonable).encode() + b"\n"


def _lock(fd: int, path: str) -> None:
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise OutputBusyError(
            f"{path} is being written by another chainkit batch; wait for it to end"
        ) from None


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    while written < len(data):  # a signal cut the write short; a full disk raises next
        written += os.write(fd, data[written:])


def _jsonable(value: object) -> Any:
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    try:
        return str(value)
    except Exception:
        return _as_text(value)


def _as_text(value: object) -> str:
    """`repr(value)`, shortened where it nests too deep; a placeholder naming its type where
    it raises."""
    import reprlib

    try:
        return repr(value)
    except RecursionError:
        return reprlib.repr(value)
    except Exception as error:
        return f"<{type(value).__name__} that cannot be shown: {type(error).__name__}>"


def _known_line(raw: bytes) -> tuple[str, bool] | None:
    """The run key of a result line and whether the run failed; None for a line that is
    not one."""
    quick = _quick_key(raw)
    if quick is not None:
        return quick
    line = _parsed(raw)
    if line is None:
        return None
    return run_key(line["id"], line.get("line", 0)), "error" in line


def _quick_key(raw: bytes) -> tuple[str, bool] | None:
    """What `_known_line` gives, read off the head of a line as `encode` writes them (`id`,
    then `line` for a line without an id, then `output` or `error`), without parsing the
    rest: a resume reads millions. None for any other line, which is then parsed whole.

    A whole line (ending in a line break) that starts as a result line and holds no second
    start is one that a single write made: `{"id": ` cannot appear inside a JSON string,
    where quotes are escaped, and a line torn by a crash is cut off on resume, or, if an
    append followed it before, shows the second start of that append."""
    if not raw.startswith(_HEAD) or not raw.endswith(b"}\n") or raw.count(_HEAD) != 1:
        return None
    try:
        text = raw.decode()
        run_id, end = _scan(text, len(_HEAD))
        line = 0
        if run_id is None and text.startswith(_LINE, end):
            line, end = _scan(text, end + len(_LINE))
            if not _is_whole(line) or line < 1:
                return None
        elif not (isinstance(run_id, str) or _is_whole(run_id)):
            return None
    except (UnicodeDecodeError, StopIteration, RecursionError):
        return None
    if text.startswith(', "error": ', end):
        return run_key(run_id, line), True
    if text.startswith(', "output": ', end):
        return run_key(run_id, line), False
    return None


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parsed(raw: bytes) -> dict[str, Any] | None:
    """A result line's data, or None for a line that is not one: its `id` is a string or a
    whole number, or null beside the `line` number of an input line without one."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    run_id = data.get("id")
    if run_id is None:
        line = data.get("line")
        named = isinstance(line, int) and not isinstance(line, bool) and line > 0
        return data if named else None
    return data if isinstance(run_id, int | str) and not isinstance(run_id, bool) else None


def _sync_directory(path: str, fsync: Callable[[int], None]) -> None:
    """Makes a rename in the directory of `path` reach the disk (POSIX only)."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
