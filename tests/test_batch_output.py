"""The output file of `chainkit batch` (chainkit._batch.output) and the run keys of its input
lines (chainkit._batch.records): locking, durability on a simulated clock, failed writes cut
back, resumes, outputs that are not regular files, and id namespaces."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chainkit import ChainkitError, OutputBusyError, OutputWriteError
from chainkit._batch import output as output_module
from chainkit._batch.output import SYNC_INTERVAL, OutputFile, encode, in_a_thread
from chainkit._batch.records import BadLine, Record, key_of, names, parse, run_key


class SimulatedClock:
    """A `Schedule` whose timers fire only when the test moves the clock on."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[SimulatedTimer] = []

    def __call__(self, delay: float, function: Callable[[], None]) -> SimulatedTimer:
        timer = SimulatedTimer(self.now + delay, function)
        self.timers.append(timer)
        return timer

    def pending(self) -> list[SimulatedTimer]:
        return [timer for timer in self.timers if not timer.cancelled and not timer.fired]

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for timer in self.pending():
            if timer.due <= self.now:
                timer.fired = True
                timer.function()


@dataclasses.dataclass
class SimulatedTimer:
    due: float
    function: Callable[[], None]
    cancelled: bool = False
    fired: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class CountingSync:
    """An fsync that counts its calls (and really syncs), or fails with `error`."""

    def __init__(self, error: OSError | None = None) -> None:
        self.calls = 0
        self.error = error
        self.called = threading.Event()

    def __call__(self, fd: int) -> None:
        self.calls += 1
        self.called.set()
        if self.error is not None:
            raise self.error
        os.fsync(fd)


def never(delay: float, function: Callable[[], None]) -> SimulatedTimer:
    """A `Schedule` whose timers never fire."""
    return SimulatedTimer(delay, function)


def quiet(text: str) -> None:
    """A `tell` for resumes that are expected to say nothing."""
    raise AssertionError(f"unexpected: {text}")


def told() -> tuple[list[str], Callable[[str], None]]:
    said: list[str] = []
    return said, said.append


def result(run_id: Any, **rest: Any) -> dict[str, Any]:
    return {"id": run_id, **rest}


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


# Locking and closing


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count descriptors")
def test_close_lets_go_of_the_descriptor_and_the_lock(tmp_path):
    path = str(tmp_path / "out.jsonl")
    before = open_descriptors()
    first = OutputFile(path, schedule=never)
    assert open_descriptors() == before + 1
    with pytest.raises(OutputBusyError) as busy:
        OutputFile(path, schedule=never)
    assert str(busy.value) == (
        f"{path} is being written by another chainkit batch; wait for it to end"
    )
    assert open_descriptors() == before + 1  # the refused one closed its own
    first.close()
    assert open_descriptors() == before
    first.close()  # a second close does nothing
    second = OutputFile(path, schedule=never)  # the lock was released
    second.close()


def test_errors_are_chainkit_errors_and_os_errors():
    for error in (OutputBusyError, OutputWriteError):
        assert issubclass(error, ChainkitError) and issubclass(error, OSError)


def test_a_closed_output_refuses_to_write(tmp_path):
    output = OutputFile(str(tmp_path / "out.jsonl"), schedule=never)
    output.close()
    with pytest.raises(OutputWriteError, match="is closed"):
        output.append(result(1))


