"""A person approves tool calls inline: `Executor(approve=fn)` is asked about each call of a tool
marked `requires_approval`, and approving runs it, denying shows the model the reason instead,
editing runs it on the person's arguments; for both agents, sync and async, parallel calls
included."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainkit import agents, callbacks, chains, tools
from chainkit.llms import FakeLLM
from tests.support.approvals import CallsThenReports, Payments, Recorded, tool_calling
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode


@pytest.mark.timeout(60)
def test_an_approved_call_runs_and_the_request_describes_it(mode: Mode):
    payments = Payments()
    approve = Recorded(lambda request: agents.Approve())
    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "ann", "amount": 5})), approve=approve
    )
    assert mode.run(executor, "pay ann") == "paid 5 to ann"
    assert payments.paid == [("ann", 5)]
    [request] = approve.requests
    assert (request.tool, request.arguments, request.tool_call_id, request.step) == (
        "pay",
        {"to": "ann", "amount": 5},
        "call-0",
        1,
    )
    assert request.input == '{"to": "ann", "amount": 5}'
    assert request.run_id is not None


@pytest.mark.timeout(60)
def test_a_denied_call_does_not_run_and_the_model_reads_the_reason(mode: Mode):
    payments = Payments()
    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "bob", "amount": 900})),
        approve=lambda request: agents.Deny("too much"),
    )
    answer = mode.run(executor, "pay bob")
    assert payments.paid == []
    assert answer == "Call denied by the user; pay did not run: too much"


@pytest.mark.timeout(60)
def test_an_edited_call_runs_on_the_new_arguments(mode: Mode):
    payments = Payments()
    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "bob", "amount": 900})),
        approve=lambda request: agents.Edit({**request.arguments, "amount": 90}),
    )
    assert mode.run(executor, "pay bob") == "paid 90 to bob"
    assert payments.paid == [("bob", 90)]


@pytest.mark.timeout(60)
def test_an_edit_the_tool_refuses_becomes_the_observation_and_nothing_runs(mode: Mode):
    payments = Payments()
    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "bob", "amount": 900})),
        approve=lambda request: agents.Edit({"to": "bob", "amount": "lots"}),
    )
    answer = mode.run(executor, "pay bob")
    assert payments.paid == []
    assert answer == 'Invalid arguments for tool pay: amount: expected integer, got "lots"'


@pytest.mark.timeout(60)
@pytest.mark.parametrize("settings", [{}, {"max_execution_time": 60}], ids=["plain", "deadline"])
def test_parallel_calls_are_each_asked_and_decided_apart(mode: Mode, settings: dict[str, Any]):
    payments = Payments()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("pay", {"to": "ann", "amount": 5}),
        ("lookup", {"name": "cy"}),
    ]
    calls += [("pay", {"to": "bob", "amount": 900}), ("pay", {"to": "dee", "amount": 70})]
    decisions = {
        "call-0": agents.Approve(),
        "call-2": agents.Deny("over the limit"),
        "call-3": agents.Edit({"to": "dee", "amount": 7}),
    }
    approve = Recorded(lambda request: decisions[request.tool_call_id])
    executor = agents.Executor(tool_calling(payments, *calls), approve=approve, **settings)
    answer = mode.run(executor, "pay them")
    assert sorted(payments.paid) == [("ann", 5), ("dee", 7)]
    assert answer.split(" | ") == [
        "paid 5 to ann",
        "cy is known",
        "Call denied by the user; pay did not run: over the limit",
        "paid 7 to dee",
    ]
    assert sorted(r.tool_call_id or "" for r in approve.requests) == ["call-0", "call-2", "call-3"]
    assert {r.step for r in approve.requests} == {1}


@pytest.mark.timeout(60)
def test_a_mark_deciding_from_the_arguments_asks_only_about_the_calls_it_names(mode: Mode):
    payments = Payments(requires_approval=lambda args: args["amount"] > 100)
    calls = [("pay", {"to": "ann", "amount": 5}), ("pay", {"to": "bob", "amount": 900})]
    approve = Recorded(lambda request: agents.Deny("no"))
    executor = agents.Executor(tool_calling(payments, *calls), approve=approve)
    mode.run(executor, "pay them")
    assert payments.paid == [("ann", 5)]
    assert [r.arguments for r in approve.requests] == [{"to": "bob", "amount": 900}]


class Shell(tools.Tool):
    """A text-input tool whose mark reads the command text."""

    name = "shell"
    description = "runs a shell command"

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.requires_approval = lambda command: command.startswith("rm")

    def call(self, input: str) -> str:
        self.ran.append(input)
        return f"ran {input}"


@pytest.mark.timeout(60)
def test_a_oneshot_agent_text_tool_mark_gets_the_input_text_and_edits_replace_it(mode: Mode):
    shell = Shell()
    llm = FakeLLM(
        [
            " list\nAction: shell\nAction Input: ls",
            " clean\nAction: shell\nAction Input: rm -rf /",
            " done\nFinal Answer: finished",
        ]
    )
    approve = Recorded(lambda request: agents.Edit("rm -rf ./tmp"))
    executor = agents.Executor(
        agents.OneShotAgent(llm, [shell]), approve=approve, return_intermediate_steps=True
    )
    outputs = mode.call(executor, {"input": "tidy up"})
    assert outputs["output"] == "finished"
    assert shell.ran == ["ls", "rm -rf ./tmp"]
    [request] = approve.requests
    assert (request.arguments, request.tool_call_id, request.step) == ("rm -rf /", None, 2)
    assert outputs["intermediate_steps"][1].observation == "ran rm -rf ./tmp"


@pytest.mark.timeout(60)
def test_a_oneshot_agent_denial_is_its_observation(mode: Mode):
    shell = Shell()
    llm = FakeLLM([" clean\nAction: shell\nAction Input: rm x", " ok\nFinal Answer: stopped"])
    executor = agents.Executor(
        agents.OneShotAgent(llm, [shell]), approve=lambda request: agents.Deny("keep x")
    )
    assert mode.run(executor, "tidy up") == "stopped"
    assert shell.ran == []
    assert "Observation: Call denied by the user; shell did not run: keep x" in str(
        llm.calls[1].messages[0].content
    )


@pytest.mark.timeout(60)
def test_a_denied_return_direct_tool_does_not_end_the_run(mode: Mode):
    @tools.tool(requires_approval=True, return_direct=True)
    def send(text: str) -> str:
        """Sends text."""
        return "sent"

    agent = agents.ToolCallingAgent(CallsThenReports(("send", {"text": "hi"})), [send])
    executor = agents.Executor(agent, approve=lambda request: agents.Deny("not now"))
    assert mode.run(executor, "send") == "Call denied by the user; send did not run: not now"


@pytest.mark.timeout(60)
def test_an_async_approve_is_awaited_in_an_async_run():
    import asyncio

    payments = Payments()

    async def approve(request: agents.ApprovalRequest) -> agents.Deny:
        await asyncio.sleep(0)
        return agents.Deny(f"{request.arguments['amount']} is too much")

    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "bob", "amount": 900})), approve=approve
    )
    answer = asyncio.run(chains.arun(executor, "pay bob"))
    assert answer.endswith("900 is too much")
    with pytest.raises(agents.errors.AgentTypeError, match=r"async function.*chains\.acall"):
        chains.run(executor, "pay bob")
    assert payments.paid == []


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: agents.Executor(tool_calling(Payments()), approve="yes"),  # type: ignore[arg-type]
            "approve must be",
        ),
        (
            lambda: tools.tool(requires_approval="yes")(lambda: ""),  # type: ignore[call-overload]
            "requires_approval must be",
        ),
        (lambda: agents.Edit(["x"]), "takes a dict or text"),  # type: ignore[arg-type]
        (lambda: agents.Deny(3), "takes text"),  # type: ignore[arg-type]
    ],
)
def test_wrong_approval_settings_are_refused(make: Any, message: str):
    with pytest.raises((agents.errors.AgentTypeError, tools.errors.ToolTypeError), match=message):
        make()


@pytest.mark.timeout(60)
def test_a_decision_of_another_type_is_refused_naming_the_tool(mode: Mode):
    payments = Payments()
    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "bob", "amount": 1})),
        approve=lambda request: True,  # type: ignore[arg-type,return-value]
    )
    with pytest.raises(agents.errors.AgentTypeError, match=r"returned bool .* call of pay"):
        mode.run(executor, "pay bob")
    assert payments.paid == []


@pytest.mark.timeout(60)
def test_handlers_hear_the_request_and_the_decision_in_the_tool_run(
    mode: Mode, events: EventRecorder
):
    payments = Payments()
    calls = [("pay", {"to": "bob", "amount": 900}), ("pay", {"to": "ann", "amount": 9})]
    decisions: dict[str | None, agents.Deny | agents.Edit] = {
        "call-0": agents.Deny("no"),
        "call-1": agents.Edit({"to": "ann", "amount": 1}),
    }
    executor = agents.Executor(
        tool_calling(payments, *calls), approve=lambda r: decisions[r.tool_call_id]
    )
    mode.run(executor, "pay", callbacks=events)
    heard = events.heard("approval_required", "approval_decided")
    assert sorted(heard, key=lambda e: (e[-1], e[0] != "approval_required")) == [
        ("approval_required", "pay", '{"to": "bob", "amount": 900}', "call-0"),
        ("approval_decided", "pay", "deny", "no", None, "call-0"),
        ("approval_required", "pay", '{"to": "ann", "amount": 9}', "call-1"),
        ("approval_decided", "pay", "edit", None, '{"to": "ann", "amount": 1}', "call-1"),
    ]
    runs = {
        (name, run.kind, run.tool_call_id)
        for name, run in events.runs("approval_decided")
        if run is not None
    }
    assert runs == {("approval_decided", "tool", "call-0"), ("approval_decided", "tool", "call-1")}


@pytest.mark.timeout(60)
def test_stream_events_and_trace_lines_carry_the_decision(tmp_path):
    payments = Payments()
    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "bob", "amount": 900})),
        approve=lambda request: agents.Deny("no"),
    )
    path = tmp_path / "run.jsonl"
    with callbacks.TraceFile(path) as trace:
        streamed = list(chains.stream(executor, "pay", callbacks=trace))
    [decided] = [e for e in streamed if e.kind == "approval_decided"]
    assert (decided.run_kind, decided.name) == ("tool", "pay")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    kinds = [line["kind"] for line in lines if line["run_kind"] == "tool"]
    assert kinds == ["tool_start", "approval_required", "approval_decided", "tool_end"]
    assert lines[[line["kind"] for line in lines].index("approval_decided")]["data"] == {
        "tool": "pay",
        "decision": "deny",
        "reason": "no",
        "arguments": None,
        "tool_call_id": "call-0",
    }


@pytest.mark.timeout(60)
def test_a_native_call_of_a_text_tool_is_shown_and_edited_as_its_input_text(mode: Mode):
    shell = Shell()
    agent = agents.ToolCallingAgent(CallsThenReports(("shell", {"input": "rm -r build"})), [shell])
    approve = Recorded(lambda request: agents.Edit("rm -r build/tmp"))
    assert mode.run(agents.Executor(agent, approve=approve), "clean") == "ran rm -r build/tmp"
    assert [(r.arguments, r.input) for r in approve.requests] == [
        ("rm -r build", '{"input": "rm -r build"}')
    ]


@pytest.mark.timeout(60)
def test_a_mark_that_cannot_decide_asks(mode: Mode):
    payments = Payments(requires_approval=lambda args: args["currency"] == "EUR")
    approve = Recorded(lambda request: agents.Approve())
    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "ann", "amount": 5})), approve=approve
    )
    mode.run(executor, "pay")
    assert [r.tool for r in approve.requests] == ["pay"]
    assert payments.paid == [("ann", 5)]


@pytest.mark.timeout(60)
def test_tools_not_marked_never_ask(mode: Mode):
    payments = Payments(requires_approval=False)
    approve = Recorded(lambda request: agents.Deny("no"))
    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "ann", "amount": 5})), approve=approve
    )
    assert mode.run(executor, "pay") == "paid 5 to ann"
    assert approve.requests == []


@pytest.mark.timeout(60)
def test_a_sync_approve_in_an_async_run_leaves_the_event_loop_free():
    import asyncio
    import threading

    payments = Payments()
    loop_ran = threading.Event()

    def approve(request: agents.ApprovalRequest) -> agents.Approve | agents.Deny:
        # Waits for a task of the run's event loop: it could never run were this the loop's
        # own thread.
        return agents.Approve() if loop_ran.wait(30) else agents.Deny("the loop was blocked")

    async def main() -> str:
        async def meanwhile() -> None:
            await asyncio.sleep(0.05)
            loop_ran.set()

        executor = agents.Executor(
            tool_calling(payments, ("pay", {"to": "ann", "amount": 5})), approve=approve
        )
        answer, _ = await asyncio.gather(chains.arun(executor, "pay"), meanwhile())
        return answer

    assert asyncio.run(main()) == "paid 5 to ann"


@pytest.mark.timeout(60)
def test_a_sync_approve_returning_a_coroutine_is_awaited_in_an_async_run():
    import asyncio

    payments = Payments()

    async def deny(request: agents.ApprovalRequest) -> agents.Deny:
        return agents.Deny("later")

    executor = agents.Executor(
        tool_calling(payments, ("pay", {"to": "ann", "amount": 5})),
        approve=lambda request: deny(request),
    )
    assert asyncio.run(chains.arun(executor, "pay")).endswith("did not run: later")
    with pytest.raises(
        agents.errors.AgentTypeError, match="returned an awaitable for the call of pay"
    ):
        chains.run(executor, "pay")
