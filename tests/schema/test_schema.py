import dataclasses
import json
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainkit.schema
import chainkit.schema.concat
import chainkit.schema.message
from chainkit.schema import (
    AgentAction,
    AgentFinish,
    AgentStep,
    FilePart,
    FunctionCall,
    ImagePart,
    Message,
    MessageFormatError,
    TextPart,
    TokenUsage,
    ToolCall,
    ToolInfo,
    from_agentic,
    to_agentic,
)
from chainkit.schema.errors import ConversionError
from chainkit.schema.message import ROLES, ContentPart, ResponseMeta


def full_message() -> Message:
    return Message(
        role="assistant",
        content="thinking done",
        tool_calls=[
            ToolCall("call_1", FunctionCall("get_weather", '{"city":"北京"}'), index=0),
            ToolCall(
                "call_2", FunctionCall("search_food", '{"city":"上海"}'), index=1, extra={"k": 1}
            ),
        ],
        name="bot",
        reasoning_content="the user wants two things",
        response_meta=ResponseMeta(
            "tool_calls", TokenUsage(10, 5, 15, reasoning_tokens=3), "gpt-4o-2024-08-06", "r-1"
        ),
        extra={"trace": "abc"},
    )


def test_constructors_set_role_and_fields():
    assert Message.system("s") == Message("system", "s")
    assert Message.user("u", name="ann") == Message("user", "u", name="ann")
    meta = ResponseMeta("stop", TokenUsage(1, 2, 3))
    assert Message.assistant("a", reasoning_content="r", response_meta=meta) == Message(
        "assistant", "a", reasoning_content="r", response_meta=meta
    )
    assert Message.user([TextPart("t")]) == Message("user", parts=[TextPart("t")])
    assert Message.user("u").role == "user"
    call = ToolCall("c1", FunctionCall("f", "{}"))
    assistant = Message.assistant("", [call])
    assert assistant.tool_calls == [call]
    tool = Message.tool("685亿", "call_001", "get_financial_report")
    assert (tool.role, tool.tool_call_id, tool.tool_name) == (
        "tool",
        "call_001",
        "get_financial_report",
    )


def test_types_are_slotted_dataclasses():
    for cls in (Message, ToolCall, FunctionCall, AgentAction, AgentFinish, AgentStep, ToolInfo):
        assert dataclasses.is_dataclass(cls)
        assert hasattr(cls, "__slots__"), cls


def test_tool_call_defaults_match_eino_shape():
    call = ToolCall("call_001", FunctionCall("get_financial_report", '{"stock":"600519"}'))
    assert call.type == "function" and call.index is None and call.extra is None


@pytest.mark.parametrize(
    "message",
    [
        full_message(),
        Message.system("你是金融助手"),
        Message.tool("2025年贵州茅台净利润685亿", "call_001", "get_financial_report"),
        Message.user(
            [TextPart("what is in this image?"), ImagePart(url="https://x/y.png", detail="low")]
        ),
        Message.user([ImagePart(base64_data="aGVsbG8=", mime_type="image/jpeg")]),
        Message.user(
            [FilePart(base64_data="JVBERi0=", mime_type="application/pdf", filename="a.pdf")]
        ),
        Message.user([FilePart(file_id="file-123")]),
        Message.user([FilePart(base64_data="AAAA")]),
    ],
)
def test_to_dict_from_dict_round_trip(message):
    assert Message.from_dict(message.to_dict()) == message


def test_to_dict_is_openai_wire_shape():
    data = full_message().to_dict()
    assert data["role"] == "assistant"
    assert data["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"北京"}'},
        "index": 0,
    }
    image = Message.user([TextPart("hi"), ImagePart(base64_data="QQ==", mime_type="image/png")])
    assert image.to_dict()["content"] == [
        {"type": "text", "text": "hi"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ=="}},
    ]


def test_request_shape_drops_what_servers_reject():
    data = full_message().to_dict(request=True)
    assert set(data) == {"role", "content", "tool_calls", "name"}
    assert all(set(call) == {"id", "type", "function"} for call in data["tool_calls"])
    tool = Message.tool("r", "call_1", "f").to_dict(request=True)
    assert tool == {"role": "tool", "content": "r", "tool_call_id": "call_1"}


def test_from_dict_rejects_unknown_role_and_part():
    with pytest.raises(MessageFormatError, match="'robot'"):
        Message.from_dict({"role": "robot", "content": "x"})
    with pytest.raises(MessageFormatError, match="'audio'"):
        Message.from_dict({"role": "user", "content": [{"type": "audio"}]})


def test_from_dict_accepts_null_content_from_servers():
    message = Message.from_dict(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "function": {"name": "f"}}],
        }
    )
    assert message.content == "" and message.tool_calls[0].function.arguments == ""


