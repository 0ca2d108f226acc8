import pytest

from chainkit import chains, prompts
from chainkit.chains.errors import ChainWiringError
from chainkit.llms import FakeLLM
from chainkit.memory import ConversationBuffer
from chainkit.memory.errors import MemoryKeyError
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


# A history kept as messages, given where text goes, never reaches the model as reprs.


def test_a_message_history_is_refused_by_an_f_string_prompt_chain_before_any_call():
    llm = FakeLLM(["hello"])
    with pytest.raises(ChainWiringError) as refused:
        chains.LLMChain(
            prompts.PromptTemplate.from_template("{history}\nHuman: {input}"),
            llm,
            memory=ConversationBuffer(return_messages=True),
        )
    assert "return_messages=False" in str(refused.value)
    assert "MessagesPlaceholder('history')" in str(refused.value)
    assert llm.calls == []


def test_the_same_history_in_a_chat_prompt_placeholder_reaches_the_model_as_messages():
    llm = FakeLLM(["hello", "again"])
    prompt = prompts.ChatPromptTemplate(
        [prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )
    chain = chains.LLMChain(prompt, llm, memory=ConversationBuffer(return_messages=True))
    chains.run(chain, "hi")
    chains.run(chain, "and now?")
    assert llm.calls[1].messages == [
        Message.user("hi"),
        Message.assistant("hello"),
        Message.user("and now?"),
    ]


@pytest.mark.parametrize(
    "history", [[Message.user("hi"), Message.assistant("hello")], Message.user("hi")]
)
def test_messages_given_to_a_text_template_are_refused_naming_the_variable(history):
    text = prompts.PromptTemplate.from_template("{history}\nHuman: {input}")
    with pytest.raises(prompts.PromptError) as refused:
        text.format(history=history, input="x")
    assert refused.value.variable == "history"
    assert str(refused.value).startswith("template variable 'history' holds messages, which")
    chat = prompts.ChatPromptTemplate([("system", "Earlier: {history}"), ("user", "{input}")])
    with pytest.raises(prompts.PromptError, match="'history' holds messages"):
        chat.format_messages(history=history, input="x")
    jinja = prompts.PromptTemplate("{{ history }}", template_format="jinja2")
    with pytest.raises(prompts.PromptError, match="holds messages"):
        jinja.format(history=history)


def test_a_jinja2_template_may_still_write_out_each_messages_text():
    looped = prompts.PromptTemplate(
        "{% for m in history %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
        template_format="jinja2",
    )
    history = [Message.user("hi"), Message.assistant("hello")]
    assert looped.format(history=history) == "user: hi\nassistant: hello\n"
    assert prompts.PromptTemplate.from_template("{n}").format(n=[1, 2]) == "[1, 2]"