def test_the_rewritten_output_of_retry_failed_stays_locked(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(encode(result(1, output="a")) + encode(result(2, error={"type": "E"})))
    said, tell = told()
    sync = CountingSync()
    output = OutputFile(str(path), fsync=sync, schedule=never)
    assert output.resume(tell, drop_failed=True) == {"1": False}
    assert sync.calls == 2  # the new file, then its directory, before it is written to
    assert said == [f"removed 1 failed run from {path}, to run again"]
    assert path.read_bytes() == encode(result(1, output="a"))
    with pytest.raises(OutputBusyError):
        OutputFile(str(path), schedule=never)
    output.append(result(2, output="b"))  # into the new file, not the old one
    output.close()
    assert [json.loads(line)["id"] for line in path.read_bytes().splitlines()] == [1, 2]
    assert not list(tmp_path.glob("*.tmp"))


def test_retry_failed_counts_failed_runs_in_the_plural_and_keeps_other_lines(tmp_path):
    path = tmp_path / "out.jsonl"
    kept = encode(result("a", output=1)) + b"not a result\n" + encode(result(None, line=3))
    path.write_bytes(encode(result(1, error={})) + kept + encode(result(2, error={})))
    said, tell = told()
    output = OutputFile(str(path), schedule=never)
    assert output.resume(tell, drop_failed=True) == {'"a"': False, "line 3": False}
    output.close()
    assert path.read_bytes() == kept
    assert said[-1] == f"removed 2 failed runs from {path}, to run again"
    assert said[0] == f"line 3 of {path} is not a result line; left as it is"


def test_a_symlinked_output_is_rewritten_through_its_link_keeping_its_mode(tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_bytes(encode(result(1, output="a")) + encode(result(2, error={})))
    target.chmod(0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    output = OutputFile(str(link), schedule=never)
    output.resume(lambda text: None, drop_failed=True)
    output.append(result(2, output="b"))
    output.close()
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == encode(result(1, output="a")) + encode(result(2, output="b"))
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_without_failed_lines_retry_failed_rewrites_nothing(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(encode(result(1, output="a")))
    inode = path.stat().st_ino
    output = OutputFile(str(path), schedule=never)
    assert output.resume(quiet, drop_failed=True) == {"1": False}
    output.close()
    assert path.stat().st_ino == inode


# Durability


def test_a_line_is_synced_a_second_after_it_is_written_on_a_simulated_clock(tmp_path):
    clock, sync = SimulatedClock(), CountingSync()
    output = OutputFile(str(tmp_path / "out.jsonl"), fsync=sync, schedule=clock)
    output.append(result(1))
    assert [timer.due for timer in clock.pending()] == [SYNC_INTERVAL] == [1.0]
    clock.advance(0.5)
    output.append(result(2))  # the sync already due covers it: no second timer
    assert len(clock.pending()) == 1 and sync.calls == 0
    clock.advance(0.49)
    assert sync.calls == 0
    clock.advance(0.01)
    assert sync.calls == 1 and not clock.pending()
    clock.advance(5)  # nothing written since: nothing to sync, nothing scheduled
    assert sync.calls == 1 and not clock.pending()
    output.append(result(3))
    (timer,) = clock.pending()
    assert timer.due == clock.now + 1.0
    output.close()  # syncs at once, and the timer is cancelled
    assert sync.calls == 2 and timer.cancelled
    timer.function()  # a timer that fires as it is cancelled finds the file closed
    assert sync.calls == 2


def test_closing_syncs_only_what_was_not_synced(tmp_path):
    sync = CountingSync()
    OutputFile(str(tmp_path / "a.jsonl"), fsync=sync, schedule=never).close()
    assert sync.calls == 0
    output = OutputFile(str(tmp_path / "b.jsonl"), fsync=sync, schedule=never)
    output.append(result(1))
    output.close()
    assert sync.calls == 1


@pytest.mark.timeout(30)
def test_the_default_schedule_syncs_a_line_with_no_later_one(tmp_path):
    sync = CountingSync()
    output = OutputFile(str(tmp_path / "out.jsonl"), fsync=sync)
    try:
        output.append(result(1))
        assert sync.called.wait(20), "the line was not synced"  # due after one second
        assert sync.calls == 1
    finally:
        output.close()
    assert sync.calls == 1


def test_in_a_thread_runs_later_unless_cancelled():
    ran = threading.Event()
    timer = in_a_thread(0.0, ran.set)
    assert isinstance(timer, threading.Timer) and timer.daemon  # never holds the exit back
    assert ran.wait(20)
    cancelled = threading.Event()
    in_a_thread(30.0, cancelled.set).cancel()
    assert not cancelled.is_set()


def test_a_sync_that_fails_in_the_timer_stops_the_next_write(tmp_path):
    clock, sync = SimulatedClock(), CountingSync(OSError(errno.EIO, "Input/output error"))
    path = tmp_path / "out.jsonl"
    output = OutputFile(str(path), fsync=sync, schedule=clock)
    output.append(result(1))
    clock.advance(1.0)
    assert sync.calls == 1
    with pytest.raises(OutputWriteError, match="Input/output error; stopped"):
        output.append(result(2))
    assert len(path.read_bytes().splitlines()) == 1
    output.close()  # the failure was told already: closing only lets go


def test_a_sync_that_fails_in_the_timer_is_raised_by_close_if_nothing_else_did(tmp_path):
    clock, sync = SimulatedClock(), CountingSync(OSError(errno.EIO, "Input/output error"))
    output = OutputFile(str(tmp_path / "out.jsonl"), fsync=sync, schedule=clock)
    output.append(result(1))
    clock.advance(1.0)
    with pytest.raises(OutputWriteError, match=r"cannot write to .*Input/output error"):
        output.close()
    output.close()
    assert sync.calls == 1  # a broken output is not synced again


def test_a_sync_that_fails_on_close_is_raised(tmp_path):
    sync = CountingSync(OSError(errno.EIO, "Input/output error"))
    output = OutputFile(str(tmp_path / "out.jsonl"), fsync=sync, schedule=never)
    output.append(result(1))
    with pytest.raises(OutputWriteError):
        output.close()
    assert sync.calls == 1


# Failed writes


@contextlib.contextmanager
def tiny_filesystem(directory: Path, size: str = "16k") -> Iterator[Path]:
    """A tmpfs of `size` mounted on `directory` (root only); skips the test where it cannot be."""
    directory.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs to fill up needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def test_a_full_disk_cuts_the_torn_line_back_and_refuses_every_later_write(tmp_path):
    with tiny_filesystem(tmp_path / "tiny") as tiny:
        path = tiny / "out.jsonl"
        output = OutputFile(str(path), schedule=never)
        line = result(0, output="x" * 3000)  # lines straddle the 4 KiB pages: writes tear
        written = 0
        with pytest.raises(OutputWriteError, match="No space left on device; stopped") as caught:
            while written < 100:
                output.append({**line, "id": written})
                written += 1
        assert isinstance(caught.value.__cause__, OSError)
        assert caught.value.__cause__.errno == errno.ENOSPC
        assert 0 < written < 100
        data = path.read_bytes()
        assert data.endswith(b"\n") and len(data) == written * len(encode(line))
        with pytest.raises(OutputWriteError):
            output.append(result("small"))
        assert path.read_bytes() == data
        output.close()


def test_a_full_device_stops_the_first_write(tmp_path):
    output = OutputFile("/dev/full", schedule=never)
    assert not output.regular
    with pytest.raises(OutputWriteError, match="cannot write to /dev/full: No space left"):
        output.append(result(1))
    with pytest.raises(OutputWriteError):
        output.append(result(2))
    output.close()


def test_a_removed_output_stops_the_next_write(tmp_path):
    path = tmp_path / "out.jsonl"
    output = OutputFile(str(path), schedule=never)
    output.append(result(1))
    path.unlink()
    with pytest.raises(OutputWriteError) as caught:
        output.append(result(2))
    assert str(caught.value) == (
        f"cannot write to {path}: it was removed; stopped, the lines written so far are kept: "
        "run the same command again to go on"
    )
    output.close()


def test_a_replaced_output_stops_the_next_write(tmp_path):
    path = tmp_path / "out.jsonl"
    output = OutputFile(str(path), schedule=never)
    output.append(result(1))
    (tmp_path / "other.jsonl").write_bytes(b"")
    os.replace(tmp_path / "other.jsonl", path)
    with pytest.raises(OutputWriteError) as caught:
        output.append(result(2))
    assert f"cannot write to {path}: it was replaced by another file; stopped" in str(caught.value)
    output.close()
    assert path.read_bytes() == b""


# Outputs that are not regular files


def test_dev_null_is_written_without_a_resume_a_lock_or_a_sync():
    sync = CountingSync(OSError(errno.EINVAL, "Invalid argument"))
    first = OutputFile("/dev/null", fsync=sync, schedule=never)
    second = OutputFile("/dev/null", fsync=sync, schedule=never)  # no lock on a device
    assert first.resume(quiet, drop_failed=True) == {}
    first.append(result(1))
    first.close()
    second.close()
    assert sync.calls == 0


@pytest.mark.timeout(30)
def test_a_pipe_is_written_and_never_read(tmp_path):
    read_end, write_end = os.pipe()
    try:
        output = OutputFile(f"/proc/self/fd/{write_end}", schedule=never)
        assert output.resume(quiet) == {}  # reading would wait forever
        output.append(result(1, output="a"))
        output.close()
        assert os.read(read_end, 1000) == encode(result(1, output="a"))
    finally:
        os.close(read_end)
        os.close(write_end)


# Resuming


def test_resume_gives_the_keys_done_and_failed(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(
        encode(result(1, output="a"))
        + encode(result("1", error={}))
        + encode(result(None, line=4, error={}))
        + encode(result(None, line=5, output="x"))
    )
    output = OutputFile(str(path), schedule=never)
    done = output.resume(quiet)
    output.close()
    assert done == {"1": False, '"1"': True, "line 4": True, "line 5": False}


@pytest.mark.parametrize(
    "line",
    [
        b"[1, 2]",
        b'{"id": true}',
        b'{"id": 1.5}',
        b'{"id": [1]}',
        b'{"output": "no id"}',
        b'{"id": null}',
        b'{"id": null, "line": 0}',
        b'{"id": null, "line": true}',
        b'{"id": null, "line": "3"}',
        b'{"id": 1',
        b"[" * 100_000,
    ],
)
def test_lines_that_are_no_result_lines_are_left_and_named(tmp_path, line):
    path = tmp_path / "out.jsonl"
    path.write_bytes(line + b"\n" + encode(result(2)))
    said, tell = told()
    output = OutputFile(str(path), schedule=never)
    assert output.resume(tell) == {"2": False}
    output.close()
    assert said == [f"line 1 of {path} is not a result line; left as it is"]
    assert path.read_bytes() == line + b"\n" + encode(result(2))


def test_blank_lines_are_left_without_a_word(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b"\n  \n" + encode(result(2)))
    output = OutputFile(str(path), schedule=never)
    assert output.resume(quiet) == {"2": False}
    output.close()


def test_a_torn_last_line_is_cut_off_and_synced(tmp_path):
    path = tmp_path / "out.jsonl"
    whole = encode(result(1, output="a"))
    path.write_bytes(whole + b'{"id": 2, "outp')
    said, tell = told()
    sync = CountingSync()
    output = OutputFile(str(path), fsync=sync, schedule=never)
    assert output.resume(tell) == {"1": False}
    assert path.read_bytes() == whole and sync.calls == 1
    assert said == [
        f"removed the torn last line of {path} (15 bytes), left by a job that was stopped "
        "while writing it; its run will be done again"
    ]
    output.append(result(2))
    output.close()
    assert path.read_bytes() == whole + encode(result(2))


def test_a_last_line_whole_but_for_its_break_is_ended_and_counted(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(encode(result(1)) + encode(result(2, error={}))[:-1])
    said, tell = told()
    sync = CountingSync()
    output = OutputFile(str(path), fsync=sync, schedule=never)
    assert output.resume(tell) == {"1": False, "2": True}
    assert sync.calls == 1
    output.append(result(3))
    output.close()
    assert path.read_bytes() == encode(result(1)) + encode(result(2, error={})) + encode(result(3))
    assert said == [f"the last line of {path} lacked its line break; added it"]


def test_a_failed_write_after_a_repaired_tail_cuts_back_to_the_repair(tmp_path):
    with tiny_filesystem(tmp_path / "tiny") as tiny:
        path = tiny / "out.jsonl"
        path.write_bytes(encode(result(1)) + b'{"id": 2, "out')
        output = OutputFile(str(path), schedule=never)
        output.resume(lambda text: None)
        with pytest.raises(OutputWriteError):
            output.append(result(2, output="x" * 100_000))
        output.close()
        assert path.read_bytes() == encode(result(1))


# Encoding


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Opaque:
    def __str__(self) -> str:
        return "opaque!"


def test_encode_writes_dataclasses_as_json_and_other_objects_as_text():
    line = encode({"id": 1, "output": {"point": Point(1, 2), "other": Opaque()}})
    assert json.loads(line) == {"id": 1, "output": {"point": {"x": 1, "y": 2}, "other": "opaque!"}}
    assert line.endswith(b"\n") and line.count(b"\n") == 1


def test_encode_keeps_unicode_writes_nan_as_text_and_escapes_lone_surrogates():
    assert encode({"id": "é", "output": "中"}) == '{"id": "é", "output": "中"}\n'.encode()
    assert json.loads(encode({"id": 1, "output": float("nan")})) == {"id": 1, "output": "nan"}
    assert encode({"id": 1, "output": "\ud800"}) == b'{"id": 1, "output": "\\ud800"}\n'


# Run keys of input lines


def test_run_keys_of_ids_and_of_lines_without_one_never_meet():
    assert run_key(7, 1) == "7" and run_key("7", 1) == '"7"'
    assert run_key("é\n", 1) == json.dumps("é\n", ensure_ascii=False)
    assert run_key(None, 7) == "line 7"
    assert run_key("line 7", 7) == '"line 7"'
    assert len({run_key(7, 7), run_key("7", 7), run_key(None, 7), run_key("line 7", 7)}) == 4


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        (b'{"input": "x"}', {"id": None, "line": 3}),
        (b'{"id": null, "input": "x"}', {"id": None, "line": 3}),
        (b'{"id": 3, "input": "x"}', {"id": 3}),
        (b"not json", {"id": None, "line": 3}),
        (b"[3]", {"id": None, "line": 3}),
        (b'{"id": 3.0, "input": "x"}', {"id": None, "line": 3}),
        (b'{"id": false, "input": "x"}', {"id": None, "line": 3}),
        (b'{"id": "a", "other": "x"}', {"id": "a"}),
        (b"\xff", {"id": None, "line": 3}),
    ],
)
def test_an_input_line_is_named_by_its_id_or_else_by_its_number(raw, named):
    item = parse(raw, 3, ["input"])
    assert names(item) == named
    assert key_of(item) == run_key(named["id"], 3)


def test_parse_tells_records_from_bad_lines():
    assert parse(b'\xef\xbb\xbf{"id": 1, "input": "x", "k": 2}', 1, ["input"]) == Record(
        1, 1, {"input": "x", "k": 2}
    )
    assert parse(b'{"id": 1}', 2, ["input"]) == BadLine(
        1, 2, "missing input 'input': the chain takes ['input'], the line gives no inputs"
    )


class Unshowable:
    def __str__(self) -> str:
        raise ValueError("no text")

    def __repr__(self) -> str:
        raise ValueError("no repr")


def test_encode_writes_a_line_for_outputs_too_deep_or_unshowable():
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    line = json.loads(encode({"id": 1, "output": deep}))
    assert line["id"] == 1 and line["output"].startswith("[[[[[[") and "..." in line["output"]
    line = json.loads(encode({"id": 2, "output": {"value": Unshowable()}}))
    assert line == {"id": 2, "output": {"value": "<Unshowable that cannot be shown: ValueError>"}}
    line = json.loads(encode({"id": 3, "output": [float("inf"), Unshowable()]}))
    assert line == {"id": 3, "output": "<list that cannot be shown: ValueError>"}


@pytest.mark.parametrize(
    ("line", "known"),
    [
        (result(7, output="a"), ("7", False)),
        (result(-7, error={"type": "E"}), ("-7", True)),
        (result("7", output={"id": 1}), ('"7"', False)),  # a second start: read whole
        (result('é \\ "', output=None), (run_key('é \\ "', 0), False)),
        (result(None, line=4, error={}), ("line 4", True)),
        (result(None, line=4, output=1), ("line 4", False)),
        (result(None, line=1, output=1), ("line 1", False)),
    ],
)
def test_result_lines_are_known_by_their_key_and_whether_they_failed(line, known):
    raw = encode(line)
    assert output_module._known_line(raw) == known
    if b'"id": 1' not in raw:  # read off the head, not parsed whole
        assert output_module._quick_key(raw) == known


@pytest.mark.parametrize(
    "raw",
    [
        b'{"id": 7}\n',  # no output or error after the id
        b'{"id": 7, "seconds": 1, "error": {}}\n',  # written by no one but a hand
        b'{"id": true, "output": 1}\n',
        b'{"id": 7.5, "output": 1}\n',
        b'{"id": [7], "output": 1}\n',
        b'{"id": null, "output": 1}\n',
        b'{"id": null, "abcd": 3, "output": 1}\n',  # a number where no line number is
        b'{"id": null, "line": 0, "output": 1}\n',
        b'{"id": null, "line": false, "output": 1}\n',
        b'{"id": null, "line": "4", "output": 1}\n',
        b'{"id": 1, "outp{"id": 2, "output": 2}\n',  # a torn line, then a whole one
        b'{"id": 7, "output": 1}',  # no line break
        b'{"id": 7, "output": "\xff"}\n',
        b'{"id": , "output": 1}\n',
        b' {"id": 7, "output": 1}\n',
    ],
)
def test_other_lines_are_not_read_off_their_head(raw):
    assert output_module._quick_key(raw) is None


def test_a_hand_written_result_line_is_still_parsed_whole():
    assert output_module._known_line(b'{"seconds": 1, "error": {}, "id": 7}\n') == ("7", True)
    assert output_module._known_line(b'{"line": 1, "id": null}\n') == ("line 1", False)
    assert output_module._known_line(b'{"id": 1, "outp{"id": 2, "output": 2}\n') is None


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"\xff", "not UTF-8 text (at byte 1)"),
        (
            b"nope",
            "not JSON (Expecting value: line 1 column 1 (char 0)); expected "
            '{"id": 7, "input": "What is 2 + 2?"}',
        ),
        (b"[1]", 'a JSON list, not an object; expected {"id": 7, "input": "What is 2 + 2?"}'),
        (b'"text"', 'a JSON str, not an object; expected {"id": 7, "input": "What is 2 + 2?"}'),
        (b'{"id": true, "input": "x"}', "its id true is neither a string nor a whole number"),
        (
            b'{"id": [' + b"1234567890, " * 10 + b'1], "input": "x"}',
            "its id [1234567890, 1234567890, 1234567890, 1234567890, 1234567890…"
            " is neither a string nor a whole number",
        ),
        (
            b'{"id": 1, "b": 2, "a": 1}',
            "missing input 'input', 'other': the chain takes ['input', 'other'], the line "
            "gives ['a', 'b']",
        ),
    ],
)
def test_a_bad_line_names_what_is_wrong(raw, problem):
    item = parse(raw, 9, ["input", "other"] if b'"b"' in raw else ["input"])
    assert isinstance(item, BadLine) and item.line == 9
    assert item.problem == problem


def test_read_numbers_lines_from_one_and_skips_blank_ones(tmp_path):
    from chainkit._batch.records import read

    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"id": "a", "input": "x"}\n\n  \n{"input": "y"}\n[2]')
    items = list(read(str(path), ["input"]))
    assert items[:2] == [Record("a", 1, {"input": "x"}), Record(None, 4, {"input": "y"})]
    assert isinstance(items[2], BadLine) and items[2].line == 5 and len(items) == 3


