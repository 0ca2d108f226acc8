"""Call options: a value its option cannot take is refused before any request, naming the
option, what it takes and what was given."""

from __future__ import annotations

import math
from typing import Any

import pytest

from chainkit import ChainkitError, chains, llms
from chainkit.llms import FakeLLM
from chainkit.llms.errors import ModelConfigError, ModelTypeError, UnknownOptionError
from chainkit.prompts import PromptTemplate
from chainkit.schema import Message
from tests.support.openai_server import OpenAIServer

BAD_VALUES: list[tuple[str, Any, type[Exception], str]] = [
    (
        "temperature",
        "hot",
        ModelTypeError,
        "temperature must be a finite number, 0 or more, got str 'hot'",
    ),
    (
        "temperature",
        -0.5,
        ModelConfigError,
        "temperature must be a finite number, 0 or more, got -0.5",
    ),
    ("temperature", math.nan, ModelConfigError, "got nan"),
    ("temperature", True, ModelTypeError, "got bool True"),
    ("max_tokens", -5, ModelConfigError, "max_tokens must be a whole number, 1 or more, got -5"),
    ("max_tokens", 0, ModelConfigError, "max_tokens must be a whole number, 1 or more, got 0"),
    (
        "max_tokens",
        "100",
        ModelTypeError,
        "max_tokens must be a whole number, 1 or more, got str '100'",
    ),
    ("max_completion_tokens", 2.5, ModelTypeError, "got float 2.5"),
    ("top_p", 7, ModelConfigError, "top_p must be a number from 0 to 1, got 7"),
    ("top_p", -0.1, ModelConfigError, "top_p must be a number from 0 to 1, got -0.1"),
    ("seed", 1.5, ModelTypeError, "seed must be a whole number, got float 1.5"),
    ("seed", "7", ModelTypeError, "seed must be a whole number, got str '7'"),
    ("stop", 5, ModelTypeError, "stop must be a str or a list of str, got int 5"),
    ("stop", b"\n", ModelTypeError, "stop must be a str or a list of str, got bytes"),
    ("stop", ["\n", 3], ModelTypeError, "stop must be a list of str; it holds int 3"),
    ("stop", ["\n", ""], ModelConfigError, "stop holds an empty str"),
    ("timeout", -1, ModelConfigError, "timeout must be a finite number of seconds, more than"),
    ("timeout", "60", ModelTypeError, "timeout must be a number of seconds, got str"),
    ("presence_penalty", math.inf, ModelConfigError, "presence_penalty must be a finite number"),
    ("frequency_penalty", "0.5", ModelTypeError, "frequency_penalty must be a finite number"),
    ("logit_bias", [1, 2], ModelTypeError, "logit_bias must be a dict of token id to bias"),
    ("logit_bias", {"50256": "-100"}, ModelTypeError, "logit_bias['50256'] must be a finite"),
    ("logprobs", "yes", ModelTypeError, "logprobs must be True or False, got str 'yes'"),
    ("top_logprobs", -1, ModelConfigError, "top_logprobs must be a whole number, 0 or more"),
    ("response_format", "json", ModelTypeError, "response_format must be a dict, got str"),
    ("tool_choice", 1, ModelTypeError, "tool_choice must be 'auto', 'none', 'required' or a"),
    ("parallel_tool_calls", 1, ModelTypeError, "parallel_tool_calls must be True or False"),
    ("reasoning_effort", "", ModelConfigError, "reasoning_effort must not be empty"),
    ("user", 42, ModelTypeError, "user must be a str, got int 42"),
    ("model", " ", ModelConfigError, "model must not be empty"),
    ("n", 0, ModelConfigError, "n must be a whole number, 1 or more, got 0"),
    ("streaming_func", "print", ModelTypeError, "streaming_func must be a function"),
    ("extra_body", ["top_k", 5], ModelTypeError, "extra_body must be a dict, got list"),
    ("extra_headers", "X-A: b", ModelTypeError, "extra_headers must be a dict of header name"),
]
IDS = [f"{name}={value!r}" for name, value, _, _ in BAD_VALUES]


def llm_chain(llm: llms.Model) -> chains.LLMChain:
    return chains.LLMChain(PromptTemplate.from_template("{q}"), llm)


