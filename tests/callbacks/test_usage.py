"""UsageTotals over real HTTP: tokens in and out per model for a run, streamed replies
included, and their cost at the prices given."""

from __future__ import annotations

import pytest

from chainkit import agents, chains, llms, tools
from chainkit.callbacks import ModelUsage, UsageTotals
from chainkit.callbacks.errors import HandlerConfigError, HandlerTypeError
from chainkit.schema import Message
from tests.support.modes import Mode
from tests.support.openai_server import OpenAIServer, Reply


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def step_then_answer(server: OpenAIServer, answer_usage: dict[str, int]) -> None:
    server.push(
        Reply("Action: calculator\nAction Input: 2 + 2", usage=usage(100, 20)),
        Reply("Final Answer: 4", usage=answer_usage),
    )


@pytest.mark.timeout(60)
def test_an_agent_runs_tokens_are_summed_per_model(mode: Mode, openai_server, openai_llm):
    step_then_answer(openai_server, usage(130, 5))
    executor = agents.Executor(agents.OneShotAgent(openai_llm, [tools.Calculator()]))
    totals = UsageTotals()
    assert mode.run(executor, "2 + 2?", callbacks=totals) == "4"
    assert totals.models == {"loopback-model": ModelUsage(2, 230, 25)}
    assert (totals.input_tokens, totals.output_tokens) == (230, 25)


@pytest.mark.timeout(60)
def test_streamed_replies_count_as_the_backend_asks_for_their_usage(openai_server, openai_llm):
    step_then_answer(openai_server, usage(130, 5))
    executor = agents.Executor(agents.OneShotAgent(openai_llm, [tools.Calculator()]))
    totals = UsageTotals()
    events = list(chains.stream(executor, "2 + 2?", callbacks=totals))
    assert [e.kind for e in events].count("token") > 2
    requests = openai_server.chat_requests()
    assert all(r.body["stream_options"] == {"include_usage": True} for r in requests)
    assert totals.models == {"loopback-model": ModelUsage(2, 230, 25)}


@pytest.mark.timeout(60)
def test_each_model_of_a_run_is_counted_apart_and_priced(openai_server, make_openai):
    big, small = make_openai(model="big"), make_openai(model="small")
    openai_server.push(
        Reply("one", usage=usage(1_000_000, 0)),
        Reply("two", usage=usage(2_000, 1_000)),
        Reply("three", usage=usage(500, 500)),
    )
    totals = UsageTotals(prices={"big": (2.5, 10), "small": (0.15, 0.60)})
    for llm in (big, small, small):
        llms.call(llm, "hi", callbacks=totals)
    assert totals.models == {
        "big": ModelUsage(1, 1_000_000, 0),
        "small": ModelUsage(2, 2_500, 1_500),
    }
    assert totals.cost("big") == pytest.approx(2.5)
    assert totals.cost("small") == pytest.approx((2_500 * 0.15 + 1_500 * 0.60) / 1e6)
    assert totals.cost() == pytest.approx(2.5 + (2_500 * 0.15 + 1_500 * 0.60) / 1e6)
    assert totals.summary().splitlines() == [
        "big: 1 call, 1,000,000 tokens in, 0 out, cost 2.5",
        "small: 2 calls, 2,500 tokens in, 1,500 out, cost 0.001275",
        "total cost: 2.501275",
    ]


@pytest.mark.timeout(60)
def test_a_model_without_a_price_has_no_cost_and_neither_has_the_total(openai_server, make_openai):
    openai_server.push(Reply("a", usage=usage(10, 10)), Reply("b", usage=usage(10, 10)))
    totals = UsageTotals(prices={"priced": (1, 1)})
    llms.call(make_openai(model="priced"), "hi", callbacks=totals)
    llms.call(make_openai(model="unpriced"), "hi", callbacks=totals)
    assert totals.cost("priced") == pytest.approx(20 / 1e6)
    assert totals.cost("unpriced") is None and totals.cost() is None
    assert "cost" not in totals.summary().splitlines()[1]


