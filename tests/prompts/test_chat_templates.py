"""Real models' chat templates (tests/support/chat_templates.py says where they come from),
rendered by render_chat.

- "chatml" writes what Qwen2.5's own template writes, byte for byte, for any conversation;
  the one difference, Qwen's default system prompt, is added to the conversation first.
- Templates see what transformers gives them: `thinking` beside `reasoning_content`
  (gpt-oss), `documents`, and tool-call arguments that are the object transformers passes (to
  `tojson`, Qwen, Llama, gpt-oss, DeepSeek; printed as its dict) and the model's JSON text
  where they are added to a string with `+`.

The templates are those of Qwen2.5-7B-Instruct, Qwen3-0.6B, gpt-oss-120b, DeepSeek-V3.1 and
Llama-3.3-70B-Instruct, as llama.cpp keeps them.
"""

from __future__ import annotations

import json
from datetime import datetime

import jinja2.sandbox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit.prompts import PromptError, render_chat
from chainkit.schema import FunctionCall, Message, ToolCall, ToolInfo
from tests.support.chat_templates import chat_template

QWEN25 = chat_template("Qwen-Qwen2.5-7B-Instruct")
QWEN3 = chat_template("Qwen-Qwen3-0.6B")
GPT_OSS = chat_template("openai-gpt-oss-120b")
DEEPSEEK_V31 = chat_template("deepseek-ai-DeepSeek-V3.1")
LLAMA33 = chat_template("meta-llama-Llama-3.3-70B-Instruct")

QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
"""What Qwen2.5's template writes as the system prompt of a conversation that has none."""

WEATHER = ToolInfo(
    "get_weather",
    "Current weather for a city",
    {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "the city, e.g. 北京"}},
        "required": ["city"],
    },
)
TOOLS = [
    WEATHER,
    ToolInfo("search_food", "Local food", {"type": "object", "properties": {}}),
    ToolInfo("calculate", 'Evaluates "expressions"\nsafely', {"type": "object", "properties": {}}),
]


# --- chatml is Qwen2.5's ChatML --------------------------------------------------------------

