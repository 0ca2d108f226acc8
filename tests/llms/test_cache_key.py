"""The response cache's key: it changes with everything that changes the reply, and with
nothing else; it never holds the API key."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from chainkit import llms
from chainkit.llms._cache_key import cache_key, effective_options, key_material
from chainkit.schema import FunctionCall, Message, TokenUsage, ToolCall, ToolInfo
from chainkit.schema.message import ResponseMeta
from tests.support.openai_server import TEST_API_KEY

MODEL = llms.OpenAI(
    "gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key=TEST_API_KEY, temperature=0
)
MESSAGES = [Message.system("Be brief."), Message.user("What is 2+2?")]

_text = st.text(max_size=12)
_number = st.floats(min_value=0, max_value=2, allow_nan=False)
REPLY_CHANGING: dict[str, st.SearchStrategy[Any]] = {
    "temperature": _number,
    "top_p": st.floats(min_value=0, max_value=1, allow_nan=False),
    "max_tokens": st.integers(1, 10_000),
    "max_completion_tokens": st.integers(1, 10_000),
    "stop": st.lists(_text.filter(bool), min_size=1, max_size=3),
    "seed": st.integers(-(2**40), 2**40),
    "presence_penalty": _number,
    "frequency_penalty": _number,
    "logit_bias": st.dictionaries(st.sampled_from(["1", "2", "50256"]), _number, min_size=1),
    "logprobs": st.booleans(),
    "top_logprobs": st.integers(0, 20),
    "response_format": st.sampled_from(
        [{"type": "json_object"}, {"type": "text"}, {"type": "json_schema", "json_schema": {}}]
    ),
    "tool_choice": st.sampled_from(["auto", "none", "required", {"type": "function"}]),
    "parallel_tool_calls": st.booleans(),
    "reasoning_effort": st.sampled_from(["minimal", "low", "medium", "high"]),
    "user": _text,
    "extra_body": st.dictionaries(st.sampled_from(["top_k", "min_p"]), _number, min_size=1),
    "extra_query": st.dictionaries(st.sampled_from(["api-version"]), _text, min_size=1),
    "model": st.sampled_from(["gpt-4o", "gpt-4o-mini", "llama-3"]),
    "n": st.integers(1, 3),
}
IRRELEVANT: dict[str, st.SearchStrategy[Any]] = {
    "timeout": st.floats(min_value=0.1, max_value=100),
    "extra_headers": st.dictionaries(
        st.sampled_from(["Authorization", "X-Trace"]), _text, min_size=1
    ),
    "callbacks": st.just(None),
    "streaming_func": st.sampled_from([None, print, lambda chunk: None]),
}


def key(llm: llms.BaseModel, messages: list[Message], /, **options: Any) -> str:
    stop = options.pop("stop", None)
    return cache_key(llm, messages, None, effective_options(llm.default_options, options, stop))


def test_the_cache_key_reaches_every_reply_changing_option_and_no_other():
    from chainkit.llms.options import KNOWN_OPTIONS

    assert set(REPLY_CHANGING) | set(IRRELEVANT) == KNOWN_OPTIONS


@given(
    name=st.sampled_from(sorted(REPLY_CHANGING)),
    data=st.data(),
)
def test_keys_differ_when_a_reply_changing_option_differs(name: str, data: st.DataObject) -> None:
    first = data.draw(REPLY_CHANGING[name])
    second = data.draw(REPLY_CHANGING[name])
    assume(first != second)
    shared = data.draw(st.fixed_dictionaries({}, optional=REPLY_CHANGING))
    shared.pop(name, None)
    assert key(MODEL, MESSAGES, **shared, **{name: first}) != key(
        MODEL, MESSAGES, **shared, **{name: second}
    )


@given(shared=st.fixed_dictionaries({}, optional=REPLY_CHANGING), data=st.data())
def test_keys_are_equal_when_only_irrelevant_options_differ(
    shared: dict[str, Any], data: st.DataObject
) -> None:
    first = data.draw(st.fixed_dictionaries({}, optional=IRRELEVANT))
    second = data.draw(st.fixed_dictionaries({}, optional=IRRELEVANT))
    assert key(MODEL, MESSAGES, **shared, **first) == key(MODEL, MESSAGES, **shared, **second)


@given(
    options=st.fixed_dictionaries({}, optional={**REPLY_CHANGING, **IRRELEVANT}),
    text=st.text(max_size=40),
)
def test_the_key_material_never_holds_the_api_key(options: dict[str, Any], text: str) -> None:
    options.pop("stop", None)
    messages = [Message.user(text)]
    material = key_material(
        MODEL, messages, None, effective_options(MODEL.default_options, options, None)
    )
    assert TEST_API_KEY not in material
    assert TEST_API_KEY not in cache_key(MODEL, messages, None, options)


def test_a_default_option_counts_as_the_call_giving_it():
    plain = llms.OpenAI("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="k")
    # MODEL has temperature=0 as a default; a call of `plain` gives it itself.
    assert key(MODEL, MESSAGES) == key(plain, MESSAGES, temperature=0)
    # A call's None leaves the default in place.
    assert key(MODEL, MESSAGES, temperature=None) == key(MODEL, MESSAGES)
    assert key(MODEL, MESSAGES, temperature=1) != key(MODEL, MESSAGES)


@pytest.mark.parametrize(
    "other",
    [
        [Message.system("Be brief."), Message.user("What is 2+3?")],
        [Message.user("What is 2+2?")],
        [Message.system("Be brief."), Message.user("What is 2+2?", name="ann")],
        [
            Message.system("Be brief."),
            Message.user("What is 2+2?"),
            Message.assistant("", [ToolCall("c1", FunctionCall("add", '{"a": 2}'))]),
        ],
        [Message.system("Be brief."), Message.tool("4", "c1")],
    ],
)
def test_keys_differ_for_other_messages(other: list[Message]) -> None:
    assert key(MODEL, MESSAGES) != key(MODEL, other)


def test_fields_that_never_reach_the_wire_do_not_change_the_key():
    # A reply put back in the history keeps its metadata, which is never sent.
    meta = ResponseMeta("stop", TokenUsage(3, 1, 4), "gpt-4o-mini-2024", "chatcmpl-1")
    answered = Message.assistant("4", response_meta=meta)
    history = [*MESSAGES, answered]
    shown = Message.assistant("4")
    shown.extra = {"refusal": None, "logprobs": [1]}
    assert key(MODEL, history) == key(MODEL, [*MESSAGES, shown])


def test_keys_differ_for_other_tools_models_and_servers():
    tool = ToolInfo("add", "Adds two numbers.", {"type": "object", "properties": {}})
    other_tool = ToolInfo("add", "Adds numbers.", {"type": "object", "properties": {}})
    options = {"temperature": 0}
    with_tool = cache_key(MODEL, MESSAGES, [tool], options)
    assert with_tool != cache_key(MODEL, MESSAGES, None, options)
    assert with_tool != cache_key(MODEL, MESSAGES, [other_tool], options)
    elsewhere = llms.OpenAI("gpt-4o-mini", base_url="http://127.0.0.1:10/v1", api_key="k")
    renamed = llms.OpenAI("gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert key(elsewhere, MESSAGES, temperature=0) != key(MODEL, MESSAGES)
    assert key(renamed, MESSAGES, temperature=0) != key(MODEL, MESSAGES)
    other_key = llms.OpenAI(
        "gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="sk-other", temperature=0
    )
    assert key(other_key, MESSAGES) == key(MODEL, MESSAGES)