@pytest.mark.timeout(60)
def test_a_reply_without_usage_is_counted_as_unreported(openai_server, openai_llm):
    openai_server.push(Reply("no usage", usage=None), Reply("usage", usage=usage(3, 4)))
    totals = UsageTotals()
    llms.call(openai_llm, "hi", callbacks=totals)
    llms.call(openai_llm, "hi", streaming_func=lambda text: None, callbacks=totals)
    assert totals.models == {"loopback-model": ModelUsage(2, 3, 4, unreported=1)}
    assert "1 without usage, not counted" in totals.summary()
    # What those tokens cost is not known: no cost rather than a guess.
    assert UsageTotals({"loopback-model": (1, 1)}).cost() == 0
    priced = UsageTotals({"loopback-model": (1, 1)})
    priced.add("loopback-model", totals.models["loopback-model"])
    assert priced.cost() is None and "cost" not in priced.summary()


@pytest.mark.timeout(60)
def test_a_batch_of_concurrent_runs_is_summed_exactly(mode: Mode, openai_server, openai_llm):
    openai_server.push(*[Reply("Final Answer: ok", usage=usage(7, 3)) for _ in range(12)])
    executor = agents.Executor(agents.OneShotAgent(openai_llm, [tools.Calculator()]))
    totals = UsageTotals()
    mode.batch(executor, [{"input": f"q{i}"} for i in range(12)], callbacks=totals)
    assert totals.models == {"loopback-model": ModelUsage(12, 84, 36)}


def test_add_sums_totals_as_a_batch_job_does():
    totals = UsageTotals()
    totals.add("m", ModelUsage(1, 2, 3))
    totals.add("m", ModelUsage(2, 20, 30, unreported=1))
    assert totals.models == {"m": ModelUsage(3, 22, 33, 1)}


def test_no_call_heard_is_said_so():
    assert UsageTotals().summary() == "no model calls"
    assert UsageTotals().cost() == 0


def test_a_fake_models_reply_counts_under_its_run_name():
    totals = UsageTotals()
    llms.call(llms.FakeLLM([Message.assistant("x")]), "hi", callbacks=totals)
    assert totals.models == {"FakeLLM": ModelUsage(1, 0, 0, unreported=1)}


@pytest.mark.parametrize(
    "prices",
    [{"m": (1,)}, {"m": (-1, 2)}, {"m": (float("nan"), 1)}, {"m": ("1", 2)}, {3: (1, 1)}],
)
def test_prices_that_are_not_two_amounts_are_refused(prices):
    with pytest.raises(HandlerConfigError, match="two amounts"):
        UsageTotals(prices=prices)


def test_prices_that_are_no_mapping_are_refused():
    with pytest.raises(HandlerTypeError, match="prices must map model names"):
        UsageTotals(prices=[("m", (1, 1))])  # type: ignore[arg-type]


def test_replies_from_a_cache_alone_cost_nothing_even_without_a_price():
    cache = llms.InMemoryCache(cache_sampled=True)
    llm = llms.FakeLLM([Message.assistant("x")], cache=cache)
    llms.call(llm, "hi")  # paid, before the totals listen
    totals = UsageTotals()
    llms.call(llm, "hi", callbacks=totals)
    assert totals.models == {"FakeLLM": ModelUsage(cache_hits=1)}
    assert totals.cost() == 0
    assert totals.summary() == (
        "FakeLLM: 0 calls, 0 tokens in, 0 out, 1 reply from the cache (0 in, 0 out, not paid), "
        "cost 0"
    )
    totals.add("FakeLLM", ModelUsage(cache_hits=2, cached_input_tokens=5))
    assert totals.models["FakeLLM"] == ModelUsage(cache_hits=3, cached_input_tokens=5)