texts = st.text(st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ["", "\n", "<|im_end|>", '"quoted"', "北京\t天气", "{}", "</tool_response>"]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
# What a model writes as arguments: a JSON object in any spacing, or anything else.
arguments = (
    st.tuples(
        st.dictionaries(texts, json_values, max_size=4),
        st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : ")]),
        st.booleans(),
    ).map(lambda spec: json.dumps(spec[0], separators=spec[1], ensure_ascii=spec[2]))
    | texts
    | st.just("[1, 2]")
)
tool_calls = st.builds(
    ToolCall,
    st.text("abc123", min_size=1, max_size=5),
    st.builds(FunctionCall, st.text(min_size=1, max_size=10), arguments),
)
chat_messages = st.one_of(
    st.builds(Message.system, texts),
    st.builds(Message.user, texts),
    st.builds(
        Message.assistant,
        texts,
        st.lists(tool_calls, max_size=3),
        reasoning_content=texts,
    ),
    st.builds(Message.tool, texts, st.text("abc", min_size=1, max_size=3)),
)


@settings(deadline=None, max_examples=300)
@given(
    st.lists(chat_messages, min_size=1, max_size=8),
    st.sampled_from([None, [], TOOLS[:1], TOOLS]),
    st.booleans(),
)
def test_chatml_writes_what_qwen25s_own_template_writes(conversation, tools, generation):
    qwen = render_chat(conversation, tools, QWEN25, add_generation_prompt=generation)
    if conversation[0].role != "system":
        conversation = [Message.system(QWEN_SYSTEM), *conversation]
    assert render_chat(conversation, tools, add_generation_prompt=generation) == qwen


def test_chatml_turns_end_on_the_content_line():
    conversation = [
        Message.system("你是金融助手"),
        Message.user("帮我查 2025 年贵州茅台的净利润"),
        Message.assistant(
            "好的。", [ToolCall("c1", FunctionCall("get_weather", '{"city":"北京"}'))]
        ),
        Message.tool("晴", "c1", "get_weather"),
        Message.tool("21°C", "c1", "get_weather"),
        Message.assistant("晴，21°C。"),
    ]
    expected = (
        "<|im_start|>system\n你是金融助手<|im_end|>\n"
        "<|im_start|>user\n帮我查 2025 年贵州茅台的净利润<|im_end|>\n"
        "<|im_start|>assistant\n好的。\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "北京"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n晴\n</tool_response>\n"
        "<tool_response>\n21°C\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n晴，21°C。<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render_chat(conversation) == expected == render_chat(conversation, None, QWEN25)
    # Without a system message chatml writes no system turn, where Qwen2.5 writes its own.
    assert render_chat(conversation[1:]) == expected.removeprefix(
        "<|im_start|>system\n你是金融助手<|im_end|>\n"
    )


def test_chatml_lists_tools_after_the_system_prompt_or_alone():
    listing = (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        '{"type": "function", "function": {"name": "get_weather", "description": '
        '"Current weather for a city", "parameters": {"type": "object", "properties": '
        '{"city": {"type": "string", "description": "the city, e.g. 北京"}}, '
        '"required": ["city"]}}}\n</tools>\n\n'
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    )
    user = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    with_system = [Message.system("Be brief."), Message.user("hi")]
    assert render_chat(with_system, [WEATHER]) == (
        f"<|im_start|>system\nBe brief.\n\n{listing}{user}"
    )
    assert render_chat(with_system[1:], [WEATHER]) == f"<|im_start|>system\n{listing}{user}"


# --- the variables transformers gives a template ---------------------------------------------

CALL = ToolCall("call_1", FunctionCall("get_weather", '{"city":"北京", "days": 2}'))
"""A tool call whose arguments are written as a model might: compact, then not."""


def weather_conversation(reasoning: str = "") -> list[Message]:
    return [
        Message.system("Be brief."),
        Message.user("北京天气?"),
        Message.assistant(tool_calls=[CALL], reasoning_content=reasoning),
        Message.tool("晴 21°C", "call_1", "get_weather"),
    ]


def test_gpt_oss_reads_the_reasoning_of_a_tool_call_as_thinking():
    prompt = render_chat(weather_conversation("需要查北京的天气。"), [WEATHER], GPT_OSS)
    today = {datetime.now().strftime("%Y-%m-%d") for _ in range(2)}
    assert any(
        prompt
        == (
            "<|start|>system<|message|>You are ChatGPT, a large language model trained by "
            "OpenAI.\nKnowledge cutoff: 2024-06\n"
            f"Current date: {date}\n\nReasoning: medium\n\n"
            "# Valid channels: analysis, commentary, final. Channel must be included for every "
            "message.\nCalls to these tools must go to the commentary channel: 'functions'."
            "<|end|><|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n"
            "## functions\n\nnamespace functions {\n\n// Current weather for a city\n"
            "type get_weather = (_: {\n// the city, e.g. 北京\ncity: string,\n}) => any;\n\n"
            "} // namespace functions<|end|>"
            "<|start|>user<|message|>北京天气?<|end|>"
            "<|start|>assistant<|channel|>analysis<|message|>需要查北京的天气。<|end|>"
            "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
            '{"city": "北京", "days": 2}<|call|>'
            "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
            '"晴 21°C"<|end|><|start|>assistant'
        )
        for date in today
    ), prompt


def test_gpt_oss_renders_the_final_turns_thinking_only_when_not_prompting():
    conversation = [
        Message.user("1+1?"),
        Message.assistant("2", reasoning_content="Simple sum."),
    ]
    trained = render_chat(conversation, None, GPT_OSS, add_generation_prompt=False)
    assert trained.endswith(
        "<|start|>user<|message|>1+1?<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>Simple sum.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>2<|return|>"
    )
    prompting = render_chat([*conversation, Message.user("2+2?")], None, GPT_OSS)
    assert "Simple sum." not in prompting
    assert prompting.endswith(
        "<|start|>assistant<|channel|>final<|message|>2<|end|>"
        "<|start|>user<|message|>2+2?<|end|><|start|>assistant"
    )


def test_deepseek_v31_writes_the_arguments_as_json_within_its_concatenations():
    second = ToolCall("call_2", FunctionCall("get_weather", '{"city": "上海"}'))
    conversation = [
        *weather_conversation(),
        Message.assistant("北京晴。"),
        Message.user("上海和北京呢?"),
        Message.assistant("查两个。", [CALL, second]),
    ]
    prompt = render_chat(conversation, None, DEEPSEEK_V31, bos_token="<｜begin▁of▁sentence｜>")
    assert prompt == (
        "<｜begin▁of▁sentence｜>Be brief.<｜User｜>北京天气?<｜Assistant｜><think></think>"
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        '{"city": "北京", "days": 2}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'
        "<｜tool▁output▁begin｜>晴 21°C<｜tool▁output▁end｜>北京晴。<｜end▁of▁sentence｜>"
        "<｜User｜>上海和北京呢?<｜Assistant｜><think></think>查两个。"
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        '{"city": "北京", "days": 2}<｜tool▁call▁end｜>'
        "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        '{"city": "上海"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'
    )
    thinking = render_chat(conversation[:2], None, DEEPSEEK_V31, thinking=True, bos_token="")
    assert thinking == "Be brief.<｜User｜>北京天气?<｜Assistant｜><think>"


def test_arguments_added_to_a_string_are_the_json_the_model_wrote():
    """As DeepSeek's own templates write them: `'<sep>' + tool['function']['arguments']`."""
    template = (
        "{% for message in messages %}{% for tool in message.tool_calls or [] %}"
        "{{ '[' + tool['function']['name'] + '|' + tool['function']['arguments'] + ']' }}"
        "{% endfor %}{% endfor %}"
    )
    prompt = render_chat(weather_conversation(), None, template)
    assert prompt == '[get_weather|{"city":"北京", "days": 2}]'


def test_qwen3_puts_the_reasoning_of_the_turn_in_progress_in_think_tags():
    conversation = [*weather_conversation("Need the weather."), Message.assistant("晴，21°C。")]
    conversation[-1].reasoning_content = "Answer from the tool."
    prompt = render_chat(conversation, None, QWEN3, add_generation_prompt=False)
    assert prompt == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n北京天气?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nNeed the weather.\n</think>\n\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "北京", "days": 2}}\n</tool_call>'
        "<|im_end|>\n<|im_start|>user\n<tool_response>\n晴 21°C\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\nAnswer from the tool.\n</think>\n\n晴，21°C。"
        "<|im_end|>\n"
    )
    no_thinking = render_chat(conversation[:2], None, QWEN3, enable_thinking=False)
    assert no_thinking.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_llama33_writes_the_arguments_object_and_the_tool_result():
    prompt = render_chat(weather_conversation(), [WEATHER], LLAMA33, bos_token="<|begin_of_text|>")
    tool_json = json.dumps(WEATHER.to_dict(), indent=4, ensure_ascii=False)
    assert prompt == (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "Environment: ipython\nCutting Knowledge Date: December 2023\n"
        "Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n"
        "Given the following functions, please respond with a JSON for a function call with "
        "its proper arguments that best answers the given prompt.\n\n"
        'Respond in the format {"name": function name, "parameters": dictionary of argument '
        "name and its value}.Do not use variables.\n\n"
        f"{tool_json}\n\n北京天气?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
        '{"name": "get_weather", "parameters": {"city": "北京", "days": 2}}<|eot_id|>'
        "<|start_header_id|>ipython<|end_header_id|>\n\n"
        '"晴 21°C"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'
    )