def test_tool_info_openai_shape():
    info = ToolInfo("calc", "math", {"type": "object", "properties": {"x": {"type": "string"}}})
    assert info.to_dict() == {
        "type": "function",
        "function": {
            "name": "calc",
            "description": "math",
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
        },
    }


def test_schema_imports_nothing_else_from_chainkit():
    # chainkit._errors holds ChainkitError, the root of every error, schema's included.
    code = (
        "import sys, chainkit.schema; "
        "bad = [m for m in sys.modules if m.startswith('chainkit.') "
        "and not m.startswith('chainkit.schema') and m != 'chainkit._errors']; "
        "print(bad); assert not bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_image_part_must_say_what_it_holds():
    with pytest.raises(MessageFormatError, match="either url or base64_data"):
        ImagePart()
    with pytest.raises(MessageFormatError, match="either url or base64_data"):
        ImagePart(url="u", base64_data="AAAA")
    with pytest.raises(MessageFormatError, match="needs its mime_type"):
        ImagePart(base64_data="AAAA")


# --- wrong shapes are refused when built, naming the field, what was expected and what came ---

# The schema's types and functions unchecked, to give wrong shapes on purpose.
untyped: Any = SimpleNamespace(
    **{**vars(chainkit.schema.concat), **vars(chainkit.schema.message), **vars(chainkit.schema)}
)


def _refused(build, field, *expected):
    with pytest.raises(MessageFormatError) as caught:
        build()
    error = caught.value
    assert isinstance(error, TypeError) and isinstance(error, ValueError)
    assert error.field == field, str(error)
    for text in expected:
        assert text in str(error), str(error)
    return error


@pytest.mark.parametrize(
    ("build", "field", "expected"),
    [
        (lambda: untyped.Message("robot", "x"), "role", ("'assistant'", "'robot'")),
        (lambda: untyped.Message("bot"), "role", ("'user'", "'bot'")),
        (lambda: untyped.Message(["user"]), "role", ("['user'] (list)",)),
        (lambda: untyped.Message("user", None), "content", ("a str", "None")),
        (lambda: untyped.Message("user", 5), "content", ("a str", "5 (int)")),
        (
            lambda: untyped.Message.user(None),
            "content",
            ("a str or a list of content parts", "None"),
        ),
        (lambda: untyped.Message.user(b"hi"), "content", ("b'hi' (bytes)",)),
        (lambda: untyped.Message.system(None), "content", ("a str",)),
        (lambda: untyped.Message.user("hi", name=5), "name", ("a str or None", "5 (int)")),
        (
            lambda: untyped.Message.assistant("a", reasoning_content=None),
            "reasoning_content",
            ("a str",),
        ),
        (
            lambda: untyped.Message.assistant("a", response_meta="stop"),
            "response_meta",
            ("a ResponseMeta or None",),
        ),
        (lambda: untyped.Message.assistant(7), "content", ("7 (int)",)),
        (lambda: untyped.Message.tool("r", None), "tool_call_id", ("a str", "None")),
        (lambda: untyped.Message.tool("r", "c", 3), "tool_name", ("a str or None", "3 (int)")),
        (lambda: untyped.Message("user", "x", name=1), "name", ("a str or None",)),
        (
            lambda: untyped.Message("assistant", reasoning_content=None),
            "reasoning_content",
            ("a str",),
        ),
        (
            lambda: untyped.Message("assistant", tool_calls=({"id": "c"},)),
            "tool_calls",
            ("a list",),
        ),
        (lambda: untyped.Message.assistant("", [{"id": "c"}]), "tool_calls[0]", ("a ToolCall",)),
        (lambda: untyped.Message("user", parts=["hi"]), "parts[0]", ("'hi' (str)",)),
        (
            lambda: untyped.Message("user", "lost", parts=[untyped.TextPart("t")]),
            "content",
            ("both",),
        ),
        (lambda: untyped.Message("user", response_meta={}), "response_meta", ("a ResponseMeta",)),
        (lambda: untyped.Message("user", extra=[("k", 1)]), "extra", ("a dict or None",)),
        (lambda: untyped.FunctionCall("f", {"city": "北京"}), "arguments", ("JSON text", "(dict)")),
        (lambda: untyped.FunctionCall(None), "name", ("a str",)),
        (lambda: untyped.ToolCall(5), "id", ("a str", "5 (int)")),
        (lambda: untyped.ToolCall("c", {"name": "f"}), "function", ("a FunctionCall",)),
        (lambda: untyped.ToolCall("c", index="0"), "index", ("an int or None", "'0' (str)")),
        (lambda: untyped.ToolCall("c", index=True), "index", ("True (bool)",)),
        (lambda: untyped.ToolCall("c", type=None), "type", ("a str",)),
        (lambda: untyped.ToolCall("c", extra="x"), "extra", ("a dict or None",)),
        (lambda: untyped.TokenUsage("10"), "prompt_tokens", ("an int", "'10' (str)")),
        (lambda: untyped.TokenUsage(1, 2, 3, cached_tokens=1.5), "cached_tokens", ("1.5 (float)",)),
        (lambda: untyped.ResponseMeta(finish_reason=1), "finish_reason", ("a str or None",)),
        (lambda: untyped.ResponseMeta(usage={"prompt_tokens": 1}), "usage", ("a TokenUsage",)),
        (lambda: untyped.ResponseMeta(model=1), "model", ("a str or None",)),
        (lambda: untyped.ResponseMeta(id=b"r"), "id", ("a str or None",)),
        (lambda: untyped.TextPart(None), "text", ("a str",)),
        (lambda: untyped.ImagePart(url=""), "url", ("a non-empty str",)),
        (lambda: untyped.ImagePart(url=5), "url", ("a str or None",)),
        (
            lambda: untyped.ImagePart(url="https://x/a.png", mime_type="image/png,x"),
            "mime_type",
            (),
        ),
        (
            lambda: untyped.ImagePart(url="data:image/png;base64,QQ==", mime_type="image/gif"),
            "mime_type",
            ("contradicts",),
        ),
        (lambda: untyped.FilePart(), "base64_data", ("needs base64_data or file_id",)),
        (
            lambda: untyped.FilePart(filename="a.pdf"),
            "base64_data",
            ("needs base64_data or file_id",),
        ),
        (lambda: untyped.FilePart(base64_data="QQ==", mime_type=""), "mime_type", ("media type",)),
        (lambda: untyped.FilePart(file_id=7), "file_id", ("a str or None",)),
        (lambda: untyped.AgentAction(None, "x"), "tool", ("a str",)),
        (lambda: untyped.AgentAction("t", {"q": 1}), "tool_input", ("a str", "(dict)")),
        (lambda: untyped.AgentAction("t", "x", log=None), "log", ("a str",)),
        (lambda: untyped.AgentAction("t", "x", tool_call_id=1), "tool_call_id", ("a str or None",)),
        (
            lambda: untyped.AgentAction("t", "x", message_log=["m"]),
            "message_log[0]",
            ("a Message",),
        ),
        (lambda: untyped.AgentFinish("done"), "return_values", ("a dict", "'done' (str)")),
        (lambda: untyped.AgentFinish({}, log=None), "log", ("a str",)),
        (lambda: untyped.AgentStep("action", "obs"), "action", ("an AgentAction",)),
        (
            lambda: untyped.AgentStep(untyped.AgentAction("t", "x"), 42),
            "observation",
            ("a str", "42 (int)"),
        ),
        (lambda: untyped.ToolInfo(None, "d"), "name", ("a str",)),
        (lambda: untyped.ToolInfo("n", "d", parameters="{}"), "parameters", ("a dict",)),
    ],
)
def test_constructors_refuse_wrong_shapes(build, field, expected):
    _refused(build, field, *expected)


@pytest.mark.parametrize(
    ("build", "field", "expected"),
    [
        (lambda: untyped.AgenticMessage("bot"), "role", ("'bot'",)),
        (lambda: untyped.AgenticMessage("user", "hi"), "blocks", ("a list of content blocks",)),
        (lambda: untyped.AgenticMessage("user", ["hi"]), "blocks[0]", ("a content block",)),
        (lambda: untyped.AgenticMessage.user(None), "content", ("a str or a list",)),
        (lambda: untyped.AgenticMessage.system(None), "text", ("a str",)),
        (lambda: untyped.AgenticMessage.assistant(None), "text", ("a str", "None")),
        (lambda: untyped.AgenticMessage.assistant("", reasoning=0), "reasoning", ("0 (int)",)),
        (lambda: untyped.AgenticMessage.assistant("", ["c"]), "blocks[0]", ("a content block",)),
        (lambda: untyped.AgenticMessage.tool_result("c", None, 5), "content", ("a str",)),
        (lambda: untyped.UserInputText(b"x"), "text", ("(bytes)",)),
        (lambda: untyped.AssistantGenText(None), "text", ("a str",)),
        (lambda: untyped.Reasoning("r", 5), "signature", ("a str or None",)),
        (lambda: untyped.FunctionToolCall("c", "f", {}), "arguments", ("JSON text",)),
        (lambda: untyped.FunctionToolCall("c", "f", "{}", index=False), "index", ("(bool)",)),
        (lambda: untyped.FunctionToolResult(None, "f", "x"), "call_id", ("a str",)),
        (lambda: untyped.UserInputImage(), "url", ("either url or base64_data",)),
        (lambda: untyped.UserInputImage(base64_data="QQ=="), "mime_type", ("needs its mime",)),
        (lambda: untyped.UserInputFile(filename="a.pdf"), "base64_data", ("needs base64_data",)),
    ],
)
def test_agentic_constructors_refuse_wrong_shapes(build, field, expected):
    _refused(build, field, *expected)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: untyped.to_agentic("hello"), "messages"),
        (lambda: untyped.to_agentic([{"role": "user", "content": "hi"}]), "messages[0]"),
        (lambda: untyped.from_agentic([Message.user("hi")]), "agentic[0]"),
        (lambda: untyped.concat_messages(iter([Message.user("hi")])), "chunks"),
        (lambda: untyped.concat_messages([Message.user("a"), "b"]), "chunks[1]"),
        (lambda: untyped.concat_agentic_messages([Message.user("a")]), "chunks[0]"),
    ],
)
def test_conversions_and_concat_refuse_what_is_not_a_message(call, field):
    _refused(call, field)


