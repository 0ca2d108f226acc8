"""llms.Fallbacks over real HTTP: two loopback servers, the primary failing, the backup
answering; which model answered is in the events, the spans and the log."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

from chainkit import agents, callbacks, chains, llms, prompts, tools
from chainkit.callbacks import AnswerRestart, FinalAnswerStream, OpenTelemetryHandler
from chainkit.callbacks.final_answer import Piece
from chainkit.callbacks.trace_view import read_trace
from chainkit.llms import (
    AllModelsFailedError,
    Fallbacks,
    ModelConnectionError,
    ModelStatusError,
    OpenAI,
)
from chainkit.llms.errors import ModelTypeError
from chainkit.schema import Message
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode, run_then_close
from tests.support.openai_server import TEST_API_KEY, Fault, Reply
from tests.support.otel import exporter_and_provider
from tests.support.retried_stream import ANSWER, break_then_answer

HI = [Message.user("hi")]


@pytest.fixture
def primary(make_openai: Callable[..., OpenAI]) -> OpenAI:
    return make_openai(model="primary-model", max_attempts=2)


def run_names(recorder: EventRecorder, *kinds: str) -> list[tuple[str, str]]:
    return [(name, run.name) for name, run in recorder.runs(*kinds) if run is not None]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "fault",
    [Fault.http(503), Fault.http(429), Fault.http(500), Fault.drop()],
    ids=["503", "429", "500", "dropped"],
)
def test_the_backup_answers_when_the_primarys_retries_gave_up(
    mode: Mode, openai_server, backup_server, primary, backup, fault
):
    openai_server.fail(fault, fault)  # both of the primary's attempts
    backup_server.push("from the backup")
    recorder = EventRecorder()
    both = Fallbacks([primary, backup])
    reply = mode.generate(both, HI, callbacks=recorder)
    assert reply.content == "from the backup"
    assert len(openai_server.chat_requests()) == 2 and len(backup_server.chat_requests()) == 1
    # Each model's call is its own run, named by the model: the failed one, the one that answered.
    assert run_names(recorder, "llm_start", "llm_error", "llm_end") == [
        ("llm_start", "primary-model"),
        ("llm_error", "primary-model"),
        ("llm_start", "backup-model"),
        ("llm_end", "backup-model"),
    ]


@pytest.mark.timeout(60)
def test_a_timeout_falls_back(openai_server, backup_server, make_openai, backup):
    slow = make_openai(model="slow-model", timeout=0.2, max_attempts=1)
    openai_server.fail(Fault.slow(3))
    backup_server.push("in time")
    assert llms.call(Fallbacks([slow, backup]), "hi") == "in time"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_a_request_or_set_up_error_is_raised_as_it_is_without_calling_the_backup(
    mode: Mode, openai_server, backup_server, primary, backup, status
):
    openai_server.fail(Fault.http(status))
    with pytest.raises(ModelStatusError) as raised:
        mode.generate(Fallbacks([primary, backup]), HI)
    assert raised.value.status_code == status
    assert backup_server.chat_requests() == []


@pytest.mark.timeout(60)
def test_fall_back_on_chooses_the_errors_that_fall_back(
    openai_server, backup_server, primary, backup
):
    openai_server.fail(Fault.http(400))
    backup_server.push("took the bad request")
    every_status = Fallbacks([primary, backup], fall_back_on=(ModelStatusError,))
    assert llms.call(every_status, "hi") == "took the bad request"

    openai_server.fail(Fault.drop(), Fault.drop())
    only_status = Fallbacks([primary, backup], fall_back_on=ModelStatusError)
    with pytest.raises(ModelConnectionError):
        llms.call(only_status, "hi")

    openai_server.fail(Fault.http(404))
    backup_server.push("found")
    also_404 = Fallbacks(
        [primary, backup],
        fall_back_on=lambda error: isinstance(error, ModelStatusError) and error.status_code == 404,
    )
    assert llms.call(also_404, "hi") == "found"


@pytest.mark.timeout(60)
def test_when_every_model_fails_the_error_carries_each_models_error(
    mode: Mode, openai_server, backup_server, primary, backup
):
    openai_server.fail(Fault.http(503), Fault.http(503))
    backup_server.fail(*[Fault.http(429)] * 5)
    with pytest.raises(AllModelsFailedError) as raised:
        mode.generate(Fallbacks([primary, backup]), HI)
    [(first, primary_error), (second, backup_error)] = raised.value.errors
    assert (first, second) == ("primary-model", "backup-model")
    assert isinstance(primary_error, ModelStatusError) and primary_error.status_code == 503
    assert isinstance(backup_error, ModelStatusError) and backup_error.status_code == 429
    assert "primary-model" in str(raised.value) and "backup-model" in str(raised.value)
    assert TEST_API_KEY not in str(raised.value)
    assert raised.value.__cause__ is backup_error


@pytest.mark.timeout(60)
def test_fallbacks_of_fallbacks_go_on_when_the_inner_ones_all_failed(
    openai_server, backup_server, primary, backup, make_openai
):
    openai_server.fail(*[Fault.http(503)] * 4)
    backup_server.push("outer backup")
    inner = Fallbacks([primary, make_openai(model="second-model", max_attempts=2)])
    assert llms.call(Fallbacks([inner, backup]), "hi") == "outer backup"


@pytest.mark.timeout(60)
def test_a_streaming_func_never_gets_two_models_text(
    mode: Mode, openai_server, backup_server, make_openai, backup
):
    primary = make_openai(model="primary-model", max_attempts=1)
    openai_server.fail(Fault.cut(after_chunks=3, reply=Reply("Hello from the primary")))
    backup_server.push(Reply("Bonjour from the backup"))
    pieces: list[str] = []
    recorder = EventRecorder()
    reply = mode.generate(
        Fallbacks([primary, backup]), HI, streaming_func=pieces.append, callbacks=recorder
    )
    assert reply.content == "Bonjour from the backup"
    handed = "".join(pieces)
    assert handed and "Hello from the primary".startswith(handed)
    # Handlers hear each model's tokens in its own run: the backup's from its start.
    backup_tokens = [
        event[1]
        for event in recorder.events
        if event[0] == "streaming_func" and event[-1].name == "backup-model"
    ]
    assert "".join(backup_tokens) == "Bonjour from the backup"


@pytest.mark.timeout(60)
def test_a_streaming_func_gets_the_backups_whole_reply_when_the_primary_streamed_nothing(
    openai_server, backup_server, primary, backup
):
    openai_server.fail(Fault.http(503), Fault.http(503))
    backup_server.push(Reply("all of it", chunk_size=2))
    pieces: list[str] = []
    llms.call(Fallbacks([primary, backup]), "hi", streaming_func=pieces.append)
    assert pieces == ["al", "l ", "of", " i", "t"]


@pytest.mark.timeout(60)
def test_an_agents_streamed_answer_restarts_with_the_backups(
    openai_server, backup_server, make_openai, backup
):
    # The primary streams "Final Answer: The answer is 85, " and its connection is cut; with
    # one attempt it gives up, and the backup answers "It is 84.".
    primary = make_openai(model="primary-model", max_attempts=1)
    break_then_answer(openai_server)
    openai_server._replies.clear()  # the primary has no second attempt: the backup answers
    backup_server.push(Reply(f"Final Answer: {ANSWER}", chunk_size=4))
    both = Fallbacks([primary, backup])
    executor = agents.Executor(agents.OneShotAgent(both, [tools.Calculator()]))
    pieces = list(FinalAnswerStream(chains.stream(executor, "q")))
    restart = pieces.index(AnswerRestart("The answer is 85,"))
    assert "".join(map(str, pieces[:restart])) == "The answer is 85,"
    assert "".join(map(str, pieces[restart + 1 :])) == ANSWER

    async def consume() -> list[Piece]:
        return [piece async for piece in FinalAnswerStream(chains.astream(executor, "q"))]

    break_then_answer(openai_server)
    openai_server._replies.clear()
    backup_server.push(Reply(f"Final Answer: {ANSWER}", chunk_size=4))
    assert run_then_close(both, consume()) == pieces


@pytest.mark.timeout(60)
def test_an_llm_chain_and_an_async_agent_use_it_like_any_model(
    openai_server, backup_server, primary, backup
):
    both = Fallbacks([primary, backup])
    openai_server.fail(Fault.http(503), Fault.http(503))
    backup_server.push("a limerick")
    chain = chains.LLMChain(prompts.PromptTemplate.from_template("Write {kind}"), both)
    assert chains.predict(chain, {"kind": "a limerick"}) == "a limerick"

    openai_server.fail(Fault.http(503), Fault.http(503))
    backup_server.push("Final Answer: 4")
    executor = agents.Executor(agents.OneShotAgent(both, [tools.Calculator()]))
    assert run_then_close(both, chains.arun(executor, "2 + 2?")) == "4"


@pytest.mark.timeout(60)
def test_spans_and_the_log_say_which_model_answered(openai_server, backup_server, primary, backup):
    exporter, provider = exporter_and_provider()
    from opentelemetry.trace import StatusCode

    log = io.StringIO()
    openai_server.fail(Fault.http(503), Fault.http(503))
    backup_server.push("answered")
    handlers = [OpenTelemetryHandler(provider), callbacks.LogHandler(log)]
    llms.call(Fallbacks([primary, backup]), "hi", callbacks=handlers)
    failed, answered = exporter.get_finished_spans()
    assert failed.status.status_code == StatusCode.ERROR
    assert dict(failed.attributes or {})["gen_ai.request.model"] == "primary-model"
    said = dict(answered.attributes or {})
    assert said["gen_ai.request.model"] == said["gen_ai.response.model"] == "backup-model"
    assert "llm error: ModelStatusError" in log.getvalue()
    assert "model=backup-model" in log.getvalue().splitlines()[-1]


@pytest.mark.parametrize(
    ("models", "error", "says"),
    [
        ([], llms.errors.ModelConfigError, "at least one model"),
        ("gpt-4o", ModelTypeError, "a list of models"),
        ([llms.FakeLLM(["x"]), "gpt-4o"], ModelTypeError, "models[1] is str, not a model"),
    ],
)
def test_no_models_or_a_non_model_is_refused(models: Any, error: type[Exception], says: str):
    with pytest.raises(error, match=says.replace("[", r"\[").replace("]", r"\]")):
        Fallbacks(models)


@pytest.mark.parametrize("rule", [(), (KeyboardInterrupt,), "ModelError", (ValueError, 3)])
def test_fall_back_on_that_is_no_exception_class_nor_function_is_refused(rule: Any):
    with pytest.raises(ModelTypeError, match="fall_back_on must be exception classes"):
        Fallbacks([llms.FakeLLM(["x"])], fall_back_on=rule)


def test_an_async_streaming_func_is_refused_before_any_call():
    async def chunk(text: str) -> None: ...

    fake = llms.FakeLLM(["x"])
    with pytest.raises(ModelTypeError, match="plain function"):
        Fallbacks([fake]).generate(HI, streaming_func=chunk)  # type: ignore[arg-type]
    assert fake.calls == []


@pytest.mark.timeout(60)
def test_the_trace_shows_the_failed_model_and_the_one_that_answered(
    tmp_path, openai_server, backup_server, primary, backup
):
    openai_server.fail(Fault.http(503), Fault.http(503))
    backup_server.push(Reply("a haiku", usage={"prompt_tokens": 9, "completion_tokens": 4}))
    chain = chains.LLMChain(
        prompts.PromptTemplate.from_template("Write {kind}"), both := Fallbacks([primary, backup])
    )
    with callbacks.TraceFile(tmp_path / "run.jsonl") as trace:
        chains.predict(chain, {"kind": "a haiku"}, callbacks=trace)
    [root] = read_trace(tmp_path / "run.jsonl")
    failed, answered = root.children
    assert (failed.name, failed.model, failed.error and failed.error["type"]) == (
        "primary-model",
        "primary-model",
        "ModelStatusError",
    )
    assert (answered.name, answered.model, answered.error) == ("backup-model", "backup-model", None)
    assert (answered.input_tokens, answered.output_tokens) == (9, 4)
    assert repr(both) == "Fallbacks([primary-model, backup-model])"