@pytest.mark.parametrize(("name", "value", "error", "message"), BAD_VALUES, ids=IDS)
def test_a_bad_value_is_refused_by_the_model_before_it_is_called(
    name: str, value: Any, error: type[Exception], message: str
) -> None:
    fake = FakeLLM(["a"])
    options: dict[str, Any] = {name: value}
    with pytest.raises(error) as raised:
        fake.generate([Message.user("hi")], **options)
    assert message in str(raised.value)
    assert isinstance(raised.value, ChainkitError)
    assert fake.calls == []


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"stop": ["\n"], "temperature": "hot"}, ModelTypeError, "temperature must be"),
        ({"temperature": 0, "stop": ["\n", ""]}, ModelConfigError, "stop holds an empty str"),
        ({"stop": ["\n"], "temprature": 0}, UnknownOptionError, "'temprature'"),
        ({"stop": 5, "temprature": 0}, UnknownOptionError, "'temprature'"),
    ],
)
def test_a_model_call_checks_its_stop_words_and_its_other_options_alike(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # A model call checks `stop` on its own (every agent's call gives it, most nothing else),
    # and the other options as before: an unknown name is still refused first.
    fake = FakeLLM(["a"])
    with pytest.raises(error, match=message):
        fake.generate([Message.user("hi")], **options)
    assert fake.calls == []


@pytest.mark.parametrize(("name", "value", "error", "message"), BAD_VALUES, ids=IDS)
def test_a_bad_value_is_refused_by_a_chain_before_it_starts(
    name: str, value: Any, error: type[Exception], message: str
) -> None:
    fake = FakeLLM(["a"])
    options: dict[str, Any] = {name: value}
    with pytest.raises(error, match=r"must|holds") as raised:
        chains.run(llm_chain(fake), "x", **options)
    assert message in str(raised.value)
    with pytest.raises(error):
        chains.batch(llm_chain(fake), [{"q": "x"}, {"q": "y"}], **options)
    assert fake.calls == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temperature": "hot"}, "temperature must be a finite number"),
        ({"max_tokens": -5}, "max_tokens must be a whole number, 1 or more, got -5"),
        ({"stop": 5}, "stop must be a str or a list of str"),
    ],
)
def test_a_bad_default_option_of_a_backend_is_refused_when_built(
    openai_server: OpenAIServer, options: dict[str, Any], message: str
) -> None:
    with pytest.raises((ModelTypeError, ModelConfigError), match=message):
        llms.OpenAI("m", base_url=openai_server.base_url, api_key="sk-test", **options)


def test_a_bad_value_sends_no_request_to_a_real_server(
    openai_server: OpenAIServer, make_openai: Any
) -> None:
    llm = make_openai()
    with pytest.raises(ModelConfigError, match="top_p must be a number from 0 to 1, got 7"):
        llms.call(llm, "hi", top_p=7)
    with pytest.raises(ModelTypeError, match=r"seed must be a whole number, got float 1\.5"):
        llm.generate([Message.user("hi")], seed=1.5)
    assert openai_server.chat_requests() == []
    openai_server.push("hello")
    assert llms.call(llm, "hi", top_p=0.5, seed=1) == "hello"
    [sent] = openai_server.chat_requests()
    assert (sent.body["top_p"], sent.body["seed"]) == (0.5, 1)


GOOD_VALUES: dict[str, Any] = {
    "stop": "\n",
    "temperature": 0,
    "max_tokens": 1,
    "max_completion_tokens": 10,
    "top_p": 1.0,
    "seed": -3,
    "presence_penalty": -1.5,
    "frequency_penalty": 2,
    "logit_bias": {"50256": -100},
    "logprobs": False,
    "top_logprobs": 0,
    "response_format": {"type": "json_object"},
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "reasoning_effort": "low",
    "user": "",
    "model": "gpt-4o-mini",
    "timeout": 0.5,
    "n": 1,
    "extra_body": {"top_k": 5},
    "extra_headers": {"X-Trace": "1"},
    "extra_query": {},
}


def test_good_values_and_none_reach_the_model_unchanged() -> None:
    fake = FakeLLM(["a", "b"])
    fake.generate([Message.user("hi")], **GOOD_VALUES)
    sent = fake.calls[0].options
    assert sent["stop"] == "\n"
    assert {k: sent[k] for k in GOOD_VALUES if k != "stop"} == {
        k: v for k, v in GOOD_VALUES.items() if k != "stop"
    }
    unset: dict[str, Any] = dict.fromkeys(GOOD_VALUES)
    fake.generate([Message.user("hi")], **unset)
    assert len(fake.calls) == 2