def test_a_huge_wrong_value_is_shown_short():
    error = _refused(lambda: untyped.Message("user", ["x" * 1_000_000]), "content")
    assert len(str(error)) < 200


def test_subclasses_of_the_expected_types_are_accepted():
    class Text(str):
        pass

    message = Message("user", Text("hi"), name=Text("ann"), extra=dict(a=1))
    assert message.content == "hi"
    assert AgentAction(Text("t"), Text("x")).tool == "t"


def test_a_data_url_given_as_url_is_kept_as_base64_data():
    assert ImagePart(url="data:image/png;base64,QQ==", detail="low") == ImagePart(
        base64_data="QQ==", mime_type="image/png", detail="low"
    )
    # Not base64, or with no media type: nothing to split, the URL stays a URL.
    assert ImagePart(url="data:text/plain,hi").url == "data:text/plain,hi"
    assert ImagePart(url="data:;base64,QQ==").url == "data:;base64,QQ=="


@pytest.mark.parametrize(
    ("data", "field", "expected"),
    [
        (["user", "hi"], None, ("Message.from_dict needs a dict",)),
        ({"role": "bot", "content": "x"}, "role", ("'bot'",)),
        ({"content": "x"}, "role", ("None",)),
        ({"role": "user", "content": 5}, "content", ("a str, a list of content parts or None",)),
        ({"role": "user", "content": {"text": "x"}}, "content", ("(dict)",)),
        ({"role": "user", "content": "x", "name": 5}, "name", ("a str or None",)),
        ({"role": "tool", "content": "x", "tool_call_id": 5}, "tool_call_id", ("5 (int)",)),
        ({"role": "assistant", "tool_calls": {"id": "c"}}, "tool_calls", ("a list",)),
        ({"role": "assistant", "tool_calls": ["c"]}, "tool_calls[0]", ("a dict", "'c' (str)")),
        ({"role": "assistant", "tool_calls": [{"function": "f"}]}, "function", ("a dict",)),
        (
            {"role": "assistant", "tool_calls": [{"function": {"arguments": {"a": 1}}}]},
            "arguments",
            ("JSON text", "(dict)"),
        ),
        ({"role": "assistant", "tool_calls": [{"index": "0"}]}, "index", ("an int or None",)),
        ({"role": "assistant", "tool_calls": [{"extra": []}]}, "extra", ("a dict",)),
        ({"role": "assistant", "reasoning_content": 1}, "reasoning_content", ("a str",)),
        ({"role": "user", "content": ["hi"]}, "content[0]", ("a dict",)),
        ({"role": "user", "content": [{"type": "text", "text": 5}]}, "text", ("a str",)),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": "https://x"}]},
            "content[0].image_url",
            ("a dict", "'https://x' (str)"),
        ),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
            "url",
            ("either url or base64_data",),
        ),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": ""}}]},
            "url",
            ("a non-empty str",),
        ),
        (
            {"role": "user", "content": [{"type": "file", "file": None}]},
            "content[0].file",
            ("a dict",),
        ),
        (
            {"role": "user", "content": [{"type": "file", "file": {"file_data": 5}}]},
            "base64_data",
            ("a str or None",),
        ),
        ({"role": "user", "content": [{"type": "audio"}]}, "content[0]", ("'audio'",)),
        ({"role": "user", "extra": "x"}, "extra", ("a dict",)),
        ({"role": "user", "response_meta": "stop"}, "response_meta", ("a dict",)),
        ({"role": "user", "response_meta": {"finish_reason": 1}}, "finish_reason", ()),
        ({"role": "user", "response_meta": {"usage": "x"}}, "usage", ("a dict",)),
        (
            {"role": "user", "response_meta": {"usage": {"prompt_tokens": "10"}}},
            "prompt_tokens",
            ("an int", "'10' (str)"),
        ),
        (
            {"role": "user", "response_meta": {"usage": {"total_tokens": True}}},
            "total_tokens",
            ("True (bool)",),
        ),
    ],
)
def test_from_dict_refuses_wrong_shapes(data, field, expected):
    _refused(lambda: untyped.Message.from_dict(data), field, *expected)


