"""`chainkit runs` in an operator's hands: a mistyped, folder, damaged or foreign `--db` is one
error line (and never becomes a new store); the end of input or Ctrl-C at an `--approve` prompt
leaves the run paused with one line saying so; a run that fails is one line; run ids and
other stored text holding control characters are escaped wherever they are shown."""

from __future__ import annotations

import io
import json
import os
import sqlite3
from pathlib import Path

import pytest

from chainkit import agents, chains, checkpoints
from chainkit._cli.approve import ask_at_terminal
from chainkit._cli.entry_point import main
from chainkit.schema import AgentAction, AgentStep
from tests.support import durable_runs
from tests.support.approvals import Payments, tool_calling
from tests.support.deferred_payments import CALLS

FACTORY_OF_PAYMENTS = "tests.support.deferred_payments:payments_executor"
HOSTILE_ID = "run\x1b[2J\x1b]0;owned\x07\ttab\nline\u202eevil\x9b31m"


def _one_error_line(capsys: pytest.CaptureFixture[str], *expected: str) -> None:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("chainkit runs: error: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    for part in expected:
        assert part in lines[0]


@pytest.mark.parametrize("action", [["list"], ["show", "r1"], ["resume", "r1"]])
def test_a_missing_db_is_one_line_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: list[str]
) -> None:
    mistyped = tmp_path / "runz.db"
    assert main(["runs", *action, "--db", str(mistyped)]) == 1
    _one_error_line(capsys, "no file", "runz.db")
    assert not mistyped.exists()


def test_a_folder_or_a_pipe_as_db_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "list", "--db", str(tmp_path)]) == 1
    _one_error_line(capsys, "is a folder")
    os.mkfifo(tmp_path / "pipe")  # opening it would wait for a writer forever
    assert main(["runs", "list", "--db", str(tmp_path / "pipe")]) == 1
    _one_error_line(capsys, "is not a regular file")


@pytest.mark.parametrize(
    "content",
    [b"", b"not a database at all\n" * 100, b"SQLite format 3\x00" + b"\xff" * 4000],
)
def test_a_damaged_db_is_one_line_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    db = tmp_path / "runs.db"
    db.write_bytes(content)
    assert main(["runs", "list", "--db", str(db)]) == 1
    _one_error_line(capsys, "runs.db")
    assert db.read_bytes() == content


def test_another_applications_sqlite_db_is_refused_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER)")
    connection.close()
    assert main(["runs", "list", "--db", str(db)]) == 1
    _one_error_line(capsys, "without chainkit's runs")
    with sqlite3.connect(db) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master").fetchall()
    connection.close()
    assert tables == [("orders",)]


def _paused_run(db: Path, run_id: str = "paused-1") -> None:
    store = checkpoints.SQLiteStore(db)
    executor = agents.Executor(tool_calling(Payments(), *CALLS), checkpointer=store)
    with checkpoints.named_run(run_id):
        chains.call(executor, {"input": "pay"})
    store.close()


def _status(db: Path, run_id: str) -> str:
    store = checkpoints.SQLiteStore(db)
    try:
        return store.load(run_id).status
    finally:
        store.close()


class _CtrlC(io.StringIO):
    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("stdin", "status", "expected"),
    [
        (io.StringIO(""), 1, "error: the input ended before every call was decided"),
        (io.StringIO("y\n"), 1, "error: the input ended before every call was decided"),
        (_CtrlC(), 130, "interrupted; run paused-1 stays paused"),
    ],
)
def test_the_end_of_input_or_ctrl_c_at_a_prompt_leaves_the_run_paused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: io.StringIO,
    status: int,
    expected: str,
) -> None:
    db = tmp_path / "runs.db"
    _paused_run(db)
    monkeypatch.setattr("sys.stdin", stdin)
    resume = ["runs", "resume", "paused-1", "--db", str(db), "--agent", FACTORY_OF_PAYMENTS]
    assert main([*resume, "--approve"]) == status
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    assert captured.err.splitlines()[-1].startswith(f"chainkit runs: {expected}")
    assert "stays paused; nothing was decided or run" in captured.err
    assert _status(db, "paused-1") == "paused"


def short_executor() -> agents.Executor:
    """The MRKL runs' executor with fewer steps allowed than a stopped run has left."""
    executor = durable_runs.mrkl_executor()
    executor.max_iterations = 2
    return executor


def test_a_resumed_run_that_fails_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    monkeypatch.setenv("CHAINKIT_TEST_LOG", str(tmp_path / "calls.log"))
    _save_stopped(db, "stopped-1")
    agent = "tests.test_cli_runs_operator:short_executor"
    assert main(["runs", "resume", "stopped-1", "--db", str(db), "--agent", agent]) == 1
    _one_error_line(capsys, "NotFinishedError", "max_iterations=2")


def _save_stopped(db: Path, run_id: str, agent: str = "OneShotAgent") -> None:
    first = AgentAction("append", '{"text": "a"}', durable_runs.MRKL_SCRIPT[0])
    state = checkpoints.RunState(
        run_id,
        agent,
        ["append", "note"],
        {"input": durable_runs.QUESTION},
        [AgentStep(first, "ok:append:a")],
        iteration=2,
    )
    store = checkpoints.SQLiteStore(db)
    store.save(state)
    store.close()


def _no_raw_control(text: str) -> None:
    for char in ("\x1b", "\x07", "\x9b", "\u202e", "\r"):
        assert char not in text, repr(text)


def test_stored_text_with_control_characters_is_escaped_in_every_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    _save_stopped(db, HOSTILE_ID, agent="Agent\x1b[31m")
    with sqlite3.connect(db) as connection:  # a row edited by hand: a time no clock reaches
        connection.execute("UPDATE chainkit_runs SET updated = 1e300")
    connection.close()
    assert main(["runs", "list", "--db", str(db)]) == 0
    listed = capsys.readouterr().out
    _no_raw_control(listed)
    header, row = listed.splitlines()
    assert row.count("\t") == header.count("\t") == 4
    assert row.startswith("run\\x1b[2J") and "1e+300" in row

    assert main(["runs", "show", HOSTILE_ID, "--db", str(db)]) == 0
    shown = capsys.readouterr().out
    _no_raw_control(shown)
    assert json.loads(shown)["run_id"] == HOSTILE_ID  # still JSON, and the same value

    monkeypatch.setenv("CHAINKIT_TEST_LOG", str(tmp_path / "calls.log"))
    resume = ["runs", "resume", HOSTILE_ID, "--db", str(db), "--agent", FACTORY_OF_PAYMENTS]
    assert main(resume) == 1  # another agent kind: the error names the stored kind
    refused = capsys.readouterr().err
    _no_raw_control(refused)
    assert len(refused.splitlines()) == 1 and "Agent\\u001b[31m" in refused


def test_a_tool_name_from_a_stored_state_is_escaped_at_the_prompt(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = agents.ApprovalRequest("pay\x1b[2J\u202e", {}, "{}", "c", "paused-1", 1)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert ask_at_terminal(hostile, "runs") == agents.Approve()
    shown = capsys.readouterr().err
    _no_raw_control(shown)
    assert shown.startswith("chainkit runs: pay\\x1b[2J\\u202e wants to run with {}")
