import dataclasses
import subprocess
import sys

import pytest

from chainkit.schema import (
    AgentAction,
    AgentFinish,
    AgentStep,
    FilePart,
    FunctionCall,
    ImagePart,
    Message,
    MessageFormatError,
    ResponseMeta,
    TextPart,
    TokenUsage,
    ToolCall,
    ToolInfo,
)


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
        response_meta=ResponseMeta("tool_calls", TokenUsage(10, 5, 15, reasoning_tokens=3)),
        extra={"trace": "abc"},
    )


def test_constructors_set_role_and_fields():
    assert Message.system("s") == Message("system", "s")
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
