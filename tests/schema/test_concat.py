"""Tests for joining streamed chunks: concat_messages and concat_agentic_messages."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit.schema import FunctionCall, ImagePart, Message, TextPart, TokenUsage, ToolCall
from chainkit.schema.agentic import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    Reasoning,
    UserInputImage,
    UserInputText,
)
from chainkit.schema.concat import ConcatError, concat_agentic_messages, concat_messages
from chainkit.schema.convert import to_agentic
from chainkit.schema.message import ResponseMeta


def call_chunk(index, call_id="", name="", arguments="", call_type="function", extra=None):
    return Message.assistant(
        tool_calls=[ToolCall(call_id, FunctionCall(name, arguments), call_type, index, extra)]
    )


def agentic(*blocks, **fields):
    return AgenticMessage("assistant", list(blocks), **fields)


@st.composite
def pieces(draw: st.DrawFn, text: str) -> list[str]:
    """`text` cut at random places into non-empty pieces."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)))) if len(text) > 1 else [])
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if a < b]


texts = st.text(max_size=16)


@st.composite
def streams(draw: st.DrawFn) -> tuple[Message, list[Message]]:
    """An assistant reply and the chunks an OpenAI-style server could stream it as."""
    reasoning, content = draw(texts), draw(texts)
    specs = draw(st.lists(st.tuples(st.text(min_size=1, max_size=6), texts), max_size=3))
    usage = TokenUsage(*draw(st.lists(st.integers(0, 1000), min_size=5, max_size=5)))
    reply = Message.assistant(
        content,
        [
            ToolCall(f"call_{i}", FunctionCall(name, arguments), index=i)
            for i, (name, arguments) in enumerate(specs)
        ],
        reasoning_content=reasoning,
        response_meta=ResponseMeta("tool_calls" if specs else "stop", usage),
    )
    chunks = [Message("assistant", reasoning_content=p) for p in draw(pieces(reasoning))]
    chunks += [Message("assistant", p) for p in draw(pieces(content))]
    for i, (name, arguments) in enumerate(specs):
        first, *rest = draw(pieces(arguments)) or [""]
        chunks.append(call_chunk(i, f"call_{i}", name, first))
        # Servers differ in what a call's later chunks repeat: its index, its id, both or
        # neither.
        for piece in rest:
            index, call_id = draw(st.sampled_from([(i, ""), (None, f"call_{i}"), (i, f"call_{i}")]))
            if draw(st.booleans()):
                index, call_id = None, ""
            chunks.append(call_chunk(index, call_id, arguments=piece))
    # Running usage totals arrive before the final one; the maximum is the final one. Some
    # servers end with a chunk whose usage is all zeros, or that has no meta at all.
    smaller = TokenUsage(*(n // 2 for n in (usage.prompt_tokens, usage.completion_tokens)))
    chunks.insert(len(chunks) // 2, Message("assistant", response_meta=ResponseMeta("", smaller)))
    chunks.append(Message("assistant", response_meta=reply.response_meta))
    chunks += draw(
        st.sampled_from(
            [
                [],
                [Message("assistant", response_meta=ResponseMeta(None, TokenUsage()))],
                [Message("assistant", response_meta=ResponseMeta("", None))],
                [Message("assistant", "")],
            ]
        )
    )
    return reply, chunks


@settings(deadline=None)
@given(streams())
def test_streamed_chunks_add_up_to_the_reply(stream):
    reply, chunks = stream
    assert concat_messages(chunks) == reply


@settings(deadline=None)
@given(streams())
def test_agentic_chunks_add_up_to_the_same_reply(stream):
    reply, chunks = stream
    assert concat_agentic_messages(to_agentic(chunks)) == to_agentic([reply])[0]


def test_text_and_reasoning_are_concatenated():
    chunks = [
        Message("assistant", reasoning_content="Net "),
        Message("assistant", reasoning_content="profit?"),
        Message("assistant", "2025年贵州茅台"),
        Message("assistant", "净利润为685亿元。"),
    ]
    merged = concat_messages(chunks)
    assert (merged.reasoning_content, merged.content) == (
        "Net profit?",
        "2025年贵州茅台净利润为685亿元。",
    )


def test_parallel_calls_merge_by_index_and_come_out_in_index_order():
    chunks = [
        call_chunk(1, "call_b", "search_food", '{"city":'),
        call_chunk(0, "call_a", "get_weather", '{"city":'),
        call_chunk(1, arguments='"上海"}'),
        call_chunk(0, "call_a", arguments='"北京"}'),
    ]
    assert concat_messages(chunks).tool_calls == [
        ToolCall("call_a", FunctionCall("get_weather", '{"city":"北京"}'), index=0),
        ToolCall("call_b", FunctionCall("search_food", '{"city":"上海"}'), index=1),
    ]
    # Blocks keep the order in which each call first appeared.
    assert [c.call_id for c in concat_agentic_messages(to_agentic(chunks)).tool_calls] == [
        "call_b",
        "call_a",
    ]


def test_calls_without_index_merge_by_id_and_id_less_chunks_continue_the_latest():
    chunks = [
        call_chunk(None, "a", "f", "{"),
        call_chunk(None, arguments="}"),
        call_chunk(None, "b", "g", "[1"),
        call_chunk(None, "a", arguments=" "),
        call_chunk(None, arguments="!"),
    ]
    assert concat_messages(chunks).tool_calls == [
        ToolCall("a", FunctionCall("f", "{} !")),
        ToolCall("b", FunctionCall("g", "[1")),
    ]


@pytest.mark.parametrize(
    ("second", "field", "values"),
    [
        (call_chunk(0, "call_2"), "tool call id", ("call_1", "call_2")),
        (call_chunk(0, name="g"), "tool call name", ("f", "g")),
    ],
)
def test_a_call_whose_id_or_name_changes_mid_stream_raises(second, field, values):
    first = call_chunk(0, "call_1", "f", "{")
    with pytest.raises(ConcatError) as caught:
        concat_messages([first, second])
    assert (caught.value.field, caught.value.first, caught.value.second) == (field, *values)
    assert repr(values[0]) in str(caught.value) and repr(values[1]) in str(caught.value)


@pytest.mark.parametrize(
    ("chunks", "field"),
    [
        ([Message("assistant", "a"), Message("user", "b")], "role"),
        ([Message.tool("a", "call_1"), Message.tool("b", "call_2")], "tool_call_id"),
        ([Message.tool("a", "c", "f"), Message.tool("b", "c", "g")], "tool_name"),
        ([Message("user", "a", name="ann"), Message("user", "b", name="bob")], "name"),
    ],
)
def test_chunks_that_disagree_raise_naming_the_field(chunks, field):
    with pytest.raises(ConcatError) as caught:
        concat_messages(chunks)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("chunks", "field"),
    [
        ([agentic(), AgenticMessage.user("b")], "role"),
        ([agentic(name="ann"), agentic(name="bob")], "name"),
    ],
)
def test_agentic_chunks_that_disagree_raise_naming_the_field(chunks, field):
    with pytest.raises(ConcatError) as caught:
        concat_agentic_messages(chunks)
    assert caught.value.field == field


def test_an_empty_value_agrees_with_any_other():
    merged = concat_messages(
        [Message.tool("20", "call_1"), Message("tool", "25", tool_name="get"), Message("tool")]
    )
    assert merged == Message.tool("2025", "call_1", "get")


def test_finish_reason_is_the_last_non_empty_one_usage_the_maximum_and_model_the_first():
    metas = [
        ResponseMeta(None, TokenUsage(10, 1, 11)),
        ResponseMeta("tool_calls", TokenUsage(10, 5, 15, reasoning_tokens=3), "m-1", "r-1"),
        ResponseMeta("", TokenUsage(0, 0, 0, cached_tokens=4), "m-1", "r-1"),
        None,
    ]
    expected = ResponseMeta("tool_calls", TokenUsage(10, 5, 15, 3, 4), "m-1", "r-1")
    chunks = [Message("assistant", response_meta=meta) for meta in metas]
    assert concat_messages(chunks).response_meta == expected
    assert concat_agentic_messages(to_agentic(chunks)).response_meta == expected
    assert concat_messages([Message("assistant")]).response_meta is None


def test_extra_merges_strings_by_concatenation_and_dicts_key_by_key():
    chunks = [
        Message("assistant", extra={"text": "ab", "n": 1, "nested": {"s": "x"}}),
        Message("assistant"),
        Message("assistant", extra={"text": "c", "n": 2, "nested": {"s": "y", "k": 1}}),
    ]
    before = copy.deepcopy(chunks)
    merged = concat_messages(chunks)
    assert merged.extra == {"text": "abc", "n": 2, "nested": {"s": "xy", "k": 1}}
    assert chunks == before


def test_user_text_parts_continue_across_chunks_and_other_parts_stay():
    chunks = [
        Message.user([TextPart("Look "), ImagePart(url="u")]),
        Message.user([ImagePart(url="v"), TextPart("and ")]),
        Message.user([TextPart("this.")]),
    ]
    assert concat_messages(chunks).parts == [
        TextPart("Look "),
        ImagePart(url="u"),
        ImagePart(url="v"),
        TextPart("and this."),
    ]


def test_no_chunks_is_an_error():
    with pytest.raises(ConcatError):
        concat_messages([])
    with pytest.raises(ConcatError):
        concat_agentic_messages([])


def test_one_chunk_is_returned_as_it_is():
    message = Message.assistant("hi", [ToolCall("c", FunctionCall("f", "{}"), index=0)])
    assert concat_messages([message]) == message


def test_agentic_blocks_keep_text_and_calls_interleaved():
    chunks = [
        agentic(AssistantGenText("Let me ")),
        agentic(AssistantGenText("check.")),
        agentic(FunctionToolCall("c1", "f", "{", index=0)),
        agentic(FunctionToolCall("", "", "}", index=0)),
        agentic(AssistantGenText("And ")),
        agentic(FunctionToolCall("c2", "g", "{}", index=1)),
        agentic(AssistantGenText("done.")),
    ]
    assert concat_agentic_messages(chunks).blocks == [
        AssistantGenText("Let me check."),
        FunctionToolCall("c1", "f", "{}", index=0),
        AssistantGenText("And "),
        FunctionToolCall("c2", "g", "{}", index=1),
        AssistantGenText("done."),
    ]


def test_only_a_chunks_first_block_continues_the_previous_chunk():
    chunks = [
        agentic(Reasoning("a")),
        agentic(Reasoning("b"), AssistantGenText("c"), AssistantGenText("d")),
        agentic(AssistantGenText("e"), Reasoning("f")),
    ]
    assert concat_agentic_messages(chunks).blocks == [
        Reasoning("ab"),
        AssistantGenText("c"),
        AssistantGenText("de"),
        Reasoning("f"),
    ]


def test_a_signature_ends_a_reasoning_block():
    chunks = [
        agentic(Reasoning("th")),
        agentic(Reasoning("ink", "sig")),
        agentic(Reasoning("more")),
    ]
    assert concat_agentic_messages(chunks).blocks == [
        Reasoning("think", "sig"),
        Reasoning("more"),
    ]


def test_tool_results_continue_only_for_the_same_call():
    chunks = [
        AgenticMessage("tool", [FunctionToolResult("c1", None, "20")]),
        AgenticMessage("tool", [FunctionToolResult("c1", "get", "25")]),
        AgenticMessage("tool", [FunctionToolResult("c2", "get", "x")]),
    ]
    assert concat_agentic_messages(chunks).blocks == [
        FunctionToolResult("c1", "get", "2025"),
        FunctionToolResult("c2", "get", "x"),
    ]
    with pytest.raises(ConcatError) as caught:
        concat_agentic_messages([chunks[1], AgenticMessage.tool_result("c1", "other", "")])
    assert caught.value.field == "tool result name"


def test_images_are_never_merged():
    image = UserInputImage(url="u")
    chunks = [
        AgenticMessage.user([UserInputText("a"), image]),
        AgenticMessage.user([image, UserInputText("b")]),
    ]
    assert concat_agentic_messages(chunks).blocks == [
        UserInputText("a"),
        image,
        image,
        UserInputText("b"),
    ]


def test_agentic_chunks_are_not_changed():
    chunks = [agentic(AssistantGenText("a")), agentic(AssistantGenText("b"))]
    concat_agentic_messages(chunks)
    assert chunks == [agentic(AssistantGenText("a")), agentic(AssistantGenText("b"))]


def test_later_chunks_of_a_call_may_carry_only_its_id_or_nothing():
    chunks = [
        call_chunk(0, "call_a", "get_weather", '{"city":'),
        call_chunk(1, "call_b", "search_food", '{"city":'),
        call_chunk(None, "call_a", arguments='"北京"'),
        call_chunk(None, "call_b", arguments='"上海"'),
        call_chunk(None, arguments="}"),  # continues the call the previous chunk joined
        call_chunk(None, "call_a", arguments="}"),
    ]
    expected = [
        ToolCall("call_a", FunctionCall("get_weather", '{"city":"北京"}'), index=0),
        ToolCall("call_b", FunctionCall("search_food", '{"city":"上海"}'), index=1),
    ]
    assert concat_messages(chunks).tool_calls == expected
    merged = concat_agentic_messages(to_agentic(chunks))
    assert merged.blocks == [
        FunctionToolCall("call_a", "get_weather", '{"city":"北京"}', index=0),
        FunctionToolCall("call_b", "search_food", '{"city":"上海"}', index=1),
    ]


def test_a_call_that_gets_its_index_later_is_still_one_call():
    chunks = [call_chunk(None, "call_a", "f", "{"), call_chunk(0, "call_a", arguments="}")]
    assert concat_messages(chunks).tool_calls == [
        ToolCall("call_a", FunctionCall("f", "{}"), index=0)
    ]


def test_an_id_under_another_index_is_another_call():
    chunks = [call_chunk(0, "dup", "f", "{}"), call_chunk(1, "dup", "g", "[]")]
    assert [call.function.name for call in concat_messages(chunks).tool_calls] == ["f", "g"]


def test_a_chunk_that_names_no_type_agrees_with_the_calls_type():
    chunks = [
        call_chunk(0, "c", "grammar", "x", call_type="custom"),
        call_chunk(0, arguments="y"),  # from_dict gives a chunk without type "function"
    ]
    assert concat_messages(chunks).tool_calls[0].type == "custom"
    with pytest.raises(ConcatError) as caught:
        concat_messages([*chunks, call_chunk(0, call_type="mcp")])
    assert (caught.value.field, caught.value.first, caught.value.second) == (
        "tool call type",
        "custom",
        "mcp",
    )


def test_a_trailing_empty_chunk_erases_nothing():
    reported = ResponseMeta("stop", TokenUsage(12, 30, 42, reasoning_tokens=7))
    chunks = [
        Message("assistant", "hi", name="bot", extra={"k": "v", "n": 1}, response_meta=reported),
        Message(
            "assistant",
            extra={"k": None, "n": None},
            response_meta=ResponseMeta(None, TokenUsage()),
        ),
        Message("assistant", response_meta=ResponseMeta("", None)),
        Message("assistant", name=""),
    ]
    for merged in (concat_messages(chunks), concat_agentic_messages(to_agentic(chunks))):
        assert merged.response_meta == reported
        assert merged.extra == {"k": "v", "n": 1}
        assert merged.name == "bot"
    calls = [call_chunk(0, "c", "f", "{}", extra={"k": "v"}), call_chunk(0, extra={"k": None})]
    assert concat_messages(calls).tool_calls[0].extra == {"k": "v"}


def test_a_none_value_is_kept_when_nothing_came_before():
    merged = concat_messages([Message("assistant", extra={"k": None}), Message("assistant")])
    assert merged.extra == {"k": None}


def test_chunks_giving_both_content_and_parts_are_refused():
    with pytest.raises(ConcatError) as caught:
        concat_messages([Message.user("Look "), Message.user([ImagePart(url="u")])])
    assert caught.value.field == "content"


PIECE = "x" * 100
CALL_WITH_EXTRA = ToolCall("c", FunctionCall("f", "x"), index=0, extra={"k": PIECE})
# Each kind: a chunk adding PIECE to one str in extra, and where the merged str ends up.
EXTRA_STREAMS = {
    "extra": (
        lambda: Message("assistant", extra={"k": PIECE}),
        lambda merged, n: merged.extra == {"k": PIECE * n},
    ),
    "nested extra": (
        lambda: Message("assistant", extra={"d": {"k": PIECE}}),
        lambda merged, n: merged.extra == {"d": {"k": PIECE * n}},
    ),
    "tool call extra": (
        lambda: Message("assistant", tool_calls=[CALL_WITH_EXTRA]),
        lambda merged, n: merged.tool_calls[0].extra == {"k": PIECE * n},
    ),
    "agentic extra": (
        lambda: AgenticMessage("assistant", extra={"k": PIECE}),
        lambda merged, n: merged.extra == {"k": PIECE * n},
    ),
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", sorted(EXTRA_STREAMS))
def test_extra_strings_join_in_linear_time(kind):
    # 80,000 chunks of 100 characters: joined once, this takes milliseconds; joined chunk by
    # chunk it copies 320 GB and runs into the timeout.
    n = 80_000
    chunk, joined = EXTRA_STREAMS[kind]
    chunks: list[Any] = [chunk() for _ in range(n)]
    concat = concat_agentic_messages if kind == "agentic extra" else concat_messages
    assert joined(concat(chunks), n)
