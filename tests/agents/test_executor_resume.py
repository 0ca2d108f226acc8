"""chains.resume on an Executor: what a stopped run's state decides, and what is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainkit import agents, chains, checkpoints, llms, tools
from chainkit.checkpoints.state import PendingCall
from chainkit.llms import FakeLLM
from chainkit.schema import AgentAction, AgentStep
from tests.support import durable_runs
from tests.support.durable_runs import ANSWER, Points
from tests.support.modes import Mode
from tests.support.openai_server import Call, OpenAIServer, Reply
from tests.support.stub_chains import InputOutputChain


def _stopped_in(tool: str, run_id: str = "stopped") -> checkpoints.RunState:
    """A MRKL run stopped in its second call (to `tool`), after a completed first one."""
    first = AgentAction("append", '{"text": "a"}', durable_runs.MRKL_SCRIPT[0])
    cut = AgentAction(tool, '{"text": "b"}', durable_runs.MRKL_SCRIPT[1])
    return checkpoints.RunState(
        run_id,
        "OneShotAgent",
        ["append", "note"],
        {"input": durable_runs.QUESTION},
        [AgentStep(first, f"{durable_runs.MARK}append:a")],
        [PendingCall(cut, started=True)],
        iteration=2,
    )


def _mrkl(tmp_path: Path, store: object = None) -> agents.Executor:
    return durable_runs.executor("mrkl", tmp_path / "log", store, Points(None))


def _calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "log").read_text("utf-8").splitlines()


def test_a_call_cut_in_the_middle_is_reported_naming_it(mode: Mode, tmp_path: Path) -> None:
    state = _stopped_in("append")
    with pytest.raises(checkpoints.InterruptedCallError) as raised:
        mode.drive("resume", _mrkl(tmp_path), state)
    assert raised.value.tool == "append" and "'append'" in str(raised.value)
    assert "interrupted='repeat'" in str(raised.value)
    assert not (tmp_path / "log").exists()  # nothing ran


def test_the_caller_repeats_a_cut_call(mode: Mode, tmp_path: Path) -> None:
    outputs = mode.drive("resume", _mrkl(tmp_path), _stopped_in("append"), interrupted="repeat")
    assert outputs == {"output": ANSWER}
    assert _calls(tmp_path) == ["append:b", "append:c", "append:d"]  # a: completed before


def test_the_caller_skips_a_cut_call_and_the_model_is_told(mode: Mode, tmp_path: Path) -> None:
    chain = _mrkl(tmp_path)
    outputs = mode.drive("resume", chain, _stopped_in("append"), interrupted="skip")
    assert outputs == {"output": ANSWER}
    assert "was not repeated: its outcome is unknown" in chain.agent.llm.heard[0]  # type: ignore[attr-defined]
    # Not told it completed, this model writes b once more, with its other tool.
    assert _calls(tmp_path) == ["note:b", "append:c", "append:d"]


def test_an_idempotent_tool_is_repeated_without_asking(mode: Mode, tmp_path: Path) -> None:
    outputs = mode.drive("resume", _mrkl(tmp_path), _stopped_in("note"))
    assert outputs == {"output": ANSWER}
    assert _calls(tmp_path) == ["note:b", "append:c", "append:d"]


def test_a_state_round_trips_through_json_and_resumes(mode: Mode, tmp_path: Path) -> None:
    text = _stopped_in("note").to_json()
    assert json.loads(text)["version"] == 1
    assert mode.drive("resume", _mrkl(tmp_path), text) == {"output": ANSWER}


def test_a_state_of_another_agent_kind_is_refused(tmp_path: Path) -> None:
    native = durable_runs.executor("native", tmp_path / "log", None, Points(None))
    with pytest.raises(checkpoints.StateMismatchError, match=r"OneShotAgent.*ToolCallingAgent"):
        chains.resume(native, _stopped_in("note"))


def test_a_state_needing_a_tool_the_agent_lacks_is_refused(tmp_path: Path) -> None:
    append, _ = durable_runs.side_effect_tools(tmp_path / "log", Points(None))
    chain = agents.Executor(agents.OneShotAgent(FakeLLM([]), [append]))
    with pytest.raises(checkpoints.StateMismatchError, match=r"\['note'\]"):
        chains.resume(chain, _stopped_in("note"))


def test_a_state_of_another_version_is_refused(tmp_path: Path) -> None:
    data = {**_stopped_in("note").to_dict(), "version": 2}
    with pytest.raises(checkpoints.StateFormatError, match="version 2"):
        chains.resume(_mrkl(tmp_path), data)


def test_decisions_for_a_run_not_paused_for_approval_are_refused(tmp_path: Path) -> None:
    with pytest.raises(agents.errors.AgentConfigError, match="'stopped' has no call waiting"):
        chains.resume(_mrkl(tmp_path), _stopped_in("note"), {"c1": "approve"})


def test_a_bad_interrupted_choice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(checkpoints.errors.CheckpointConfigError, match="'again'"):
        chains.resume(_mrkl(tmp_path), _stopped_in("note"), interrupted="again")


def test_a_run_id_needs_a_checkpointer(tmp_path: Path) -> None:
    with pytest.raises(checkpoints.errors.CheckpointConfigError, match="checkpointer"):
        chains.resume(_mrkl(tmp_path), "some-run")


def test_a_chain_other_than_an_executor_cannot_resume() -> None:
    class Echo(InputOutputChain):
        def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
            return {"output": inputs["input"]}

    with pytest.raises(chains.errors.ChainTypeError, match="Echo cannot resume"):
        chains.resume(Echo(), "some-run")


def test_a_finished_run_resumed_gives_its_answer_again(mode: Mode, tmp_path: Path) -> None:
    store = checkpoints.SQLiteStore(":memory:")
    with checkpoints.named_run("done"):
        assert mode.run(_mrkl(tmp_path, store), durable_runs.QUESTION) == ANSWER
    assert store.load("done").status == "finished"
    assert mode.drive("resume", _mrkl(tmp_path, store), "done") == {"output": ANSWER}
    assert len(_calls(tmp_path)) == 4  # no call made again


def test_a_checkpointed_run_gives_the_same_answer_and_saves_every_step(
    mode: Mode, tmp_path: Path
) -> None:
    store = checkpoints.SQLiteStore(":memory:")
    chain = durable_runs.executor("native", tmp_path / "log", store, Points(None))
    with checkpoints.named_run("whole"):
        assert mode.run(chain, durable_runs.QUESTION) == ANSWER
    state = store.load("whole")
    assert [step.action.tool_call_id for step in state.steps] == ["c1", "c2", "c3", "c4"]
    # The two calls of one reply share it, so the conversation is rebuilt as it was.
    assert state.steps[1].action.message_log[0] is state.steps[2].action.message_log[0]
    assert state.iteration == 4 and state.outputs == {"output": ANSWER}


def test_a_native_run_over_http_is_saved_without_its_api_key(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    secret = "sk-test-0123456789abcdef0123456789abcdef"
    openai_server.push(Reply(tool_calls=[Call("append", '{"text": "a"}', "c1")]), "all done")
    model = llms.OpenAI("gpt-4o-mini", api_key=secret, base_url=openai_server.base_url)
    append, note = durable_runs.side_effect_tools(tmp_path / "log", Points(None))
    store = checkpoints.SQLiteStore(":memory:")
    chain = agents.Executor(agents.ToolCallingAgent(model, [append, note]), checkpointer=store)
    with checkpoints.named_run("over-http"):
        assert chains.run(chain, "hello") == "all done"
    saved = store.load("over-http")
    assert [step.action.tool_call_id for step in saved.steps] == ["c1"]
    assert saved.steps[0].action.message_log[0].tool_calls[0].function.name == "append"
    assert secret not in saved.to_json()


def test_inputs_that_are_not_json_are_refused_naming_the_key(tmp_path: Path) -> None:
    chain = _mrkl(tmp_path, checkpoints.SQLiteStore(":memory:"))
    with pytest.raises(checkpoints.errors.CheckpointConfigError, match="'input'"):
        chains.call(chain, {"input": object()})


def test_a_checkpointer_that_is_none_of_the_kind_is_refused() -> None:
    @tools.tool
    def noop(text: str) -> str:
        """Does nothing."""
        return text

    with pytest.raises(agents.errors.AgentTypeError, match="checkpointer"):
        agents.Executor(agents.OneShotAgent(FakeLLM([]), [noop]), checkpointer="runs.db")  # type: ignore[arg-type]


def test_each_parallel_call_is_saved_as_it_completes(mode: Mode, tmp_path: Path) -> None:
    store = checkpoints.SQLiteStore(":memory:")
    seen: list[list[str | None]] = []
    append, note = durable_runs.side_effect_tools(tmp_path / "log", Points(None))

    @tools.tool(name="append")
    def append_looking(text: str) -> str:
        """Appends text, after looking at what the store holds of the step."""
        seen.append([entry.observation for entry in store.load("parallel").pending])
        return append.func(text)  # type: ignore[attr-defined, no-any-return]

    model = durable_runs.ByObservations(list(durable_runs.NATIVE_SCRIPT))
    agent = agents.ToolCallingAgent(model, [append_looking, note], max_parallel_tools=1)
    chain = agents.Executor(agent, checkpointer=store)
    with checkpoints.named_run("parallel"):
        assert mode.run(chain, durable_runs.QUESTION) == ANSWER
    # c3 ran after c2, in the same step: c2's observation was saved before c3 started.
    assert seen[1] == [f"{durable_runs.MARK}note:b", None]
