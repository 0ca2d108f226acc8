"""The runs routes over real HTTP: a run paused for approval shown with its waiting calls,
resumed by posting decisions (approve, deny, edit, a tool's question answered), the named
refusals, and the trace page of a run the server served."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from chainkit import agents, chains, checkpoints, llms, tools
from chainkit._cli.agent import builtin_agent
from chainkit.serving import ServerSettings, _runs, create_app
from chainkit.serving._traces import RunTraces
from chainkit.serving.errors import ServeConfigError
from tests.support.approvals import Payments, tool_calling
from tests.support.held_chains import ApprovedThenHeld
from tests.support.serving import RawStream, call, served, sse_events

TOKEN = "t0ken-for-runs"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAY = ("pay", {"to": "ada", "amount": 5})
WAIT_SECONDS = 30.0


class Served:
    """A served payments agent keeping its runs in a SQLite file."""

    def __init__(self, url: str, payments: Payments) -> None:
        self.url = url
        self.payments = payments

    def call(self, method: str, path: str, body: Any = None) -> Any:
        return call(self.url, method, path, body, AUTH)

    def paused_run(self, *calls: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        answer = self.call("POST", "/invoke", {"input": "pay ada"})
        assert answer.status == 200, answer.text
        body = answer.json()
        return body["run_id"], body["outputs"]


@pytest.fixture
def payments_agent(tmp_path: Path) -> Iterator[Served]:
    payments = Payments()
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    executor = agents.Executor(tool_calling(payments, PAY), checkpointer=store)
    with served(create_app(executor, ServerSettings(token=TOKEN))) as url:
        yield Served(url, payments)
    store.close()


def test_a_paused_run_is_shown_with_its_waiting_call_and_resumed_by_approving_it(
    payments_agent: Served,
) -> None:
    run_id, outputs = payments_agent.paused_run()
    waiting = [
        {
            "key": "call-0",
            "kind": "approval",
            "tool": "pay",
            "tool_call_id": "call-0",
            "input": '{"to": "ada", "amount": 5}',
            "arguments": {"to": "ada", "amount": 5},
        }
    ]
    assert outputs == {
        "output": None,
        "pending": {"status": "paused", "run_id": run_id, "waiting": waiting},
    }
    listed = payments_agent.call("GET", "/runs").json()["runs"]
    assert [(run["run_id"], run["status"]) for run in listed] == [(run_id, "paused")]
    shown = payments_agent.call("GET", f"/runs/{run_id}").json()
    assert shown["status"] == "paused" and shown["waiting"] == waiting
    assert shown["inputs"] == {"input": "pay ada"}
    assert "tag" not in shown and "saved" not in shown

    decisions = {"call-0": {"kind": "approve"}}
    answer = payments_agent.call("POST", f"/runs/{run_id}/resume", {"decisions": decisions})
    assert answer.status == 200, answer.text
    assert answer.json() == {"run_id": run_id, "outputs": {"output": "paid 5 to ada"}}
    assert payments_agent.payments.paid == [("ada", 5)]
    shown = payments_agent.call("GET", f"/runs/{run_id}").json()
    assert shown["status"] == "finished" and shown["waiting"] == []
    assert shown["outputs"] == {"output": "paid 5 to ada"}
    assert [step["observation"] for step in shown["steps"]] == ["paid 5 to ada"]

    again = payments_agent.call("POST", f"/runs/{run_id}/resume", {"decisions": decisions})
    assert (again.status, again.json()["error"]["code"]) == (409, "run_finished")
    assert payments_agent.payments.paid == [("ada", 5)]


def test_a_denied_call_never_runs_and_the_model_is_told(payments_agent: Served) -> None:
    run_id, _ = payments_agent.paused_run()
    decisions = [{"kind": "deny", "reason": "not today"}]
    answer = payments_agent.call("POST", f"/runs/{run_id}/resume", {"decisions": decisions})
    assert answer.status == 200, answer.text
    output = answer.json()["outputs"]["output"]
    assert output == "Call denied by the user; pay did not run: not today"
    assert payments_agent.payments.paid == []


def test_an_edited_call_runs_as_edited(payments_agent: Served) -> None:
    run_id, _ = payments_agent.paused_run()
    edit = {"kind": "edit", "arguments": {"to": "bob", "amount": 2}}
    answer = payments_agent.call("POST", f"/runs/{run_id}/resume", {"decisions": [edit]})
    assert answer.json()["outputs"]["output"] == "paid 2 to bob"
    assert payments_agent.payments.paid == [("bob", 2)]


@pytest.mark.parametrize(
    ("body", "status", "code", "named"),
    [
        ({"decisions": {"call-7": {"kind": "approve"}}}, 409, "call_not_waiting", "call-7"),
        (
            {"decisions": {"call-0": {"kind": "approve"}, "x\n": {"kind": "approve"}}},
            409,
            "call_not_waiting",
            "'x\\n'",
        ),
        ({}, 422, "decisions_missing", "call-0"),
        ({"decisions": {}}, 422, "decisions_missing", "call-0"),
        ({"decisions": []}, 422, "decisions_missing", "call-0"),
        ({"decisions": {"call-0": {"kind": "maybe"}}}, 422, "invalid_decision", "call-0"),
        ({"decisions": {"call-0": "yes"}}, 422, "invalid_decision", "call-0"),
        ({"decisions": [{"kind": "deny", "reason": 3}]}, 422, "invalid_decision", "reason"),
        ({"decisions": [{"kind": "edit"}]}, 422, "invalid_decision", "arguments"),
        ({"decisions": [{"kind": "approve", "why": 1}]}, 422, "invalid_decision", "why"),
        ({"decisions": "approve"}, 422, "wrong_type", "decisions"),
        ({"decisions": [], "colour": 1}, 422, "unknown_field", "colour"),
        ({"decisions": [], "interrupted": "never"}, 422, "wrong_type", "interrupted"),
    ],
)
def test_decisions_that_do_not_fit_the_waiting_calls_are_refused_and_nothing_runs(
    payments_agent: Served, body: dict[str, Any], status: int, code: str, named: str
) -> None:
    run_id, _ = payments_agent.paused_run()
    answer = payments_agent.call("POST", f"/runs/{run_id}/resume", body)
    assert (answer.status, answer.json()["error"]["code"]) == (status, code), answer.text
    assert named in answer.json()["error"]["message"]
    assert payments_agent.payments.paid == []
    assert payments_agent.call("GET", f"/runs/{run_id}").json()["status"] == "paused"


def test_unknown_and_unsafe_run_ids_are_refused(payments_agent: Served) -> None:
    for method, path in [("GET", "/runs/{}"), ("POST", "/runs/{}/resume"), ("GET", "/runs/{}")]:
        answer = payments_agent.call(
            method, path.format("nosuchrun"), {} if method == "POST" else None
        )
        assert (answer.status, answer.json()["error"]["code"]) == (404, "run_not_found")
    for run_id in ("..", "%2e%2e", "a%0d%0aX-Evil:1", "x" * 129, "%C3%BC"):
        answer = payments_agent.call("GET", f"/runs/{run_id}")
        assert answer.status in (404, 422), (run_id, answer.text)
        assert "x-evil" not in answer.headers
    answer = payments_agent.call("GET", "/runs/" + "x" * 129)
    assert (answer.status, answer.json()["error"]["code"]) == (422, "invalid_id")


def test_a_resume_can_be_streamed(payments_agent: Served) -> None:
    run_id, _ = payments_agent.paused_run()
    body = {"decisions": [{"kind": "approve"}], "stream": True}
    answer = payments_agent.call("POST", f"/runs/{run_id}/resume", body)
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["x-run-id"] == run_id
    events = sse_events(answer.body)
    names = [name for name, _ in events]
    assert "approval_decided" in names and "tool_end" in names
    name, last = events[-1]
    assert name == "chain_end" and last["data"]["outputs"] == {"output": "paid 5 to ada"}


def test_a_streamed_run_that_pauses_ends_with_its_waiting_calls(payments_agent: Served) -> None:
    answer = payments_agent.call("POST", "/stream", {"input": "pay ada"})
    name, last = sse_events(answer.body)[-1]
    pending = last["data"]["outputs"]["pending"]
    assert name == "chain_end" and pending["status"] == "paused"
    assert [call["key"] for call in pending["waiting"]] == ["call-0"]
    assert "state" not in pending


def test_the_trace_page_shows_a_run_the_server_served(payments_agent: Served) -> None:
    run_id, _ = payments_agent.paused_run()
    payments_agent.call("POST", f"/runs/{run_id}/resume", {"decisions": [{"kind": "approve"}]})
    answer = payments_agent.call("GET", f"/runs/{run_id}/trace")
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("text/html")
    page = answer.text
    assert "paid 5 to ada" in page and '"approval"' in page
    missing = payments_agent.call("GET", "/runs/other-run/trace")
    assert (missing.status, missing.json()["error"]["code"]) == (404, "trace_not_found")


def test_a_tools_question_is_a_waiting_call_answered_with_any_json(tmp_path: Path) -> None:
    @tools.tool
    def transfer(amount: int) -> str:
        """Moves money to an account the user picks."""
        account = agents.interrupt({"question": "Which account?", "choices": ["a", "b"]})
        return f"moved {amount} to {account}"

    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    executor = agents.Executor(
        agents.ToolCallingAgent(llms.OfflineModel(), [transfer]), checkpointer=store
    )
    with served(create_app(executor, ServerSettings(token=TOKEN))) as url:
        answer = call(url, "POST", "/invoke", {"input": "Transfer 500"}, AUTH).json()
        run_id = answer["run_id"]
        [waiting] = answer["outputs"]["pending"]["waiting"]
        assert waiting["kind"] == "input" and waiting["tool"] == "transfer"
        assert waiting["question"] == {"question": "Which account?", "choices": ["a", "b"]}
        assert waiting["input"] == '{"amount": 500}'
        decisions = {str(waiting["key"]): {"account": "b"}}
        resumed = call(url, "POST", f"/runs/{run_id}/resume", {"decisions": decisions}, AUTH)
        assert resumed.json()["outputs"]["output"] == "moved 500 to {'account': 'b'}"
    store.close()


def test_a_chain_keeping_no_runs_says_so() -> None:
    with served(create_app(builtin_agent(), ServerSettings(token=TOKEN))) as url:
        for method, path in [("GET", "/runs"), ("GET", "/runs/r1"), ("POST", "/runs/r1/resume")]:
            answer = call(url, method, path, {} if method == "POST" else None, AUTH)
            assert (answer.status, answer.json()["error"]["code"]) == (404, "runs_not_kept")


def test_a_run_another_process_holds_is_refused_as_locked(
    payments_agent: Served, tmp_path: Path
) -> None:
    run_id, _ = payments_agent.paused_run()
    other = checkpoints.SQLiteStore(tmp_path / "runs.db")
    other.acquire(run_id)
    try:
        body: dict[str, Any] = {"decisions": [{"kind": "approve"}]}
        answer = payments_agent.call("POST", f"/runs/{run_id}/resume", body)
        assert (answer.status, answer.json()["error"]["code"]) == (409, "run_locked")
        streamed = payments_agent.call("POST", f"/runs/{run_id}/resume", {**body, "stream": True})
        name, error = sse_events(streamed.body)[-1]
        assert (name, error["error"]["code"]) == ("error", "run_locked")
        assert payments_agent.payments.paid == []
    finally:
        other.release(run_id)
        other.close()
    answer = payments_agent.call("POST", f"/runs/{run_id}/resume", body)
    assert answer.json()["outputs"]["output"] == "paid 5 to ada"


def test_decisions_posted_at_once_by_many_clients_pay_once(payments_agent: Served) -> None:
    run_id, _ = payments_agent.paused_run()
    body = {"decisions": [{"kind": "approve"}]}
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(
                lambda _: payments_agent.call("POST", f"/runs/{run_id}/resume", body), range(8)
            )
        )
    codes = sorted(
        "ok" if answer.status == 200 else answer.json()["error"]["code"] for answer in answers
    )
    assert codes.count("ok") == 1, codes
    refused = {"run_locked", "run_finished", "run_moved_on", "call_not_waiting"}
    assert set(codes) <= {"ok", *refused}, codes
    assert all(answer.status in (200, 409) for answer in answers)
    assert payments_agent.payments.paid == [("ada", 5)]


def test_the_traces_kept_are_bounded() -> None:
    traces = RunTraces(runs_kept=2, events_per_run=4)
    chain = chains.pipe(chains.step(lambda text: text.upper()))  # 4 events a run
    for run_id in ("r1", "r2", "r3"):
        chains.call(chain, {"input": run_id}, callbacks=traces.recorder(run_id))
    assert traces.lines("r1") is None
    lines, cut_short = traces.lines("r3") or ([], True)
    assert not cut_short and [json.loads(line)["kind"] for line in lines][-1] == "chain_end"
    chains.call(chain, {"input": "x"}, callbacks=traces.recorder("r2"))
    lines, cut_short = traces.lines("r2") or ([], False)
    assert cut_short and len(lines) == 4
    assert traces.lines("r3") is not None


def test_a_trace_shows_what_a_run_held_when_it_ran() -> None:
    """The events are made lines when the page asks: what they hold that is changed later
    (a list a structured call extends, inputs a caller reuses) shows as it was."""
    traces = RunTraces(runs_kept=1)
    reused: dict[str, Any] = {"items": ["first"]}
    reused["itself"] = reused
    chain = chains.pipe(chains.step(lambda value: value))
    chains.call(chain, {"input": reused}, callbacks=traces.recorder("r1"))
    reused["items"].append("later")
    reused["added"] = "later"
    lines, _ = traces.lines("r1") or ([], True)
    start = json.loads(lines[0])["data"]["inputs"]["input"]
    assert start == {"items": ["first"], "itself": "<cycle>"}
    assert "later" not in "".join(lines)


def test_a_trace_withholds_an_error_message_as_the_stream_does() -> None:
    traces = RunTraces(runs_kept=1)

    def fails(text: str) -> str:
        raise ValueError(f"provider said: {text}")

    chain = chains.pipe(chains.step(fails))
    with pytest.raises(ValueError):
        chains.call(chain, {"input": "the prompt"}, callbacks=traces.recorder("r1"))
    lines, _ = traces.lines("r1") or ([], True)
    errors = [json.loads(line)["data"]["error"] for line in lines if "_error" in line]
    assert errors and all(error["type"] == "ValueError" for error in errors)
    assert {error["message"] for error in errors} == {"withheld; the server log has run r1"}
    assert "provider said" not in "".join(lines)


def test_a_mrkl_call_is_keyed_by_its_position(tmp_path: Path) -> None:
    payments = Payments()
    llm = llms.FakeLLM(
        [
            'Action: pay\nAction Input: {"to": "ada", "amount": 5}',
            "Final Answer: ada is paid",
        ]
    )
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    executor = agents.Executor(agents.OneShotAgent(llm, [payments.pay]), checkpointer=store)
    with served(create_app(executor, ServerSettings(token=TOKEN))) as url:
        paused = call(url, "POST", "/invoke", {"input": "pay ada"}, AUTH).json()
        [waiting] = paused["outputs"]["pending"]["waiting"]
        assert (waiting["key"], waiting["tool_call_id"]) == (0, None)
        decisions = {"0": {"kind": "approve"}}
        path = f"/runs/{paused['run_id']}/resume"
        resumed = call(url, "POST", path, {"decisions": decisions}, AUTH).json()
        assert resumed["outputs"] == {"output": "ada is paid"}
    assert payments.paid == [("ada", 5)]
    store.close()


def test_a_runs_state_is_shown_without_secrets(payments_agent: Served) -> None:
    key = "sk-" + "a1b2c3d4" * 4
    answer = payments_agent.call("POST", "/invoke", {"input": f"pay ada with {key}"})
    run_id = answer.json()["run_id"]
    shown = payments_agent.call("GET", f"/runs/{run_id}")
    assert shown.status == 200 and key not in shown.text
    assert shown.json()["inputs"]["input"].startswith("pay ada with sk-a")


def test_every_runs_route_is_described_for_openapi() -> None:
    app = create_app(builtin_agent(), ServerSettings(token=TOKEN))
    routes = [route for route in app.routes if getattr(route, "path", "").startswith("/runs")]
    assert len(routes) == 4
    for route in routes:
        path = getattr(route, "path", "")
        for method in getattr(route, "methods", None) or ():
            if method != "HEAD":
                operation = _runs.PATHS[path][method.lower()]
                assert operation["summary"] and "401" in operation["responses"], path


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=1001", "limit=%C2%B2", "limit=" + "9" * 5000, "status=gone"]
)
def test_a_listing_asked_for_out_of_range_is_refused(payments_agent: Served, query: str) -> None:
    answer = payments_agent.call("GET", f"/runs?{query}")
    assert (answer.status, answer.json()["error"]["code"]) == (422, "invalid_query")


def test_a_run_whose_stored_state_is_damaged_is_a_store_failure(
    payments_agent: Served, tmp_path: Path
) -> None:
    run_id, _ = payments_agent.paused_run()
    with sqlite3.connect(tmp_path / "runs.db") as database:
        database.execute("UPDATE chainkit_runs SET header = '{' WHERE run_id = ?", (run_id,))
    answer = payments_agent.call("GET", f"/runs/{run_id}")
    assert (answer.status, answer.json()["error"]["code"]) == (500, "store_failed")
    assert "Traceback" not in answer.text


def test_the_trace_page_shows_hostile_text_inert(payments_agent: Served) -> None:
    hostile = "</script><script>alert(1)</script><!--"
    run_id, _ = payments_agent.paused_run()
    body = {"decisions": [{"kind": "deny", "reason": hostile}]}
    payments_agent.call("POST", f"/runs/{run_id}/resume", body)
    page = payments_agent.call("GET", f"/runs/{run_id}/trace")
    assert page.status == 200 and page.headers["x-content-type-options"] == "nosniff"
    assert hostile not in page.text and "<script>alert" not in page.text
    assert "\\u003c/script>\\u003cscript>alert(1)" in page.text


def test_a_server_keeping_no_traces_records_none(tmp_path: Path) -> None:
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    executor = agents.Executor(tool_calling(Payments(), PAY), checkpointer=store)
    app = create_app(executor, ServerSettings(token=TOKEN, traces_kept=0))
    assert app.state.traces.recorder("any") is None
    with served(app) as url:
        run_id = call(url, "POST", "/invoke", {"input": "pay ada"}, AUTH).json()["run_id"]
        answer = call(url, "GET", f"/runs/{run_id}/trace", None, AUTH)
        assert (answer.status, answer.json()["error"]["code"]) == (404, "trace_not_found")
    store.close()


@pytest.mark.parametrize("kept", [-1, 1.5, True, "8"])
def test_traces_kept_must_be_a_count(kept: object) -> None:
    with pytest.raises(ServeConfigError, match="traces_kept"):
        ServerSettings(token=TOKEN, traces_kept=kept)  # type: ignore[arg-type]


def test_a_refusal_names_a_few_of_many_unknown_calls(payments_agent: Served) -> None:
    run_id, _ = payments_agent.paused_run()
    decisions = {f"call-{i}-" + "x" * 200: {"kind": "approve"} for i in range(1, 3001)}
    answer = payments_agent.call("POST", f"/runs/{run_id}/resume", {"decisions": decisions})
    assert (answer.status, answer.json()["error"]["code"]) == (409, "call_not_waiting")
    message = answer.json()["error"]["message"]
    assert "and 2995 more" in message and len(message) < 1000


def test_a_client_leaving_a_streamed_resume_stops_its_run_and_frees_its_place(
    tmp_path: Path,
) -> None:
    store = checkpoints.SQLiteStore(tmp_path / "runs.db")
    held = ApprovedThenHeld(store)
    settings = ServerSettings(token=TOKEN, max_runs_per_client=1)
    try:
        with served(create_app(held.executor, settings)) as url:
            run_id = call(url, "POST", "/invoke", {"input": "go"}, AUTH).json()["run_id"]
            body = {"decisions": [{"kind": "approve"}], "stream": True}
            stream = RawStream(url, f"/runs/{run_id}/resume", body, AUTH)
            stream.read_until(b"event: tool_start")
            stream.close()
            deadline = time.monotonic() + WAIT_SECONDS
            while True:  # held by its run, then by its place, until the server hears it left
                again = call(url, "POST", f"/runs/{run_id}/resume", {}, AUTH)
                code = again.json().get("error", {}).get("code")
                if code not in ("run_locked", "too_many_runs") or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert (again.status, code) == (409, "call_interrupted"), again.text
    finally:
        held.release.set()
        store.close()
