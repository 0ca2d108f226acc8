"""`chainkit runs list|show|resume` and `chainkit batch --checkpoint`: a stopped run listed,
shown and continued from the command line; a batch killed mid-run goes on from its last step."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from chainkit import agents, chains, checkpoints
from chainkit._cli.entry_point import main
from chainkit.checkpoints.state import PendingCall
from chainkit.schema import AgentAction, AgentStep
from tests.support import durable_runs
from tests.support.approvals import Payments, tool_calling
from tests.support.deferred_payments import CALLS, DECISIONS, asking_executor, payments_executor
from tests.support.postgres import postgres_dsn

ROOT = Path(__file__).resolve().parent.parent
FACTORY = "tests.support.durable_runs:mrkl_executor"
FACTORY_OF_PAYMENTS = "tests.support.deferred_payments:payments_executor"


def _save_stopped(store: checkpoints.Checkpointer, run_id: str = "stopped-1") -> None:
    first = AgentAction("append", '{"text": "a"}', durable_runs.MRKL_SCRIPT[0])
    cut = AgentAction("note", '{"text": "b"}', durable_runs.MRKL_SCRIPT[1])
    state = checkpoints.RunState(
        run_id,
        "OneShotAgent",
        ["append", "note"],
        {"input": durable_runs.QUESTION},
        [AgentStep(first, "ok:append:a")],
        [PendingCall(cut, started=True)],
        iteration=2,
    )
    store.save(state)


def test_a_stopped_run_is_listed_shown_and_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "calls.log"
    monkeypatch.setenv("CHAINKIT_TEST_LOG", str(log))
    store = checkpoints.SQLiteStore(db)
    _save_stopped(store)
    store.close()
    assert main(["runs", "list", "--db", str(db)]) == 0
    assert "stopped-1\tOneShotAgent\trunning\t1\t" in capsys.readouterr().out
    assert main(["runs", "show", "stopped-1", "--db", str(db)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["pending"][0]["tool"] == "note" and shown["pending"][0]["started"]
    assert main(["runs", "resume", "stopped-1", "--db", str(db), "--agent", FACTORY]) == 0
    assert capsys.readouterr().out.strip() == durable_runs.ANSWER
    assert log.read_text("utf-8").splitlines() == ["note:b", "append:c", "append:d"]
    assert main(["runs", "list", "--db", str(db)]) == 0
    assert "stopped-1\tOneShotAgent\tfinished\t4\t" in capsys.readouterr().out


def test_runs_of_a_postgresql_store_are_listed_and_resumed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dsn = postgres_dsn()
    monkeypatch.setenv("CHAINKIT_TEST_LOG", str(tmp_path / "calls.log"))
    run_id = f"cli-{uuid.uuid4().hex}"
    store = checkpoints.PostgresStore(dsn)
    _save_stopped(store, run_id)
    store.close()
    assert main(["runs", "list", "--db", dsn]) == 0
    assert f"{run_id}\tOneShotAgent\trunning\t1\t" in capsys.readouterr().out
    assert main(["runs", "resume", run_id, "--db", dsn, "--agent", FACTORY]) == 0
    assert capsys.readouterr().out.strip() == durable_runs.ANSWER


def test_an_unknown_run_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints.SQLiteStore(tmp_path / "runs.db").close()
    assert main(["runs", "show", "nope", "--db", str(tmp_path / "runs.db")]) == 1
    assert "'nope'" in capsys.readouterr().err


@pytest.mark.timeout(120)
def test_a_killed_checkpointed_batch_goes_on_from_the_last_step(tmp_path: Path) -> None:
    records = tmp_path / "in.jsonl"
    records.write_text(
        "".join(json.dumps({"id": n, "input": durable_runs.QUESTION}) + "\n" for n in (1, 2))
    )
    log = tmp_path / "calls.log"
    command = [sys.executable, "-m", "chainkit", "batch", str(records), "-o"]
    command += [str(tmp_path / "out.jsonl"), "--agent", FACTORY, "--concurrency", "1"]
    command += ["--checkpoint", str(tmp_path / "runs.db")]
    environment = {**os.environ, "CHAINKIT_TEST_LOG": str(log), "PYTHONPATH": str(ROOT)}
    # Four calls of two points each in the first run; the second dies as its note:b is written.
    killed = subprocess.run(
        command,
        cwd=ROOT,
        env={**environment, "CHAINKIT_TEST_KILL_AT": "12"},
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert killed.returncode == -9, killed.stderr
    again = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=100
    )
    assert again.returncode == 0, again.stderr
    results = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted((r["id"], r["output"]) for r in results) == [
        (1, durable_runs.ANSWER),
        (2, durable_runs.ANSWER),
    ]
    # The second run's append:a completed before the kill and was not made again; its note:b,
    # cut in the middle, is idempotent and was.
    assert Counter(log.read_text("utf-8").splitlines()) == {
        "append:a": 2,
        "note:b": 3,
        "append:c": 2,
        "append:d": 2,
    }


@pytest.mark.timeout(120)
def test_two_batch_jobs_sharing_a_store_never_take_each_others_runs(tmp_path: Path) -> None:
    """Before, the second job (same record ids, another output) resumed the first job's
    finished runs: it answered without running anything of its own."""
    records = tmp_path / "in.jsonl"
    records.write_text(
        "".join(json.dumps({"id": n, "input": durable_runs.QUESTION}) + "\n" for n in (1, 2))
    )
    log = tmp_path / "calls.log"
    environment = {**os.environ, "CHAINKIT_TEST_LOG": str(log), "PYTHONPATH": str(ROOT)}
    for output in ("a.jsonl", "b.jsonl", "a.jsonl"):
        command = [sys.executable, "-m", "chainkit", "batch", str(records), "-o"]
        command += [str(tmp_path / output), "--agent", FACTORY, "--concurrency", "1"]
        command += ["--checkpoint", str(tmp_path / "runs.db")]
        done = subprocess.run(
            command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=100
        )
        assert done.returncode == 0, done.stderr
    # Each job made its two runs' four calls once; the first job run again made none.
    assert Counter(log.read_text("utf-8").splitlines()) == {
        "append:a": 4,
        "note:b": 4,
        "append:c": 4,
        "append:d": 4,
    }
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    try:
        assert len({run.run_id for run in store.runs()}) == 4
    finally:
        store.close()


def test_a_paused_run_is_listed_as_paused_and_resumed_with_answers_typed_at_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "runs.db")
    store = checkpoints.SQLiteStore(db)
    paused = chains.call(
        agents.Executor(tool_calling(Payments(), *CALLS), checkpointer=store), {"input": "pay"}
    )["pending"]
    store.close()
    inline = chains.resume(payments_executor(), paused.state.to_json(), DECISIONS)["output"]
    run_id = paused.state.run_id
    assert main(["runs", "list", "--db", db]) == 0
    assert f"{run_id}\tToolCallingAgent\tpaused\t0\t" in capsys.readouterr().out
    resume = ["runs", "resume", run_id, "--db", db, "--agent", FACTORY_OF_PAYMENTS]
    assert main(resume) == 1  # no decisions: the error says what the run waits for
    assert "is paused for approval of 2 calls (pay, pay): resume it with --approve" in (
        capsys.readouterr().err
    )
    typed = 'n\ntoo much\ne\n{"to": "ann", "amount": 1}\n'  # DECISIONS, at the prompts
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    assert main([*resume, "--approve"]) == 0
    assert capsys.readouterr().out.strip() == inline
    assert main(["runs", "list", "--db", db]) == 0
    assert f"{run_id}\tToolCallingAgent\tfinished\t" in capsys.readouterr().out


def test_a_tools_question_is_answered_at_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "runs.db")
    executor = asking_executor()
    executor.checkpointer = store = checkpoints.SQLiteStore(db)
    run_id = chains.call(executor, {"input": "move 5"})["pending"].state.run_id
    store.close()
    monkeypatch.setattr("sys.stdin", io.StringIO('"checking"\n'))
    factory = "tests.support.deferred_payments:asking_executor"
    assert main(["runs", "resume", run_id, "--db", db, "--agent", factory, "--approve"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "moved 5 to checking"
    assert 'transfer asks {"question": "which account?"}' in captured.err