# Descriptors, modes and failures around the edges


@contextlib.contextmanager
def descriptor_zero_free() -> Iterator[None]:
    """Closes descriptor 0 (as a job started with stdin closed has it), so that the next
    file opened takes it; gives stdin back after."""
    saved = os.dup(0)
    os.close(0)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)


def test_an_output_on_descriptor_zero_is_written_synced_and_let_go(tmp_path):
    path = tmp_path / "out.jsonl"
    clock, sync = SimulatedClock(), CountingSync()
    with descriptor_zero_free():
        output = OutputFile(str(path), fsync=sync, schedule=clock)
        assert os.path.samestat(os.fstat(0), path.stat())
        output.append(result(1))
        clock.advance(1.0)
        assert sync.calls == 1
        output.append(result(2))
        output.close()
        assert sync.calls == 2
        OutputFile(str(path), schedule=never).close()  # the lock was let go
    assert path.read_bytes() == encode(result(1)) + encode(result(2))


def test_a_new_output_is_made_readable_by_all_and_writable_by_its_owner(tmp_path):
    mask = os.umask(0)
    try:
        OutputFile(str(tmp_path / "out.jsonl"), schedule=never).close()
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o644


def test_a_write_cut_short_is_finished(tmp_path, monkeypatch):
    real_write = os.write
    calls: list[int] = []

    def short_write(fd: int, data: bytes) -> int:  # as a write a signal interrupts
        calls.append(len(data))
        return real_write(fd, bytes(data[:7]))

    path = tmp_path / "out.jsonl"
    output = OutputFile(str(path), schedule=never)
    line = result(1, output="x" * 30)
    monkeypatch.setattr(os, "write", short_write)
    output.append(line)
    monkeypatch.undo()
    output.close()
    assert path.read_bytes() == encode(line)
    assert len(calls) == -(-len(encode(line)) // 7)


def test_a_failed_write_that_cannot_be_cut_back_still_stops_the_job(tmp_path, monkeypatch):
    def no_space(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def cannot_truncate(fd: int, length: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    output = OutputFile(str(tmp_path / "out.jsonl"), schedule=never)
    monkeypatch.setattr(os, "write", no_space)
    monkeypatch.setattr(os, "ftruncate", cannot_truncate)
    with pytest.raises(OutputWriteError, match="No space left on device; stopped"):
        output.append(result(1))
    monkeypatch.undo()
    output.close()


@pytest.mark.parametrize(
    "error",
    [OSError(errno.EIO, "Input/output error"), OSError("the disk went away")],
    ids=["errno", "no errno"],
)
def test_a_failed_sync_names_its_reason_and_keeps_its_cause(tmp_path, error):
    path = tmp_path / "out.jsonl"
    output = OutputFile(str(path), fsync=CountingSync(error), schedule=never)
    output.append(result(1))
    with pytest.raises(OutputWriteError) as caught:
        output.close()
    reason = error.strerror or str(error)
    assert str(caught.value).startswith(f"cannot write to {path}: {reason}; stopped")
    assert caught.value.__cause__ is error


def test_a_broken_output_is_not_synced_by_the_timer_still_due(tmp_path):
    clock, sync = SimulatedClock(), CountingSync()
    path = tmp_path / "out.jsonl"
    output = OutputFile(str(path), fsync=sync, schedule=clock)
    output.append(result(1))
    path.unlink()
    with pytest.raises(OutputWriteError, match="it was removed"):
        output.append(result(2))
    clock.advance(1.0)
    assert sync.calls == 0
    output.close()  # the failure was told already
    assert sync.calls == 0


@pytest.mark.parametrize("vanished", [False, True], ids=["kept", "removed by another"])
def test_a_retry_failed_rewrite_that_fails_leaves_the_output_and_no_copy(tmp_path, vanished):
    path = tmp_path / "out.jsonl"
    before = encode(result(1, output="a")) + encode(result(2, error={}))
    path.write_bytes(before)

    def failing_sync(fd: int) -> None:
        if vanished:
            for copy in tmp_path.glob("*.tmp"):
                copy.unlink()
        raise OSError(errno.EIO, "Input/output error")

    output = OutputFile(str(path), fsync=failing_sync, schedule=never)
    with pytest.raises(OSError) as caught:
        output.resume(lambda text: None, drop_failed=True)
    assert caught.value.errno == errno.EIO
    output.close()
    assert path.read_bytes() == before
    assert sorted(tmp_path.iterdir()) == [path]


def test_the_copy_retry_failed_writes_is_never_open_to_others(tmp_path, monkeypatch):
    path = tmp_path / "out.jsonl"
    path.write_bytes(encode(result(1, output="a")) + encode(result(2, error={})))
    path.chmod(0o600)
    real_fchmod, modes = os.fchmod, []

    def fchmod(fd: int, mode: int) -> None:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))  # as made, before its mode is set
        real_fchmod(fd, mode)

    output = OutputFile(str(path), schedule=never)
    monkeypatch.setattr(os, "fchmod", fchmod)
    mask = os.umask(0)
    try:
        output.resume(lambda text: None, drop_failed=True)
    finally:
        os.umask(mask)
    output.close()
    assert modes == [0o600] and stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("order", [("error", "output"), ("output", "error")])
def test_a_run_written_twice_counts_as_failed_if_either_line_failed(tmp_path, order):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b"".join(encode(result(1, **{key: {}})) for key in order))
    output = OutputFile(str(path), schedule=never)
    assert output.resume(quiet) == {"1": True}
    output.close()