@pytest.mark.parametrize(
    "template",
    [QWEN25, QWEN3, GPT_OSS, DEEPSEEK_V31],
    ids=["qwen2.5", "qwen3", "gpt-oss", "deepseek"],
)
def test_real_templates_render_long_conversations_within_the_default_limits(template):
    conversation = [Message.system("Be brief.")]
    for turn in range(300):
        conversation += [
            Message.user(f"question {turn} " + "x" * 2000),
            Message.assistant(tool_calls=[CALL]),
            Message.tool("y" * 2000, "call_1", "get_weather"),
            Message.assistant(f"answer {turn}"),
        ]
    prompt = render_chat(conversation, TOOLS, template, bos_token="")
    assert "question 299 " in prompt
    assert "answer 299" in prompt


def test_a_template_sees_documents_none_unless_given():
    source = (
        "{{ documents is none }}"
        "{% for d in documents or [] %}|{{ d.title }}: {{ d.text }}{% endfor %}"
    )
    assert render_chat([Message.user("hi")], template=source) == "True"
    documents = [{"title": "a", "text": "one"}, {"title": "b", "text": "two"}]
    assert render_chat([Message.user("hi")], template=source, documents=documents) == (
        "False|a: one|b: two"
    )


def test_thinking_is_there_only_when_a_message_has_reasoning():
    source = (
        "{% for m in messages %}{{ 'thinking' in m }}:{{ m.thinking }}:"
        "{{ m.reasoning_content }};{% endfor %}"
    )
    conversation = [Message.user("q"), Message.assistant("a", reasoning_content="r")]
    assert render_chat(conversation, template=source, add_generation_prompt=False) == (
        "False::;True:r:r;"
    )


