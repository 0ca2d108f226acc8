import pytest

from chainkit.memory import ConversationBuffer, MemoryKeyError
from chainkit.schema import Memory, Message


def test_text_history():
    memory = ConversationBuffer()
    assert memory.load_memory_variables({}) == {"history": ""}
    memory.save_context({"input": "hi"}, {"text": "hello"})
    memory.save_context({"input": "how are you"}, {"text": "fine"})
    assert memory.load_memory_variables({})["history"] == (
        "Human: hi\nAI: hello\nHuman: how are you\nAI: fine"
    )


def test_message_history_and_prefixes():
    memory = ConversationBuffer(return_messages=True, memory_key="chat")
    memory.save_context({"input": "hi", "chat": []}, {"output": "hello"})
    assert memory.load_memory_variables({}) == {
        "chat": [Message.user("hi"), Message.assistant("hello")]
    }
    text = ConversationBuffer(human_prefix="用户", ai_prefix="助手")
    text.save_context({"q": "你好"}, {"a": "您好"})
    assert text.buffer_text() == "用户: 你好\n助手: 您好"


def test_ambiguous_keys_are_named():
    memory = ConversationBuffer()
    with pytest.raises(MemoryKeyError, match=r"\['a', 'b'\]"):
        memory.save_context({"a": 1, "b": 2}, {"text": "x"})
    with pytest.raises(MemoryKeyError, match="'missing'"):
        ConversationBuffer(input_key="missing").save_context({"a": 1}, {"text": "x"})
    chosen = ConversationBuffer(input_key="b", output_key="y")
    chosen.save_context({"a": 1, "b": 2}, {"x": 3, "y": 4})
    assert chosen.buffer_text() == "Human: 2\nAI: 4"


def test_intermediate_steps_are_not_the_answer():
    memory = ConversationBuffer()
    memory.save_context({"input": "q"}, {"output": "a", "intermediate_steps": []})
    assert memory.buffer_text() == "Human: q\nAI: a"


def test_clear_and_protocol():
    memory = ConversationBuffer()
    memory.save_context({"input": "q"}, {"output": "a"})
    memory.clear()
    assert memory.messages == []
    assert isinstance(memory, Memory)
