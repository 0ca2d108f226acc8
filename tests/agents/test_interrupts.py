"""A tool asks a person (`agents.interrupt`): the run pauses with an InputRequest, through the
same state, store and `chains.resume` as approval, and the tool, called again, gets the
answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chainkit import agents, checkpoints, tools
from tests.support.approvals import CallsThenReports
from tests.support.modes import Mode


class Transfers:
    """A `transfer` tool that asks which account (and, for a large amount, a confirmation)
    before moving money, counting how often it was entered; a free `lookup` tool."""

    def __init__(self) -> None:
        self.entered = 0
        self.moved: list[tuple[str, int]] = []
        self.looked_up = 0

        @tools.tool
        def transfer(amount: int) -> str:
            """Moves `amount` to an account the user picks."""
            self.entered += 1
            account = agents.interrupt({"choose": "account", "from": ["savings", "checking"]})
            if amount > 100 and agents.interrupt(f"move {amount}?") != "yes":
                return "not moved"
            self.moved.append((account, amount))
            return f"moved {amount} to {account}"

        @tools.tool
        def lookup(name: str) -> str:
            """Looks a person up."""
            self.looked_up += 1
            return f"{name} is known"

        self.tools = [transfer, lookup]


def _executor(bank: Transfers, tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> Any:
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    agent = agents.ToolCallingAgent(CallsThenReports(*calls), bank.tools)
    return agents.Executor(agent, checkpointer=store)


def test_a_tools_question_pauses_the_run_and_its_answer_resumes_it(
    mode: Mode, tmp_path: Path
) -> None:
    bank = Transfers()
    calls = (("transfer", {"amount": 5}), ("lookup", {"name": "bob"}))
    outputs = mode.call(_executor(bank, tmp_path, *calls), {"input": "move 5"})
    pending: agents.PendingApproval = outputs["pending"]
    [request] = pending.requests
    assert isinstance(request, agents.InputRequest)
    assert (request.question, request.tool, request.tool_call_id, request.step) == (
        {"choose": "account", "from": ["savings", "checking"]},
        "transfer",
        "call-0",
        1,
    )
    assert request.run_id == pending.state.run_id
    assert (bank.moved, bank.looked_up, pending.state.status) == ([], 1, "paused")
    resumed = _executor(bank, tmp_path, *calls)
    outputs = mode.drive("resume", resumed, pending.state.run_id, {"call-0": "savings"})
    assert outputs["output"] == "moved 5 to savings | bob is known"
    assert (bank.moved, bank.looked_up) == ([("savings", 5)], 1)  # the lookup ran once


def test_each_question_in_turn_and_a_state_kept_as_json(mode: Mode, tmp_path: Path) -> None:
    bank = Transfers()
    calls = (("transfer", {"amount": 500}),)
    first = mode.call(_executor(bank, tmp_path, *calls), {"input": "move 500"})["pending"]
    second = mode.drive(
        "resume", _executor(bank, tmp_path, *calls), first.state.to_json(), ["checking"]
    )
    pending: agents.PendingApproval = second["pending"]
    assert [getattr(r, "question", r) for r in pending.requests] == ["move 500?"]
    assert pending.state.pending[0].answers == ["checking"]
    outputs = mode.drive(
        "resume", _executor(bank, tmp_path, *calls), pending.state, {"call-0": "yes"}
    )
    assert outputs["output"] == "moved 500 to checking"
    assert (bank.moved, bank.entered) == ([("checking", 500)], 3)
    with pytest.raises(checkpoints.StaleStateError):  # the first pause was answered already
        mode.drive("resume", _executor(bank, tmp_path, *calls), first.state, ["savings"])
    assert bank.moved == [("checking", 500)]


def test_a_question_waits_for_an_answer_and_the_answer_must_be_json(
    mode: Mode, tmp_path: Path
) -> None:
    bank = Transfers()
    calls = (("transfer", {"amount": 5}),)
    pending = mode.call(_executor(bank, tmp_path, *calls), {"input": "move 5"})["pending"]
    run_id = pending.state.run_id
    with pytest.raises(agents.errors.AgentConfigError, match=r"calls \['call-0'\]"):
        mode.drive("resume", _executor(bank, tmp_path, *calls), run_id)
    with pytest.raises(agents.errors.AgentTypeError, match="transfer must be JSON"):
        mode.drive("resume", _executor(bank, tmp_path, *calls), run_id, [object()])
    assert bank.moved == []


def test_a_question_needs_a_run_that_keeps_its_state(mode: Mode) -> None:
    bank = Transfers()
    agent = agents.ToolCallingAgent(CallsThenReports(("transfer", {"amount": 5})), bank.tools)
    with pytest.raises(agents.errors.AgentConfigError, match="give it a checkpointer"):
        mode.call(agents.Executor(agent), {"input": "move 5"})


def test_an_approved_call_asks_its_question_without_being_approved_again(
    mode: Mode, tmp_path: Path
) -> None:
    asked: list[str] = []

    def approve(request: agents.ApprovalRequest) -> Any:
        asked.append(request.tool)
        return agents.Edit({"amount": 7})

    moved: list[tuple[str, int]] = []

    @tools.tool(requires_approval=True)
    def transfer(amount: int) -> str:
        """Moves `amount` to an account the user picks."""
        account = agents.interrupt("which account?")
        moved.append((account, amount))
        return f"moved {amount} to {account}"

    def executor() -> agents.Executor:
        agent = agents.ToolCallingAgent(CallsThenReports(("transfer", {"amount": 5})), [transfer])
        store = checkpoints.SQLiteStore(tmp_path / "runs.db")
        return agents.Executor(agent, checkpointer=store, approve=approve)

    pending = mode.call(executor(), {"input": "move 5"})["pending"]
    assert [type(r).__name__ for r in pending.requests] == ["InputRequest"]
    outputs = mode.drive("resume", executor(), pending.state.run_id, ["savings"])
    assert outputs["output"] == "moved 7 to savings"
    assert (moved, asked) == ([("savings", 7)], ["transfer"])