def test_from_dict_takes_what_servers_send_for_nothing():
    message = Message.from_dict(
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": None,
            "tool_calls": [
                {"id": None, "type": None, "function": {"name": "f", "arguments": None}}
            ],
            "refusal": None,  # keys chainkit does not know are ignored
            "response_meta": {"usage": {"prompt_tokens": 12.0, "completion_tokens": None}},
        }
    )
    assert message == Message.assistant(
        "",
        [ToolCall("", FunctionCall("f", ""))],
        response_meta=ResponseMeta(usage=TokenUsage(12, 0, 0)),
    )
    with pytest.raises(MessageFormatError, match=r"prompt_tokens must be an int, got 1\.5"):
        TokenUsage.from_dict({"prompt_tokens": 1.5})


# --- round trips: every Message survives to_dict/from_dict, and AgenticMessage where lossless ---

texts = st.text(max_size=8)
optional_texts = st.none() | texts
media_types = st.text(min_size=1, max_size=8).filter(lambda t: "," not in t)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
extras = st.none() | st.dictionaries(texts, json_values, max_size=3)
usages = st.builds(TokenUsage, *[st.integers(-5, 10**12)] * 5)
metas = st.none() | st.builds(
    ResponseMeta, optional_texts, st.none() | usages, optional_texts, optional_texts
)
tool_calls = st.builds(
    ToolCall,
    texts,
    st.builds(FunctionCall, texts, texts),
    texts,
    st.none() | st.integers(-3, 3),
    extras,
)
# Any URL text, data URLs among them: base64 ones become base64_data, others stay URLs.
image_urls = st.one_of(
    st.text(min_size=1, max_size=12),
    st.builds(lambda m, d: f"data:{m};base64,{d}", media_types | st.just(""), texts),
    st.builds(lambda m, d: f"data:{m},{d}", media_types, texts),
)
parts = st.one_of(
    st.builds(TextPart, texts),
    st.builds(ImagePart, url=image_urls, detail=optional_texts, mime_type=st.none()),
    st.builds(ImagePart, url=st.just("https://x/a.png"), mime_type=media_types),
    st.builds(ImagePart, base64_data=texts, mime_type=media_types, detail=optional_texts),
    st.builds(
        FilePart,
        base64_data=texts,
        file_id=optional_texts,
        filename=optional_texts,
        mime_type=st.none() | media_types,
    ),
    st.builds(FilePart, file_id=texts, filename=optional_texts, mime_type=st.none() | media_types),
)


