"""The steps of chains.steps: dicts run side by side, assign, pick, branch, fallbacks, retry."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from chainkit import chains, llms, prompts
from chainkit.callbacks import Handler
from chainkit.chains.errors import (
    AllStepsFailedError,
    ChainTypeError,
    ChainWiringError,
    InputsTypeError,
    MissingInputKeysError,
)
from chainkit.llms.errors import ModelConnectionError
from tests.support.modes import Mode
from tests.support.openai_server import Fault, OpenAIServer

P = prompts.PromptTemplate.from_template


def test_a_dict_runs_its_steps_side_by_side_on_the_same_value(mode: Mode) -> None:
    # Each branch waits for the other two: the dict finishes only if all three run at once.
    if mode.is_async:
        arrived = 0
        all_here: asyncio.Event | None = None

        async def meet(value: str) -> str:
            nonlocal arrived, all_here
            all_here = all_here or asyncio.Event()
            arrived += 1
            if arrived == 3:
                all_here.set()
            await asyncio.wait_for(all_here.wait(), 10)
            return value * 2

        branches: dict[str, Any] = {key: chains.step(meet) for key in "abc"}
    else:
        barrier = threading.Barrier(3, timeout=10)

        def meet_sync(value: str) -> str:
            barrier.wait()
            return value * 2

        branches = {key: chains.step(meet_sync) for key in "abc"}
    pipeline = chains.pipe(str.upper, branches)
    assert mode.call(pipeline, {"input": "x"}) == {"a": "XX", "b": "XX", "c": "XX"}


def test_a_failing_branch_fails_the_dict_with_its_error(mode: Mode) -> None:
    def fail(value: str) -> str:
        raise ValueError(f"bad {value}")

    pipeline = chains.pipe(str.strip, {"ok": str.upper, "bad": fail})
    with pytest.raises(ValueError, match="bad x"):
        mode.call(pipeline, {"input": " x "})


def test_assign_adds_keys_computed_on_the_inputs(mode: Mode) -> None:
    pipeline = chains.assign(
        context=chains.pick("question") | (lambda q: f"notes on {q}"),
        length=lambda inputs: len(inputs["question"]),
    ) | P("{context} / {question} / {length}")
    assert pipeline.input_keys == ["question"]
    outputs = mode.call(pipeline, {"question": "tea"})
    assert outputs["output"][0].content == "notes on tea / tea / 3"


def test_assign_refuses_a_value_that_is_not_a_dict() -> None:
    def text(value: str) -> str:
        return value

    with pytest.raises(
        ChainWiringError,
        match=r"chains.assign adds keys to a dict, and text gives one value \(str\)",
    ):
        chains.pipe(text, chains.assign(n=len))


def test_pick_one_key_gives_its_value_and_several_a_dict(mode: Mode) -> None:
    assert mode.call(chains.pick("a") | str.upper, {"a": "x", "b": "y"}) == {"output": "X"}
    both = chains.pick("a", "b") | P("{a}{b}")
    assert mode.call(both, {"a": "x", "b": "y", "c": "z"})["output"][0].content == "xy"
    with pytest.raises(ChainTypeError, match="one or more key names"):
        chains.pick()


def test_branch_runs_the_first_case_that_holds_else_the_default(mode: Mode) -> None:
    router = chains.branch(
        (lambda q: "math" in q, chains.step(lambda q: "to the calculator")),
        (lambda q: "weather" in q, chains.step(lambda q: "to the forecast")),
        default=chains.step(lambda q: "to the model"),
    )
    pipeline = chains.pipe(str.lower, router)
    assert mode.run(pipeline, "Some MATH") == "to the calculator"
    assert mode.run(pipeline, "the weather") == "to the forecast"
    assert mode.run(pipeline, "hello") == "to the model"
    with pytest.raises(ChainTypeError, match=r"case 0 must be a \(condition, step\) pair"):
        chains.branch(("not callable", str.upper), default=str.lower)  # type: ignore[arg-type]


def test_fallbacks_take_over_when_a_step_fails_as_a_model_would_fall_back(
    mode: Mode, openai_server: OpenAIServer, make_openai: Any
) -> None:
    primary = make_openai(max_attempts=1)
    openai_server.fail(Fault.http(503))
    steps = chains.fallbacks(
        P("{q}") | primary,
        P("{q}") | llms.FakeLLM(["from the backup"]),
    )
    pipeline = steps | (lambda reply: reply.content)
    assert mode.run(pipeline, "hi") == "from the backup"


def test_fallbacks_raise_an_error_they_do_not_fall_back_on_and_name_all_that_failed(
    mode: Mode,
) -> None:
    def broken(value: str) -> str:
        raise ModelConnectionError("down")

    def wrong(value: str) -> str:
        raise KeyError("not a model failure")

    with pytest.raises(KeyError):
        mode.run(chains.pipe(str.strip, chains.fallbacks(wrong, str.upper)), "x")
    with pytest.raises(
        AllStepsFailedError,
        match=r"every step failed \(2 tried\): broken: ModelConnectionError: down; broken: ",
    ) as raised:
        mode.run(chains.pipe(str.strip, chains.fallbacks(broken, broken)), "x")
    assert [name for name, _ in raised.value.errors] == ["broken", "broken"]
    assert isinstance(raised.value.__cause__, ModelConnectionError)
    anything = chains.fallbacks(wrong, str.upper, fall_back_on=(Exception,))
    assert mode.run(chains.pipe(str.strip, anything), "x") == "X"


class Retries(Handler):
    def __init__(self) -> None:
        self.attempts: list[int] = []

    def handle_retry(
        self, attempt: int, error: BaseException, wait_seconds: float, discarded: str
    ) -> None:
        self.attempts.append(attempt)


def test_retry_tries_a_step_again_and_reports_each_retry(mode: Mode) -> None:
    calls: list[str] = []

    def flaky(value: str) -> str:
        calls.append(value)
        if len(calls) < 3:
            raise ModelConnectionError("blip")
        return value.upper()

    heard = Retries()
    fast = llms.Backoff(initial=0, maximum=0)
    pipeline = chains.pipe(str.strip, chains.retry(flaky, max_attempts=3, backoff=fast))
    assert mode.run(pipeline, " x ", callbacks=heard) == "X"
    assert calls == ["x", "x", "x"]
    assert heard.attempts == [1, 2]


def test_retry_gives_up_after_its_attempts_and_on_errors_it_does_not_take(mode: Mode) -> None:
    calls: list[str] = []

    def down(value: str) -> str:
        calls.append(value)
        raise ModelConnectionError("down")

    fast = llms.Backoff(initial=0, maximum=0)
    with pytest.raises(ModelConnectionError):
        mode.run(chains.pipe(str.strip, chains.retry(down, max_attempts=2, backoff=fast)), "x")
    assert len(calls) == 2

    def wrong(value: str) -> str:
        calls.append(value)
        raise KeyError(value)

    calls.clear()
    with pytest.raises(KeyError):
        mode.run(chains.pipe(str.strip, chains.retry(wrong, backoff=fast)), "x")
    assert len(calls) == 1


def test_pick_names_itself_when_the_key_or_the_dict_is_missing(mode: Mode) -> None:
    with pytest.raises(
        MissingInputKeysError, match=r"pick\('b'\) is missing input key\(s\) \['b'\]; got \['a'\]"
    ):
        mode.call(chains.pipe(lambda value: {"a": value}, chains.pick("b")), {"input": 1})
    with pytest.raises(
        InputsTypeError, match=r"pick\('b', 'c'\) takes a dict of \['b', 'c'\], got int"
    ):
        mode.call(chains.pipe(lambda value: 3, chains.pick("b", "c")), {"input": 1})
