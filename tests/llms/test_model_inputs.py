"""What a newcomer hands a model instead of a list of messages (a text, a pair, a dict, one
Message) is refused before any call, with the chainkit way to write it, by every model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chainkit import llms, tools
from chainkit.llms.errors import ModelTypeError
from chainkit.schema import Message


def models() -> list[llms.Model]:
    return [llms.FakeLLM(["a"]), llms.OfflineModel(), llms.Fallbacks([llms.FakeLLM(["a"])])]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("hello", "got a str: write generate([Message.user('hello')]), or use llms.call"),
        (Message.user("hi"), "got one Message: write generate([message])"),
        (("user", "hi"), "got one (role, content) pair ('user', 'hi'): write Message.user('hi')"),
        ([("human", "hi")], "messages[0] is tuple ('human', 'hi'): write Message.user('hi')"),
        ([("ai", "yes")], "messages[0] is tuple ('ai', 'yes'): write Message.assistant('yes')"),
        (
            [Message.user("hi"), {"role": "user", "content": "hi"}],
            "messages[1] is dict {'role': 'user', 'content': 'hi'}: write Message.from_dict",
        ),
        (["hi"], "messages[0] is str 'hi': a text has no role: write Message.user(text)"),
        ({"role": "user", "content": "hi"}, "takes a list of messages (schema.Message), got dict"),
        (None, "takes a list of messages (schema.Message), got NoneType None"),
        (b"hi", "got bytes b'hi'"),
    ],
)
def test_what_is_no_list_of_messages_is_refused_before_the_call(given: Any, said: str) -> None:
    for model in models():
        with pytest.raises(ModelTypeError) as got:
            model.generate(given)
        assert said in str(got.value), type(model).__name__
        with pytest.raises(ModelTypeError, match="takes a list"):
            asyncio.run(model.agenerate(given))
    fake = llms.FakeLLM(["a"])
    with pytest.raises(ModelTypeError):
        fake.generate("hello")  # type: ignore[arg-type]  # the point
    assert fake.calls == []  # the model never saw 'h', 'e', 'l', 'l', 'o'


def test_a_tuple_of_messages_is_still_taken() -> None:
    fake = llms.FakeLLM(["a"])
    assert fake.generate((Message.user("hi"),)).content == "a"


def test_a_tool_offered_where_its_info_goes_is_refused_with_the_way() -> None:
    with pytest.raises(ModelTypeError, match=r"tools\[0\] is Calculator .*tool\.info\(\)"):
        llms.FakeLLM(["a"]).generate([Message.user("hi")], tools=[tools.Calculator()])  # type: ignore[list-item]
    with pytest.raises(ModelTypeError, match="tools must be a list of ToolInfo, got str"):
        llms.FakeLLM(["a"]).generate([Message.user("hi")], tools="calculator")  # type: ignore[arg-type]


def test_generate_object_refuses_messages_of_another_shape_before_the_call() -> None:
    fake = llms.FakeLLM(['{"value": 1}'])
    with pytest.raises(ModelTypeError, match=r"prompt must be .* or a list of Messages"):
        llms.generate_object(fake, [("user", "one")], int)  # type: ignore[list-item]
    assert fake.calls == []