@st.composite
def any_messages(draw: st.DrawFn) -> Message:
    """A Message with any combination of fields the type allows, in any role."""
    content, message_parts = "", []
    if draw(st.booleans()):
        content = draw(texts)
    else:
        message_parts = draw(st.lists(parts, max_size=4))
    return Message(
        draw(st.sampled_from(sorted(ROLES))),
        content,
        tool_calls=draw(st.lists(tool_calls, max_size=3)),
        tool_call_id=draw(optional_texts),
        tool_name=draw(optional_texts),
        name=draw(optional_texts),
        reasoning_content=draw(texts),
        parts=message_parts,
        response_meta=draw(metas),
        extra=draw(extras),
    )


@settings(deadline=None, max_examples=300)
@given(any_messages())
def test_every_message_survives_to_dict_and_from_dict(message):
    data = message.to_dict()
    assert Message.from_dict(data) == message
    assert Message.from_dict(json.loads(json.dumps(data))) == message  # through JSON text too
    Message.from_dict(message.to_dict(request=True))  # the request shape is valid input


@pytest.mark.parametrize(
    "message",
    [
        Message.user([FilePart(file_id="f", mime_type="application/pdf")]),
        Message.user([ImagePart(url="https://x/a.png", mime_type="image/png")]),
        Message.user([ImagePart(url="data:image/png;base64,QQ==")]),
        Message("assistant", extra={}),
        Message.assistant("", [ToolCall("c", FunctionCall("f", "{}"), extra={})]),
    ],
)
def test_the_round_trips_issue_14_found_broken(message):
    assert Message.from_dict(message.to_dict()) == message


