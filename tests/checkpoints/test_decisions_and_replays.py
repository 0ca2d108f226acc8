"""A person's decisions are part of a run's state, and once means once across replays: a
run that dies inside a decided step resumes with the decisions taken (an edit is kept, a
denied call never runs, a call still waiting is asked, not reported cut); a state resumed
again, or a run id used again, never repeats a call. For SQLite and PostgreSQL alike."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

import pytest

from chainkit import agents, chains, checkpoints, tools
from chainkit.llms import BaseModel, ModelRequest
from chainkit.schema import FunctionCall, Message, ToolCall
from tests.support.modes import Mode


class Crash(BaseException):
    """The process dying: nothing after it runs, nothing catches it."""


class Bank:
    """A `pay` tool needing approval, which records each payment, and dies (before paying)
    at the calls it is told to, once each."""

    def __init__(self) -> None:
        self.paid: list[tuple[str, int]] = []
        self.die_paying: set[str] = set()

        @tools.tool(requires_approval=True)
        def pay(to: str, amount: int) -> str:
            """Pays `amount` to `to`."""
            if to in self.die_paying:
                self.die_paying.discard(to)
                raise Crash
            self.paid.append((to, amount))
            return f"paid {amount} to {to}"

        self.pay = pay


class PaysThenReports(BaseModel):
    """Pays each of `payees` at once (call ids call-0, call-1, …), then answers with every
    observation it read."""

    def __init__(self, *payees: tuple[str, int]) -> None:
        super().__init__()
        self.payees = payees
        self.planned = 0

    def _generate(self, request: ModelRequest) -> Message:
        if request.messages[-1].role == "tool":
            seen = [m.content for m in request.messages if m.role == "tool"]
            return Message.assistant(" | ".join(str(text) for text in seen))
        self.planned += 1
        calls = [
            ToolCall(f"call-{i}", FunctionCall("pay", json.dumps({"to": to, "amount": amount})))
            for i, (to, amount) in enumerate(self.payees)
        ]
        return Message.assistant("", tool_calls=calls)


PAYEES = (("ann", 9), ("bob", 900))


def _executor(bank: Bank, store: Any, approve: Any = None) -> agents.Executor:
    agent = agents.ToolCallingAgent(PaysThenReports(*PAYEES), [bank.pay], max_parallel_tools=1)
    return agents.Executor(agent, checkpointer=store, approve=approve)


def _paused(mode: Mode, store: Any, run_id: str) -> agents.PendingApproval:
    with checkpoints.named_run(run_id):
        outputs = mode.call(_executor(Bank(), store), {"input": "pay them"})
    pending: agents.PendingApproval = outputs["pending"]
    return pending


def test_decisions_given_on_resume_survive_a_crash_inside_their_step(
    mode: Mode, open_store: Callable[[], Any], run_id: str
) -> None:
    """Before, the decisions lived in memory only: the step resumed after the crash ran
    bob's denied payment, unasked."""
    _paused(mode, open_store(), run_id)
    bank = Bank()
    bank.die_paying.add("ann")
    decisions = {"call-0": agents.Edit({"to": "ann", "amount": 10}), "call-1": agents.Deny("no")}
    with pytest.raises(Crash):
        mode.drive("resume", _executor(bank, open_store()), run_id, decisions)
    assert bank.paid == []
    outputs = mode.drive("resume", _executor(bank, open_store()), run_id, interrupted="repeat")
    assert bank.paid == [("ann", 10)]  # the edit, once; the denied call never ran
    assert outputs["output"] == "paid 10 to ann | Call denied by the user; pay did not run: no"


def test_an_inline_edit_is_saved_before_its_call_starts(
    mode: Mode, open_store: Callable[[], Any], run_id: str
) -> None:
    asked: list[str] = []

    def approve(request: agents.ApprovalRequest) -> Any:
        asked.append(request.arguments["to"])
        return agents.Edit({**request.arguments, "amount": 1})

    bank = Bank()
    bank.die_paying.add("bob")
    with checkpoints.named_run(run_id), pytest.raises(Crash):
        mode.call(_executor(bank, open_store(), approve), {"input": "pay them"})
    assert (bank.paid, asked) == ([("ann", 1)], ["ann", "bob"])
    saved = open_store().load(run_id).pending
    assert [p.decision for p in saved] == [
        {"kind": "edit", "arguments": {"to": n, "amount": 1}} for n in ("ann", "bob")
    ]

    def must_not_ask(request: agents.ApprovalRequest) -> Any:
        raise AssertionError(f"asked again about {request.arguments}")

    resumed = _executor(bank, open_store(), must_not_ask)
    mode.drive("resume", resumed, run_id, interrupted="repeat")
    assert bank.paid == [("ann", 1), ("bob", 1)]


