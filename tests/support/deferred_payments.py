"""A payments run paused for approval in one process and resumed in another:
`python -m tests.support.deferred_payments pause STATE_FILE` runs until the run pauses and
writes its state's JSON to STATE_FILE; `... resume STATE_FILE` resumes it with a denial of
call-0 and an edit of call-1, and prints the answer."""

from __future__ import annotations

import sys
from pathlib import Path

from chainkit import agents, chains, tools
from tests.support.approvals import CallsThenReports, Payments, tool_calling

CALLS = (("pay", {"to": "bob", "amount": 900}), ("pay", {"to": "ann", "amount": 9}))
DECISIONS: dict[str, agents.Deny | agents.Edit] = {
    "call-0": agents.Deny("too much"),
    "call-1": agents.Edit({"to": "ann", "amount": 1}),
}


def executor(payments: Payments) -> agents.Executor:
    return agents.Executor(tool_calling(payments, *CALLS))


def payments_executor() -> agents.Executor:
    """The payments Executor with a fresh ledger: a factory for `chainkit runs resume --agent`."""
    return executor(Payments())


def asking_executor() -> agents.Executor:
    """An Executor whose `transfer` asks which account (`agents.interrupt`): a factory for
    `chainkit runs resume --agent`."""

    @tools.tool
    def transfer(amount: int) -> str:
        """Moves money to an account the user picks."""
        account = agents.interrupt({"question": "which account?"})
        return f"moved {amount} to {account}"

    agent = agents.ToolCallingAgent(CallsThenReports(("transfer", {"amount": 5})), [transfer])
    return agents.Executor(agent)


def main(step: str, state_file: Path) -> None:
    payments = Payments()
    if step == "pause":
        pending = chains.call(executor(payments), {"input": "pay them"})["pending"]
        state_file.write_text(pending.state.to_json(), "utf-8")
    else:
        outputs = chains.resume(executor(payments), state_file.read_text("utf-8"), DECISIONS)
        print(outputs["output"])
    print(f"paid: {payments.paid}")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
