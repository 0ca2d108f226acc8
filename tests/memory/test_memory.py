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


def test_check_keys_finds_before_a_run_what_save_context_would_refuse():
    memory = ConversationBuffer()
    memory.check_keys(["input", "history"], ["text"])  # the memory's own key is not the input
    memory.check_keys(["input"], ["output", "intermediate_steps"])
    with pytest.raises(MemoryKeyError, match=r"which input key to remember among \['a', 'b'\]"):
        memory.check_keys(["a", "b", "history"], ["text"])
    with pytest.raises(MemoryKeyError, match=r"which output key to remember among \['x', 'y'\]"):
        memory.check_keys(["input"], ["x", "y"])
    chosen = ConversationBuffer(input_key="b", output_key="y")
    chosen.check_keys(["a", "b"], ["x", "y"])
    with pytest.raises(MemoryKeyError, match="output key 'y' not found; got \\['x'\\]"):
        chosen.check_keys(["b"], ["x"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory_key": ""}, "memory_key must be a non-empty str, got ''"),
        ({"memory_key": None}, "memory_key must be a non-empty str, got None"),
        ({"input_key": ""}, "input_key must be a non-empty str"),
        ({"output_key": ["a"]}, "output_key must be a non-empty str, got \\['a'\\]"),
        ({"human_prefix": None}, "human_prefix must be a str"),
    ],
)
def test_wrong_arguments_are_refused_when_built(kwargs, message):
    with pytest.raises(TypeError, match=message):
        ConversationBuffer(**kwargs)


def test_loaded_history_is_a_copy():
    memory = ConversationBuffer(return_messages=True)
    memory.save_context({"input": "q"}, {"output": "a"})
    loaded = memory.load_memory_variables({})["history"]
    loaded.clear()
    assert len(memory.messages) == 2
