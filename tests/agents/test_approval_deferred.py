"""Deferred approval: an Executor without `approve=` pauses at the first step with calls
needing approval, returning them and the run's state; `chains.resume(executor, state,
decisions)` continues it (in another process, from JSON, or from a checkpointer by run id)
and answers as an inline `approve=` giving the same decisions does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainkit import agents, chains, checkpoints
from chainkit.llms import FakeLLM
from tests.support import deferred_payments
from tests.support.approvals import Payments, tool_calling
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode

ROOT = Path(__file__).resolve().parents[2]
CALLS = (("pay", {"to": "bob", "amount": 900}), ("pay", {"to": "ann", "amount": 9}))


def _paused(mode: Mode, executor: agents.Executor, **options: Any) -> agents.PendingApproval:
    outputs = mode.call(executor, {"input": "pay them"}, **options)
    assert outputs["output"] is None
    pending: agents.PendingApproval = outputs["pending"]
    return pending


def _listed_status(tmp_path: Path, run_id: str) -> str:
    """The status the store lists for the run (as `chainkit runs list` shows it)."""
    store = checkpoints.SQLiteStore(str(tmp_path / "runs.db"))
    try:
        [status] = [run.status for run in store.runs() if run.run_id == run_id]
    finally:
        store.close()
    return status


@pytest.mark.timeout(60)
def test_the_run_pauses_with_every_waiting_call_and_nothing_runs(mode: Mode):
    payments = Payments()
    pending = _paused(mode, agents.Executor(tool_calling(payments, *CALLS)))
    assert payments.paid == []
    requests = [r for r in pending.requests if isinstance(r, agents.ApprovalRequest)]
    assert [(r.tool, r.arguments, r.tool_call_id, r.step) for r in requests] == [
        ("pay", {"to": "bob", "amount": 900}, "call-0", 1),
        ("pay", {"to": "ann", "amount": 9}, "call-1", 1),
    ]
    assert {r.run_id for r in pending.requests} == {pending.state.run_id}
    assert [p.started for p in pending.state.pending] == [False, False]
    assert pending.state.status == "paused"
    assert checkpoints.RunState.from_json(pending.state.to_json()).status == "paused"


@pytest.mark.timeout(60)
def test_run_which_returns_text_refuses_a_run_that_may_pause_before_it_starts(mode: Mode):
    payments = Payments()
    executor = agents.Executor(tool_calling(payments, *CALLS))
    with pytest.raises(
        chains.errors.OutputNotStringError,
        match=r"may pause for approval \(pay need it and no approve= was given\), with no "
        r"answer under 'output'; use chains.call",
    ):
        mode.run(executor, "pay them")
    assert payments.paid == []


@pytest.mark.timeout(60)
def test_mixed_decisions_answer_as_inline_approval_does(mode: Mode):
    decisions: dict[str, agents.Deny | agents.Approve] = {
        "call-0": agents.Deny("too much"),
        "call-1": agents.Approve(),
    }
    inline_payments = Payments()
    inline = agents.Executor(
        tool_calling(inline_payments, *CALLS), approve=lambda r: decisions[str(r.tool_call_id)]
    )
    expected = mode.run(inline, "pay them")
    payments = Payments()
    executor = agents.Executor(tool_calling(payments, *CALLS))
    state = _paused(mode, executor).state.to_json()
    outputs = mode.drive("resume", executor, state, decisions)
    assert outputs == {"output": expected}
    # the model read the denial's reason as the observation of call-0
    assert expected == "Call denied by the user; pay did not run: too much | paid 9 to ann"
    assert payments.paid == inline_payments.paid == [("ann", 9)]


@pytest.mark.timeout(60)
def test_an_edit_reaches_the_tool_and_a_list_decides_in_request_order(mode: Mode):
    payments = Payments()
    executor = agents.Executor(tool_calling(payments, *CALLS))
    pending = _paused(mode, executor)
    decisions = [agents.Edit({"to": "bob", "amount": 90}), agents.Approve()]
    outputs = mode.drive("resume", executor, pending.state, decisions)
    assert outputs["output"] == "paid 90 to bob | paid 9 to ann"
    assert payments.paid in ([("bob", 90), ("ann", 9)], [("ann", 9), ("bob", 90)])


@pytest.mark.timeout(60)
def test_a_free_call_of_the_paused_step_waits_and_runs_on_resume(mode: Mode):
    payments = Payments()
    calls = (("lookup", {"name": "bob"}), ("pay", {"to": "bob", "amount": 5}))
    executor = agents.Executor(tool_calling(payments, *calls))
    pending = _paused(mode, executor)
    assert [r.tool_call_id for r in pending.requests] == ["call-1"]
    outputs = mode.drive("resume", executor, pending.state, {"call-1": agents.Approve()})
    assert outputs["output"] == "bob is known | paid 5 to bob"


@pytest.mark.timeout(60)
def test_a_mrkl_call_is_keyed_by_position_and_the_model_reads_the_denial(mode: Mode):
    def agent() -> tuple[agents.Agent, FakeLLM]:
        llm = FakeLLM(
            [
                " pay\nAction: pay\nAction Input: " + '{"to": "bob", "amount": 900}',
                " Final Answer: ok",
            ]
        )
        return agents.OneShotAgent(llm, [Payments().pay]), llm

    first, _ = agent()
    pending = _paused(mode, agents.Executor(first))
    assert [r.tool_call_id for r in pending.requests] == [None]
    second, llm = agent()
    llm.responses.pop(0)  # the plan was made before the pause
    outputs = mode.drive(
        "resume", agents.Executor(second), pending.state.to_dict(), {0: agents.Deny("no way")}
    )
    assert outputs == {"output": "ok"}
    [call] = llm.calls
    assert "Call denied by the user; pay did not run: no way" in call.messages[-1].content


@pytest.mark.timeout(60)
def test_a_checkpointed_run_resumes_by_run_id_and_handlers_hear_it(
    mode: Mode, tmp_path: Path, events: EventRecorder
):
    def executor(payments: Payments) -> agents.Executor:
        store = checkpoints.SQLiteStore(str(tmp_path / "runs.db"))
        return agents.Executor(tool_calling(payments, *CALLS), checkpointer=store)

    pending = _paused(mode, executor(Payments()), callbacks=events)
    assert [e[0] for e in events.heard("approval_required")] == ["approval_required"] * 2
    assert _listed_status(tmp_path, pending.state.run_id) == "paused"
    payments = Payments()
    decisions = {"call-0": agents.Approve(), "call-1": agents.Deny("")}
    outputs = mode.drive(
        "resume", executor(payments), pending.state.run_id, decisions, callbacks=events
    )
    assert (
        outputs["output"]
        == "paid 900 to bob | Call denied by the user; pay did not run (no reason given)"
    )
    assert payments.paid == [("bob", 900)]
    assert _listed_status(tmp_path, pending.state.run_id) == "finished"
    decided = sorted(e[1:] for e in events.heard("approval_decided"))
    assert decided == [
        ("pay", "approve", None, None, "call-0"),
        ("pay", "deny", "", None, "call-1"),
    ]
    with pytest.raises(agents.errors.AgentConfigError, match="has no call waiting for one"):
        mode.drive("resume", executor(payments), pending.state.run_id, decisions)
    assert mode.drive("resume", executor(payments), pending.state.run_id) == outputs


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        (None, r"paused for approval of calls \['call-0', 'call-1'\]"),
        ({"call-0": agents.Approve()}, r"missing \['call-1'\], naming no waiting call \[\]"),
        (
            {"call-0": agents.Approve(), "call-1": agents.Approve(), "call-9": agents.Approve()},
            r"missing \[\], naming no waiting call \['call-9'\]",
        ),
        ([agents.Approve()], r"one per waiting call \(2\), got 1"),
    ],
)
def test_decisions_missing_or_naming_no_waiting_call_are_refused(
    mode: Mode, decisions: object, message: str
):
    payments = Payments()
    executor = agents.Executor(tool_calling(payments, *CALLS))
    state = _paused(mode, executor).state
    with pytest.raises(agents.errors.AgentConfigError, match=message):
        mode.drive("resume", executor, state, decisions)
    assert payments.paid == []


@pytest.mark.timeout(120)
def test_a_run_paused_in_one_process_resumes_in_another_as_inline_approval_answers(
    tmp_path: Path,
):
    state_file = tmp_path / "state.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def step(name: str) -> str:
        command = [sys.executable, "-m", "tests.support.deferred_payments", name, str(state_file)]
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=100
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert step("pause") == "paid: []\n"
    assert checkpoints.RunState.from_json(state_file.read_text("utf-8")).pending
    payments = Payments()
    decisions = deferred_payments.DECISIONS
    inline = agents.Executor(
        tool_calling(payments, *deferred_payments.CALLS),
        approve=lambda r: decisions[str(r.tool_call_id)],
    )
    expected = chains.run(inline, "pay them")
    assert step("resume") == f"{expected}\npaid: [('ann', 1)]\n"
    assert payments.paid == [("ann", 1)]