def test_a_resume_reads_result_lines_off_their_head_without_parsing_them(tmp_path, monkeypatch):
    def parsed_whole(raw: bytes) -> None:
        raise AssertionError(f"parsed whole: {raw!r}")

    path = tmp_path / "out.jsonl"
    path.write_bytes(
        encode(result(1, output="a"))
        + encode(result("b", error={}))
        + encode(result(None, line=1, output=1))
    )
    monkeypatch.setattr(output_module, "_parsed", parsed_whole)
    output = OutputFile(str(path), schedule=never)
    assert output.resume(quiet) == {"1": False, '"b"': True, "line 1": False}
    output.close()


@dataclasses.dataclass
class Usage:
    tokens: int


@pytest.mark.parametrize("output", [float("nan"), "\ud800"], ids=["nan", "lone surrogate"])
def test_encode_falls_back_keeping_the_other_fields_as_they_are(output):
    line = json.loads(encode({"id": "é", "output": output, "usage": Usage(3), "at": Opaque()}))
    assert line["usage"] == {"tokens": 3} and line["at"] == "opaque!" and line["id"] == "é"


def test_encode_keeps_unicode_when_the_output_is_written_as_text():
    assert encode({"id": "é", "output": float("nan")}) == '{"id": "é", "output": "nan"}\n'.encode()
