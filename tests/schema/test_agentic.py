"""Tests for AgenticMessage and its conversions to and from Message."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit.schema import (
    FilePart,
    FunctionCall,
    ImagePart,
    Message,
    TextPart,
    TokenUsage,
    ToolCall,
)
from chainkit.schema.agentic import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    Reasoning,
    UserInputFile,
    UserInputImage,
    UserInputText,
)
from chainkit.schema.convert import (
    REASONING_SIGNATURE_KEY,
    ConversionError,
    from_agentic,
    to_agentic,
)
from chainkit.schema.message import ResponseMeta, Role

# Strategies for conversations of Messages in the forms both types express; shared with the
# chat-template tests.
ROLES: list[Role] = ["system", "user", "assistant", "tool"]
texts = st.text(max_size=12)
ids = st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=8)
names = st.none() | st.text(min_size=1, max_size=8)
extras = st.none() | st.dictionaries(
    st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=3
)
metas = st.none() | st.builds(
    ResponseMeta,
    st.none() | st.sampled_from(["stop", "tool_calls", "length", ""]),
    st.none() | st.builds(TokenUsage, *[st.integers(0, 10_000)] * 5),
)
tool_calls = st.builds(
    ToolCall,
    ids,
    st.builds(FunctionCall, st.text(min_size=1, max_size=10), texts),
    index=st.none() | st.integers(0, 5),
    extra=extras,
)
parts = st.one_of(
    st.builds(TextPart, texts),
    st.builds(ImagePart, url=st.just("https://example.com/a.png"), detail=st.none() | texts),
    st.builds(ImagePart, base64_data=texts, mime_type=st.just("image/jpeg")),
    st.builds(FilePart, base64_data=texts, file_id=st.none() | ids, filename=names),
    st.builds(FilePart, file_id=ids, filename=names),
)
# One TextPart alone is the same content as `content` and comes back in that plain form.
multipart = st.lists(parts, min_size=1, max_size=4).filter(
    lambda ps: len(ps) > 1 or not isinstance(ps[0], TextPart)
)


@st.composite
def messages(draw: st.DrawFn, text_only: bool = False) -> Message:
    role: Role = draw(st.sampled_from(ROLES))
    name, meta, extra = draw(names), draw(metas), draw(extras)
    if role in ("system", "user"):
        if text_only or draw(st.booleans()):
            return Message(role, draw(texts), name=name, response_meta=meta, extra=extra)
        return Message(role, parts=draw(multipart), name=name, response_meta=meta, extra=extra)
    if role == "assistant":
        signature = draw(st.none() | texts)
        if signature is not None:
            extra = {**(extra or {}), REASONING_SIGNATURE_KEY: signature}
        return Message(
            "assistant",
            draw(texts),
            tool_calls=draw(st.lists(tool_calls, max_size=3)),
            reasoning_content=draw(texts),
            name=name,
            response_meta=meta,
            extra=extra,
        )
    return Message(
        "tool",
        draw(texts),
        tool_call_id=draw(ids),
        tool_name=draw(names),
        name=name,
        response_meta=meta,
        extra=extra,
    )


conversations = st.lists(messages(), max_size=6)


@settings(deadline=None)
@given(conversations)
def test_messages_survive_a_round_trip_through_agentic(conversation):
    assert from_agentic(to_agentic(conversation)) == conversation


@settings(deadline=None)
@given(conversations)
def test_agentic_messages_made_from_messages_survive_the_reverse_round_trip(conversation):
    agentic = to_agentic(conversation)
    assert to_agentic(from_agentic(agentic)) == agentic


CALLS = [
    ToolCall("call_1", FunctionCall("get_weather", '{"city":"北京"}'), index=0),
    ToolCall("call_2", FunctionCall("search_food", '{"city":"上海"}'), index=1, extra={"k": 1}),
]


def test_assistant_blocks_are_reasoning_then_text_then_each_parallel_call():
    message = Message.assistant("Checking both.", CALLS, reasoning_content="Two cities.")
    [agentic] = to_agentic([message])
    assert agentic.blocks == [
        Reasoning("Two cities."),
        AssistantGenText("Checking both."),
        FunctionToolCall("call_1", "get_weather", '{"city":"北京"}', index=0),
        FunctionToolCall("call_2", "search_food", '{"city":"上海"}', index=1, extra={"k": 1}),
    ]
    assert agentic.tool_calls == agentic.blocks[2:]
    assert agentic.text == "Checking both."
    assert from_agentic([agentic]) == [message]


def test_tool_message_keeps_call_id_and_tool_name():
    message = Message.tool("2025年贵州茅台净利润685亿", "call_001", "get_financial_report")
    [agentic] = to_agentic([message])
    assert agentic == AgenticMessage.tool_result(
        "call_001", "get_financial_report", "2025年贵州茅台净利润685亿"
    )
    assert from_agentic([agentic]) == [message]


def test_multipart_user_content_maps_part_by_part():
    message = Message.user(
        [
            TextPart("What is in this picture?"),
            ImagePart(url="https://example.com/cat.png", detail="high"),
            ImagePart(base64_data="aGk=", mime_type="image/png"),
            FilePart(file_id="file-1", filename="report.pdf"),
        ],
        name="ada",
    )
    [agentic] = to_agentic([message])
    assert agentic.name == "ada"
    assert agentic.blocks == [
        UserInputText("What is in this picture?"),
        UserInputImage(url="https://example.com/cat.png", detail="high"),
        UserInputImage(base64_data="aGk=", mime_type="image/png"),
        UserInputFile(file_id="file-1", filename="report.pdf"),
    ]
    assert from_agentic([agentic]) == [message]


def test_name_response_meta_and_extra_are_carried_over():
    meta = ResponseMeta("stop", TokenUsage(10, 5, 15, reasoning_tokens=2))
    message = Message("assistant", "done", name="bot", response_meta=meta, extra={"id": "r1"})
    [agentic] = to_agentic([message])
    assert (agentic.name, agentic.response_meta, agentic.extra) == ("bot", meta, {"id": "r1"})
    assert from_agentic([agentic]) == [message]


def test_reasoning_signature_travels_in_message_extra():
    message = Message.assistant("42", reasoning_content="think")
    message.extra = {REASONING_SIGNATURE_KEY: "sig", "other": 1}
    [agentic] = to_agentic([message])
    assert agentic.blocks[0] == Reasoning("think", "sig")
    assert agentic.extra == {"other": 1}
    assert from_agentic([agentic]) == [message]


def test_system_text_becomes_user_input_and_either_text_kind_comes_back():
    assert to_agentic([Message.system("be brief")]) == [AgenticMessage.system("be brief")]
    eino_style = AgenticMessage("system", [AssistantGenText("be brief")])
    assert from_agentic([eino_style]) == [Message.system("be brief")]


def test_empty_messages_have_no_blocks():
    assert to_agentic([Message.user(""), Message.assistant()]) == [
        AgenticMessage("user"),
        AgenticMessage("assistant"),
    ]


def test_text_after_a_tool_call_starts_a_new_assistant_message():
    meta = ResponseMeta("tool_calls")
    agentic = AgenticMessage(
        "assistant",
        [
            AssistantGenText("First "),
            AssistantGenText("a."),
            FunctionToolCall("c1", "a", "{}"),
            Reasoning("then b"),
            AssistantGenText("Now b."),
            FunctionToolCall("c2", "b", "{}"),
        ],
        response_meta=meta,
        extra={"x": 1},
        name="bot",
    )
    first, second = from_agentic([agentic])
    assert first == Message(
        "assistant",
        "First a.",
        tool_calls=[ToolCall("c1", FunctionCall("a", "{}"))],
        name="bot",
        extra={"x": 1},
    )
    assert second == Message(
        "assistant",
        "Now b.",
        tool_calls=[ToolCall("c2", FunctionCall("b", "{}"))],
        reasoning_content="then b",
        name="bot",
        response_meta=meta,
        extra={"x": 1},
    )
    assert first.extra is not second.extra


def test_signed_reasoning_is_never_joined_with_other_reasoning():
    agentic = AgenticMessage(
        "assistant", [Reasoning("a", "s1"), Reasoning("b"), Reasoning("c"), Reasoning("d", "s2")]
    )
    pieces = from_agentic([agentic])
    assert [(m.reasoning_content, m.extra) for m in pieces] == [
        ("a", {REASONING_SIGNATURE_KEY: "s1"}),
        ("bc", None),
        ("d", {REASONING_SIGNATURE_KEY: "s2"}),
    ]
    assert [block for m in to_agentic(pieces) for block in m.blocks] == [
        Reasoning("a", "s1"),
        Reasoning("bc"),
        Reasoning("d", "s2"),
    ]


def test_tool_message_with_several_results_becomes_one_message_per_result():
    agentic = AgenticMessage(
        "tool",
        [FunctionToolResult("c1", "a", "one"), FunctionToolResult("c2", None, "two")],
        response_meta=ResponseMeta("stop"),
    )
    assert from_agentic([agentic]) == [
        Message.tool("one", "c1", "a"),
        Message("tool", "two", tool_call_id="c2", response_meta=ResponseMeta("stop")),
    ]


def test_several_user_text_blocks_become_parts():
    agentic = AgenticMessage.user([UserInputText("a"), AssistantGenText("b")])
    assert from_agentic([agentic]) == [Message.user([TextPart("a"), TextPart("b")])]


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (Message("tool", "result"), "tool_call_id"),
        (Message("user", "hi", tool_calls=[CALLS[0]]), "tool_calls"),
        (Message("user", "hi", reasoning_content="hm"), "reasoning_content"),
        (Message("assistant", "hi", tool_call_id="c1"), "tool_call_id"),
        (Message("tool", tool_call_id="c1", parts=[TextPart("y")]), "parts"),
        (Message("assistant", extra={REASONING_SIGNATURE_KEY: 3}), "extra"),
        (
            Message.assistant(tool_calls=[ToolCall("c", FunctionCall("f"), type="custom")]),
            "tool_calls",
        ),
    ],
)
def test_to_agentic_refuses_what_an_agentic_message_cannot_hold(message, field):
    with pytest.raises(ConversionError) as caught:
        to_agentic([message])
    assert (caught.value.role, caught.value.field) == (message.role, field)


@pytest.mark.parametrize(
    "agentic",
    [
        AgenticMessage("user", [FunctionToolCall("c", "f", "{}")]),
        AgenticMessage("assistant", [FunctionToolResult("c", "f", "x")]),
        AgenticMessage("tool", [UserInputText("x")]),
        AgenticMessage("tool", []),
        AgenticMessage("assistant", [], extra={REASONING_SIGNATURE_KEY: "s"}),
    ],
)
def test_from_agentic_refuses_what_a_message_cannot_hold(agentic):
    with pytest.raises(ConversionError) as caught:
        from_agentic([agentic])
    assert caught.value.role == agentic.role


def test_constructors_build_the_blocks_in_reply_order():
    call = FunctionToolCall("c1", "f", "{}")
    assert AgenticMessage.assistant("hi", [call], reasoning="hm").blocks == [
        Reasoning("hm"),
        AssistantGenText("hi"),
        call,
    ]
    assert AgenticMessage.user("q", name="ada") == AgenticMessage(
        "user", [UserInputText("q")], name="ada"
    )