@settings(deadline=None, max_examples=300)
@given(any_messages())
def test_every_message_an_agentic_message_can_hold_survives_the_conversion(message):
    try:
        agentic = to_agentic([message])
    except ConversionError as error:
        # Refused only for a field the role cannot hold in an AgenticMessage.
        assert error.role == message.role and error.field in {
            "tool_calls",
            "reasoning_content",
            "tool_call_id",
            "tool_name",
            "parts",
            "extra",
        }
        return
    expected = message
    if len(message.parts) == 1 and isinstance(message.parts[0], TextPart) and message.parts[0].text:
        # One TextPart is the same content as `content` and comes back in that plain form.
        expected = dataclasses.replace(message, content=message.parts[0].text, parts=[])
    assert from_agentic(agentic) == [expected]
    assert to_agentic(from_agentic(agentic)) == agentic


def test_from_dict_keeps_data_url_without_base64_as_url():
    message = Message.from_dict(
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "data:text/plain,hi"}}],
        }
    )
    assert message.parts == [ImagePart(url="data:text/plain,hi")]


def test_user_copies_the_parts_list():
    parts: list[ContentPart] = [TextPart("hello")]
    message = Message.user(parts)
    parts.append(TextPart("later"))
    parts[0] = TextPart("replaced")
    assert message.parts == [TextPart("hello")]