def test_a_call_waiting_for_a_person_when_the_process_died_waits_still(
    mode: Mode, open_store: Callable[[], Any], run_id: str
) -> None:
    """Before, it was reported as started but not completed (InterruptedCallError)."""

    def dies_asking(request: agents.ApprovalRequest) -> Any:
        if request.arguments["to"] == "bob":
            raise Crash  # the process died while the person thought it over
        return agents.Approve()

    bank = Bank()
    with checkpoints.named_run(run_id), pytest.raises(Crash):
        mode.call(_executor(bank, open_store(), dies_asking), {"input": "pay them"})
    assert bank.paid == [("ann", 9)]
    waiting = _executor(bank, open_store()).waiting_requests(open_store().load(run_id))
    assert [
        (r.tool_call_id, r.arguments) for r in waiting if isinstance(r, agents.ApprovalRequest)
    ] == [("call-1", {"to": "bob", "amount": 900})]
    with pytest.raises(
        agents.errors.AgentConfigError, match=r"paused for approval of calls \['call-1'\]"
    ):
        mode.drive("resume", _executor(bank, open_store()), run_id)
    mode.drive("resume", _executor(bank, open_store()), run_id, {"call-1": agents.Deny("no")})
    assert bank.paid == [("ann", 9)]


def test_a_paused_state_resumed_twice_pays_once(
    mode: Mode, open_store: Callable[[], Any], run_id: str
) -> None:
    """Before, the second resume saved the old state over the finished run and paid again."""
    state = _paused(mode, open_store(), run_id).state.to_json()
    bank = Bank()
    decisions = [agents.Approve(), agents.Approve()]
    first = mode.drive("resume", _executor(bank, open_store()), state, decisions)
    with pytest.raises(checkpoints.StaleStateError, match=f"{run_id}.*resumed already"):
        mode.drive("resume", _executor(bank, open_store()), state, decisions)
    assert mode.drive("resume", _executor(bank, open_store()), state) == first
    assert bank.paid == [("ann", 9), ("bob", 900)]


def test_an_older_state_of_a_finished_run_gives_its_answer_and_repeats_nothing(
    mode: Mode, open_store: Callable[[], Any], run_id: str
) -> None:
    bank = Bank()
    approve_all = lambda request: agents.Approve()  # noqa: E731
    snapshots: list[str] = []

    class Snapshots:
        """The store, keeping the JSON of each state saved (as a caller might keep one)."""

        def __init__(self, store: Any) -> None:
            self.store = store

        def __getattr__(self, name: str) -> Any:
            return getattr(self.store, name)

        def save(self, state: checkpoints.RunState) -> None:
            self.store.save(state)
            snapshots.append(state.to_json())

    with checkpoints.named_run(run_id):
        answer = mode.call(_executor(bank, Snapshots(open_store()), approve_all), {"input": "x"})
    midway = next(s for s in snapshots if json.loads(s)["pending"])
    outputs = mode.drive("resume", _executor(bank, open_store(), approve_all), midway)
    assert outputs == answer
    assert bank.paid == [("ann", 9), ("bob", 900)]


def test_a_run_id_used_again_is_refused_before_anything_runs(
    mode: Mode, open_store: Callable[[], Any], run_id: str
) -> None:
    """Before, the new run's state replaced the record of the first run, mixing the two."""
    bank = Bank()
    approve_all = lambda request: agents.Approve()  # noqa: E731
    with checkpoints.named_run(run_id):
        first = mode.call(_executor(bank, open_store(), approve_all), {"input": "pay them"})
    agent = PaysThenReports(("eve", 1))
    again = agents.Executor(
        agents.ToolCallingAgent(agent, [bank.pay]), checkpointer=open_store(), approve=approve_all
    )
    with checkpoints.named_run(run_id), pytest.raises(checkpoints.RunExistsError, match=run_id):
        mode.call(again, {"input": "pay eve"})
    assert agent.planned == 0
    assert bank.paid == [("ann", 9), ("bob", 900)]
    assert mode.drive("resume", _executor(bank, open_store()), run_id) == first


def test_a_failed_run_collected_later_lets_go_of_nothing_its_resumption_holds(
    open_store: Callable[[], Any], run_id: str
) -> None:
    """Before, the failed run's loop, collected by the garbage collector while the
    resumption ran, let go of the resumption's hold: another process could take the run."""
    bank = Bank()
    bank.die_paying.add("ann")
    store = open_store()
    approve_all = lambda request: agents.Approve()  # noqa: E731
    kept: list[BaseException] = []
    try:
        with checkpoints.named_run(run_id):
            chains.call(_executor(bank, store, approve_all), {"input": "pay them"})
    except Crash as crash:
        kept.append(crash)  # its traceback keeps the failed run's loop alive
    taken: list[str] = []

    @tools.tool(name="pay", requires_approval=True)
    def pay_after_collecting(to: str, amount: int) -> str:
        """Pays, once the failed run's loop is collected."""
        kept.clear()
        gc.collect()
        try:
            open_store().acquire(run_id)
        except checkpoints.RunLockedError:
            pass
        else:
            taken.append(to)
        return f"paid {amount} to {to}"

    agent = agents.ToolCallingAgent(PaysThenReports(*PAYEES), [pay_after_collecting])
    resumed = agents.Executor(agent, checkpointer=store, approve=approve_all)
    chains.resume(resumed, run_id, interrupted="repeat")
    assert taken == []