AS_TRANSFORMERS = (
    "{% for call in messages[0].tool_calls %}{% set a = call.function.arguments %}"
    "{{ a }}|{{ call.function.arguments }}|{{ a ~ '' }}|{{ a | string }}|{{ '%s' % a }}|"
    "{{ a | tojson }}|{{ a is mapping }}|{{ a is string }}|{{ a.city }}|{{ a | length }}|"
    "{{ a['days'][1] }}|{{ a | dictsort | first | first }}|{{ a | pprint }}\n{% endfor %}"
)
"""Every use of a tool call's arguments that transformers' dict supports."""


def test_json_object_arguments_are_what_transformers_passes_and_the_models_text_to_add():
    texts = ['{"city":  "北京", "days": [1,2]}', '{"city": "it\'s \\\\ \\"q\\"", "days": [0, 3]}']
    calls = [ToolCall(f"c{i}", FunctionCall("get_weather", text)) for i, text in enumerate(texts)]
    message = Message.assistant(tool_calls=calls)
    rendered = render_chat([message], template=AS_TRANSFORMERS, add_generation_prompt=False)
    # What transformers renders: its sandboxed environment, given the arguments as a dict.
    environment = jinja2.sandbox.ImmutableSandboxedEnvironment()
    environment.filters["tojson"] = lambda value: json.dumps(value, ensure_ascii=False)
    as_dicts = [{"function": {"arguments": json.loads(text)}} for text in texts]
    expected = environment.from_string(AS_TRANSFORMERS).render(messages=[{"tool_calls": as_dicts}])
    assert rendered == expected
    assert rendered.splitlines()[0].split("|")[:2] == ["{'city': '北京', 'days': [1, 2]}"] * 2
    # Added to a string, where transformers' dict raises TypeError: the model's own text.
    added = render_chat(
        [message],
        template="{% for c in messages[0].tool_calls %}"
        "{{ '<' + c.function.arguments + '>' }}{{ c.function.arguments + '' }}{% endfor %}",
        add_generation_prompt=False,
    )
    assert added == "".join(f"<{text}>{text}" for text in texts)
    # The conversation keeps the model's text.
    assert message.tool_calls[0].function.arguments == texts[0]


def test_a_real_template_refusing_a_conversation_is_a_prompt_error():
    two_calls = Message.assistant(tool_calls=[CALL, CALL])
    with pytest.raises(PromptError, match="This model only supports single tool-calls at once"):
        render_chat([Message.user("q"), two_calls], None, LLAMA33)
    with pytest.raises(PromptError, match="no previous assistant message with a tool call"):
        render_chat([Message.user("q"), Message.tool("r", "c")], None, GPT_OSS)
