"""Tests for render_chat: the Eino article's ChatML prompts, user templates and the sandbox."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit.prompts.chat_template import render_chat
from chainkit.prompts.errors import PromptError
from chainkit.schema import FunctionCall, ImagePart, Message, TextPart, ToolCall, ToolInfo
from chainkit.schema.agentic import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    UserInputText,
)
from chainkit.schema.convert import to_agentic
from chainkit.tools import Tool, tool
from tests.schema.test_agentic import conversations

REPO = Path(__file__).resolve().parents[2]

EINO = "chatml-eino"
"""The built-in template that reproduces the article's layout (content and `<|im_end|>` on
lines of their own); "chatml" is real ChatML, tested against Qwen2.5's template in
tests/prompts/test_chat_templates.py."""

# The prompts printed in the seed article (Eino: AgenticMessage vs Message), copied verbatim.
# The Message part's system prompt ends "输出工具调用JSON", the AgenticMessage part's
# "输出工具调用"; each part is checked against its own text.

MESSAGE_ROUND_1 = """\
<|im_start|>system
你是金融助手，可以调用下面的工具。
可用工具列表：
get_financial_report: 查询上市公司财报，参数 stock 股票代码，year 年份
get_stock_price: 查询股票实时价格，参数 stock 股票代码
calculate_irr: 内部收益率计算，参数 cash_flows 现金流数组
search_announcement: 检索上市公司公告，参数 stock 股票代码，keyword 关键词
get_weather: 查询城市天气，参数 city 城市名
search_food: 查询当地美食推荐，参数 city 城市名
当需要外部信息时输出工具调用JSON，不要多余文字。
<|im_end|>
<|im_start|>user
帮我查 2025 年贵州茅台的净利润
<|im_end|>
<|im_start|>assistant
"""

MESSAGE_ROUND_2 = """\
<|im_start|>system
你是金融助手，可以调用下面的工具。
可用工具列表：
get_financial_report: 查询上市公司财报，参数 stock 股票代码，year 年份
get_stock_price: 查询股票实时价格，参数 stock 股票代码
calculate_irr: 内部收益率计算，参数 cash_flows 现金流数组
search_announcement: 检索上市公司公告，参数 stock 股票代码，keyword 关键词
get_weather: 查询城市天气，参数 city 城市名
search_food: 查询当地美食推荐，参数 city 城市名
当需要外部信息时输出工具调用JSON，不要多余文字。
<|im_end|>
<|im_start|>user
帮我查 2025 年贵州茅台的净利润
<|im_end|>
<|im_start|>assistant
[{"id":"call_001","type":"function","function":{"name":"get_financial_report","arguments":"{\\"stock\\":\\"600519\\",\\"year\\":\\"2025\\"}"}}]
<|im_end|>
<|im_start|>tool
2025年贵州茅台净利润685亿
<|im_end|>
<|im_start|>assistant
"""

AGENTIC_ROUND_1 = """\
<|im_start|>system
你是金融助手，可以调用下面的工具。
可用工具列表：
get_financial_report: 查询上市公司财报，参数 stock 股票代码，year 年份
get_stock_price: 查询股票实时价格，参数 stock 股票代码
calculate_irr: 内部收益率计算，参数 cash_flows 现金流数组
search_announcement: 检索上市公司公告，参数 stock 股票代码，keyword 关键词
get_weather: 查询城市天气，参数 city 城市名
search_food: 查询当地美食推荐，参数 city 城市名
当需要外部信息时输出工具调用，不要多余文字。
<|im_end|>
<|im_start|>user
帮我查 2025 年贵州茅台的净利润
<|im_end|>
<|im_start|>assistant
"""

AGENTIC_ROUND_2 = """\
<|im_start|>system
你是金融助手，可以调用下面的工具。
可用工具列表：
get_financial_report: 查询上市公司财报，参数 stock 股票代码，year 年份
get_stock_price: 查询股票实时价格，参数 stock 股票代码
calculate_irr: 内部收益率计算，参数 cash_flows 现金流数组
search_announcement: 检索上市公司公告，参数 stock 股票代码，keyword 关键词
get_weather: 查询城市天气，参数 city 城市名
search_food: 查询当地美食推荐，参数 city 城市名
当需要外部信息时输出工具调用，不要多余文字。
<|im_end|>
<|im_start|>user
帮我查 2025 年贵州茅台的净利润
<|im_end|>
<|im_start|>assistant
[{"id":"call_001","type":"function","function":{"name":"get_financial_report","arguments":"{\\"stock\\":\\"600519\\",\\"year\\":\\"2025\\"}"}}]
<|im_end|>
<|im_start|>tool
2025年贵州茅台净利润685亿
<|im_end|>
<|im_start|>assistant
"""

# The six tools registered in the article; Eino writes each as "name: description" into the
# system prompt it is given.
TOOLS = [
    ToolInfo("get_financial_report", "查询上市公司财报，参数 stock 股票代码，year 年份"),
    ToolInfo("get_stock_price", "查询股票实时价格，参数 stock 股票代码"),
    ToolInfo("calculate_irr", "内部收益率计算，参数 cash_flows 现金流数组"),
    ToolInfo("search_announcement", "检索上市公司公告，参数 stock 股票代码，keyword 关键词"),
    ToolInfo("get_weather", "查询城市天气，参数 city 城市名"),
    ToolInfo("search_food", "查询当地美食推荐，参数 city 城市名"),
]


def system_prompt(closing: str) -> str:
    tool_lines = "".join(f"{tool.name}: {tool.description}\n" for tool in TOOLS)
    return f"你是金融助手，可以调用下面的工具。\n可用工具列表：\n{tool_lines}{closing}"


QUESTION = "帮我查 2025 年贵州茅台的净利润"
ARGUMENTS = '{"stock":"600519","year":"2025"}'
RESULT = "2025年贵州茅台净利润685亿"
ANSWER = "2025年贵州茅台净利润为685亿元。"


def eino_messages() -> list[Message]:
    return [
        Message.system(system_prompt("当需要外部信息时输出工具调用JSON，不要多余文字。")),
        Message.user(QUESTION),
        Message.assistant(
            tool_calls=[ToolCall("call_001", FunctionCall("get_financial_report", ARGUMENTS))]
        ),
        Message.tool(RESULT, "call_001", "get_financial_report"),
    ]


def eino_agentic_messages() -> list[AgenticMessage]:
    # As the article builds them: the system prompt in an AssistantGenText block, and a tool
    # result that carries only the call id.
    return [
        AgenticMessage(
            "system",
            [AssistantGenText(system_prompt("当需要外部信息时输出工具调用，不要多余文字。"))],
        ),
        AgenticMessage("user", [UserInputText(QUESTION)]),
        AgenticMessage(
            "assistant", [FunctionToolCall("call_001", "get_financial_report", ARGUMENTS)]
        ),
        AgenticMessage("tool", [FunctionToolResult("call_001", None, RESULT)]),
    ]


def test_message_conversation_renders_the_articles_prompts():
    conversation = eino_messages()
    assert render_chat(conversation[:2], template=EINO) == MESSAGE_ROUND_1
    assert render_chat(conversation, template=EINO) == MESSAGE_ROUND_2


def test_agentic_conversation_renders_the_articles_prompts():
    conversation = eino_agentic_messages()
    assert render_chat(conversation[:2], template=EINO) == AGENTIC_ROUND_1
    assert render_chat(conversation, template=EINO) == AGENTIC_ROUND_2


def test_the_same_conversation_renders_the_same_in_either_form():
    conversation = eino_messages()
    assert render_chat(to_agentic(conversation), template=EINO) == MESSAGE_ROUND_2
    mixed: list[Message | AgenticMessage] = [*conversation[:2], *to_agentic(conversation[2:])]
    assert render_chat(mixed, template=EINO) == MESSAGE_ROUND_2


def test_the_final_answer_closes_the_conversation():
    conversation = [*eino_messages(), Message.assistant(ANSWER)]
    expected = MESSAGE_ROUND_2 + f"{ANSWER}\n<|im_end|>\n"
    assert render_chat(conversation, add_generation_prompt=False, template=EINO) == expected
    agentic = [*to_agentic(conversation[:-1]), AgenticMessage.assistant(ANSWER)]
    assert render_chat(agentic, add_generation_prompt=False, template=EINO) == expected


def test_assistant_text_comes_before_its_tool_calls():
    calls = [
        ToolCall("c1", FunctionCall("get_weather", '{"city":"北京"}')),
        ToolCall("c2", FunctionCall("search_food", '{"city":"北京"}')),
    ]
    prompt = render_chat(
        [Message.assistant("查两样。", calls)], add_generation_prompt=False, template=EINO
    )
    assert prompt == (
        "<|im_start|>assistant\n查两样。\n"
        '[{"id":"c1","type":"function","function":{"name":"get_weather",'
        '"arguments":"{\\"city\\":\\"北京\\"}"}},'
        '{"id":"c2","type":"function","function":{"name":"search_food",'
        '"arguments":"{\\"city\\":\\"北京\\"}"}}]\n<|im_end|>\n'
    )


def test_tools_are_listed_at_the_end_of_the_system_message():
    tools: list[ToolInfo | dict[str, Any]] = [TOOLS[0], TOOLS[4].to_dict()]
    listing = "\n".join(
        [
            "<tools>",
            '{"type":"function","function":{"name":"get_financial_report","description":'
            '"查询上市公司财报，参数 stock 股票代码，year 年份","parameters":'
            '{"type":"object","properties":{}}}}',
            '{"type":"function","function":{"name":"get_weather","description":'
            '"查询城市天气，参数 city 城市名","parameters":{"type":"object","properties":{}}}}',
            "</tools>",
        ]
    )
    with_system = render_chat(
        [Message.system("你是金融助手。"), Message.user("hi")], tools, template=EINO
    )
    assert with_system.startswith(f"<|im_start|>system\n你是金融助手。\n\n{listing}\n<|im_end|>\n")
    without_system = render_chat([Message.user("hi")], tools, template=EINO)
    assert without_system == (
        f"<|im_start|>system\n{listing}\n<|im_end|>\n"
        "<|im_start|>user\nhi\n<|im_end|>\n<|im_start|>assistant\n"
    )
    assert render_chat([Message.user("hi")], [], template=EINO) == render_chat(
        [Message.user("hi")], template=EINO
    )


def test_tools_may_be_chainkit_tools():
    @tool
    def get_weather(city: str) -> str:
        """查询城市天气"""
        return "晴"

    class Lookup(Tool):
        name = "lookup"
        description = "looks a word up"

    conversation = [Message.user("hi")]
    prompt = render_chat(conversation, [get_weather, Lookup()], template=EINO)
    assert prompt == render_chat(
        conversation, [get_weather.info(), Lookup().info().to_dict()], template=EINO
    )
    assert (
        '{"type":"function","function":{"name":"get_weather","description":"查询城市天气",'
        '"parameters":{"type":"object","properties":{"city":{"type":"string"}},'
        '"required":["city"],"additionalProperties":false}}}'
    ) in prompt
    jinja = "{% for tool in tools %}{{ tool.function.name }};{% endfor %}"
    assert render_chat(conversation, [get_weather, Lookup()], jinja) == "get_weather;lookup;"


class _Informal:
    def info(self) -> dict[str, str]:
        return {"name": "x"}


@pytest.mark.parametrize(
    ("tool_like", "named"),
    [("get_weather", "got str$"), (42, "got int$"), (_Informal(), "got _Informal whose info")],
)
def test_other_tools_are_refused_naming_what_is_accepted(tool_like, named):
    with pytest.raises(TypeError, match="ToolInfo, OpenAI tool dicts or objects whose info") as e:
        render_chat([Message.user("hi")], [tool_like])
    assert re.search(named, str(e.value))


def test_text_parts_render_as_text_and_other_parts_are_refused():
    parts = Message.user([TextPart("看"), TextPart("图")])
    assert (
        render_chat([parts], add_generation_prompt=False, template=EINO)
        == "<|im_start|>user\n看图\n<|im_end|>\n"
    )
    with pytest.raises(PromptError, match="image_url"):
        render_chat(
            [Message.user([TextPart("看"), ImagePart(url="https://x/a.png")])], template=EINO
        )


# An HF-style template written with block tags on their own lines: it relies on trim_blocks
# and lstrip_blocks, HF's json filter, loop controls and raise_exception.
HF_TEMPLATE = """\
{% if messages[0]['role'] == 'system' %}
    {{ raise_exception('this model takes no system prompt') }}
{% endif %}
{% for message in messages %}
    {% if message['role'] == 'tool' %}
<tool_response name="{{ message.name }}">{{ message['content'] }}</tool_response>
    {% elif message.tool_calls %}
        {% for call in message.tool_calls %}
            {% if loop.index > 1 %}{% break %}{% endif %}
<tool_call>{{ call.function | tojson }}</tool_call>
        {% endfor %}
    {% else %}
{{ message.role }}: {{ message.content }}{% if message.reasoning_content %} \
(thought: {{ message.reasoning_content }}){% endif %}

    {% endif %}
{% endfor %}
{% if tools %}tools: {{ tools | map(attribute='function.name') | join(',') }}
{% endif %}
{% if add_generation_prompt %}assistant:{% endif %}"""


def test_a_huggingface_style_template_string_is_rendered_with_hf_settings():
    conversation = [
        Message.user(QUESTION),
        Message.assistant(
            tool_calls=[
                ToolCall("call_001", FunctionCall("get_financial_report", ARGUMENTS)),
                ToolCall("call_002", FunctionCall("get_stock_price", '{"stock":"600519"}')),
            ]
        ),
        Message.tool(RESULT, "call_001", "get_financial_report"),
        Message.assistant(ANSWER, reasoning_content="有数据了"),
    ]
    prompt = render_chat(conversation, TOOLS[:2], HF_TEMPLATE)
    assert prompt == (
        f"user: {QUESTION}\n"
        '<tool_call>{"name": "get_financial_report", "arguments": '
        '{"stock": "600519", "year": "2025"}}</tool_call>\n'
        f'<tool_response name="get_financial_report">{RESULT}</tool_response>\n'
        f"assistant: {ANSWER} (thought: 有数据了)\n"
        "tools: get_financial_report,get_stock_price\n"
        "assistant:"
    )
    agentic = to_agentic(conversation)
    assert render_chat(agentic, TOOLS[:2], HF_TEMPLATE) == prompt
    no_prompt = render_chat(conversation, None, HF_TEMPLATE, add_generation_prompt=False)
    assert no_prompt == prompt.removesuffix(
        "tools: get_financial_report,get_stock_price\nassistant:"
    )


def test_a_templates_raise_exception_becomes_a_prompt_error():
    with pytest.raises(PromptError, match="this model takes no system prompt"):
        render_chat([Message.system("s"), Message.user("u")], template=HF_TEMPLATE)


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__.os.system('touch {marker}') }}",
        "{{ raise_exception.__globals__['os'].system('touch {marker}') }}",
        "{% set _ = messages.append({'role': 'user'}) %}{{ messages | length }}",
        "{% set _ = messages[0].update(role='system') %}{{ messages[0].role }}",
        "{{ ''.__class__ }}",
        "{{ 'x{0.__class__.__mro__}'.format(1) }}",
        "{{ '{x.__class__}'.format_map({'x': 1}) }}",
    ],
)
def test_malicious_templates_raise_instead_of_running(template, tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(PromptError):
        render_chat([Message.user("hi")], template=template.replace("{marker}", str(marker)))
    assert not marker.exists()


def test_a_template_string_is_compiled_once(monkeypatch):
    from chainkit.prompts._sandbox.environment import chat_environment

    env = chat_environment()
    compiled: list[str] = []
    original = env.from_string

    def counting_from_string(source, *args, **kwargs):
        compiled.append(source)
        return original(source, *args, **kwargs)

    monkeypatch.setattr(env, "from_string", counting_from_string)
    template = "{% for m in messages %}[{{ m.content }}]{% endfor %}<!-- compiled once -->"
    for text in ("a", "b", "c"):
        assert (
            render_chat([Message.user(text)], template=template)
            == f"[{text}]<!-- compiled once -->"
        )
    assert compiled == [template]


def test_an_unknown_template_name_or_bad_syntax_is_a_prompt_error():
    with pytest.raises(PromptError, match="unknown chat template 'chatm1'"):
        render_chat([Message.user("hi")], template="chatm1")
    with pytest.raises(PromptError, match="invalid chat template at line 1"):
        render_chat([Message.user("hi")], template="{% for m in messages %}")


@settings(deadline=None, max_examples=50)
@given(conversations)
def test_messages_and_their_agentic_form_render_identically(conversation):
    assert outcome(conversation) == outcome(to_agentic(conversation))


def outcome(conversation):
    """The prompt, or the error, both ways a rendering can end."""
    try:
        return render_chat(conversation, TOOLS[:1])
    except PromptError as error:
        return f"PromptError: {error}"


def test_the_built_in_template_renders_without_loading_jinja2():
    code = (
        "import sys\n"
        "from chainkit.prompts.chat_template import render_chat\n"
        "from tests.prompts.test_render_chat import TOOLS, eino_messages\n"
        "assert render_chat(eino_messages(), TOOLS).startswith('<|im_start|>system')\n"
        "assert 'jinja2' not in sys.modules, 'chatml loaded jinja2'\n"
        "render_chat(eino_messages(), template='{{ messages | length }}')\n"
        "assert 'jinja2' in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


# The jinja2 template chatml was before it became plain Python, kept as the oracle that the
# Python version must match byte for byte.
CHATML_ORACLE = """\
{%- macro text(content) -%}
    {%- if content is string -%}
        {{- content -}}
    {%- else -%}
        {%- for part in content -%}
            {%- if part.type != 'text' -%}
                {{- raise_exception('chatml renders text only, not a ' ~ part.type ~ ' part') -}}
            {%- endif -%}
            {{- part.text -}}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro -%}
{%- macro turn(role, content) -%}
    {{- '<|im_start|>' ~ role ~ '\\n' ~ content ~ '\\n<|im_end|>\\n' -}}
{%- endmacro -%}
{%- set ns = namespace(tools='') -%}
{%- if tools -%}
    {%- set ns.tools = '<tools>\\n'
        ~ (tools | map('tojson', separators=(',', ':')) | join('\\n')) ~ '\\n</tools>' -%}
    {%- if not messages or messages[0].role != 'system' -%}
        {{- turn('system', ns.tools) -}}
    {%- endif -%}
{%- endif -%}
{%- for message in messages -%}
    {%- set content = text(message.content) -%}
    {%- if loop.first and message.role == 'system' and ns.tools -%}
        {%- set content = content ~ '\\n\\n' ~ ns.tools -%}
    {%- endif -%}
    {%- if message.role == 'assistant' and message.tool_calls -%}
        {%- set calls = message.tool_calls | tojson(separators=(',', ':')) -%}
        {%- set content = (content ~ '\\n' ~ calls) if content else calls -%}
    {%- endif -%}
    {{- turn(message.role, content) -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|im_start|>assistant\\n' -}}
{%- endif -%}
"""


@settings(deadline=None, max_examples=200)
@given(conversations, st.sampled_from([None, [], TOOLS[:1], TOOLS[:3]]), st.booleans())
def test_chatml_matches_its_jinja2_original_byte_for_byte(conversation, tools, generation):
    from chainkit.prompts._sandbox.environment import chat_environment

    oracle = chat_environment().from_string(CHATML_ORACLE)
    wire = [message.to_dict(request=True) for message in conversation]
    tool_dicts = None if tools is None else [tool.to_dict() for tool in tools]
    try:
        expected = oracle.render(messages=wire, tools=tool_dicts, add_generation_prompt=generation)
    except PromptError:
        with pytest.raises(PromptError, match="chatml renders text only"):
            render_chat(conversation, tools, add_generation_prompt=generation, template=EINO)
    else:
        assert (
            render_chat(conversation, tools, add_generation_prompt=generation, template=EINO)
            == expected
        )


# --- HuggingFace compatibility for user templates ----------------------------------------

ARGUMENTS_TEMPLATE = """\
{% for call in messages[0].tool_calls %}
{{ call.function.arguments is mapping }} {{ call.function.arguments | tojson }}
{% endfor %}"""


def test_tool_call_arguments_reach_user_templates_as_objects_when_they_are_json_objects():
    message = Message.assistant(
        tool_calls=[
            ToolCall(f"c{index}", FunctionCall("get_weather", arguments))
            for index, arguments in enumerate(
                ['{"city":"北京","days":[1,2]}', "[1, 2]", '"北京"', '{"city":', "", "{}"]
            )
        ]
    )
    prompt = render_chat([message], template=ARGUMENTS_TEMPLATE, add_generation_prompt=False)
    assert prompt.splitlines() == [
        'True {"city": "北京", "days": [1, 2]}',
        'False "[1, 2]"',
        'False "\\"北京\\""',
        'False "{\\"city\\":"',
        'False ""',
        "True {}",
    ]
    # The conversation itself keeps the model's text, and chatml still writes it as text.
    assert message.tool_calls[0].function.arguments == '{"city":"北京","days":[1,2]}'
    assert '"arguments":"{\\"city\\":\\"北京\\",\\"days\\":[1,2]}"' in render_chat(
        [message], template=EINO
    )


# Written to the convention of Qwen2.5's chat template (tools in the system turn, <tool_call>
# blocks carrying the arguments object, consecutive tool results grouped in one user turn),
# with Qwen3's `enable_thinking` switch on the generation prompt.
QWEN_STYLE_TEMPLATE = r"""
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- '\n\n# Tools\n\nYou may call the functions described inside <tools></tools>:\n<tools>' }}
    {%- for tool in tools %}
        {{- '\n' }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- '\n</tools>\n\nTo call one, reply with its name and arguments as a JSON object '
        'inside <tool_call></tool_call> tags.<|im_end|>\n' }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first)
        or (message.role == 'assistant' and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant' }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- set call = tool_call.function %}
            {{- '\n<tool_call>\n{"name": "' + call.name + '", "arguments": ' }}
            {{- call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' + message.content + '\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}
"""


def test_a_qwen_style_template_renders_tools_calls_results_and_template_variables():
    conversation = [
        Message.system("You are a finance assistant."),
        Message.user(QUESTION),
        Message.assistant(
            "Checking both.",
            [
                ToolCall("call_001", FunctionCall("get_financial_report", ARGUMENTS)),
                ToolCall("call_002", FunctionCall("get_stock_price", '{"stock":"600519"}')),
            ],
        ),
        Message.tool(RESULT, "call_001", "get_financial_report"),
        Message.tool("股价1500元", "call_002", "get_stock_price"),
    ]
    prompt = render_chat(conversation, TOOLS[:1], QWEN_STYLE_TEMPLATE, enable_thinking=False)
    assert prompt == (
        "<|im_start|>system\nYou are a finance assistant.\n\n# Tools\n\n"
        "You may call the functions described inside <tools></tools>:\n<tools>\n"
        '{"type": "function", "function": {"name": "get_financial_report", '
        '"description": "查询上市公司财报，参数 stock 股票代码，year 年份", '
        '"parameters": {"type": "object", "properties": {}}}}\n</tools>\n\n'
        "To call one, reply with its name and arguments as a JSON object inside "
        "<tool_call></tool_call> tags.<|im_end|>\n"
        f"<|im_start|>user\n{QUESTION}<|im_end|>\n"
        "<|im_start|>assistant\nChecking both.\n<tool_call>\n"
        '{"name": "get_financial_report", "arguments": {"stock": "600519", "year": "2025"}}'
        "\n</tool_call>\n<tool_call>\n"
        '{"name": "get_stock_price", "arguments": {"stock": "600519"}}\n</tool_call><|im_end|>\n'
        f"<|im_start|>user\n<tool_response>\n{RESULT}\n</tool_response>\n"
        "<tool_response>\n股价1500元\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    thinking = prompt.removesuffix("<think>\n\n</think>\n\n")
    assert render_chat(conversation, TOOLS[:1], QWEN_STYLE_TEMPLATE) == thinking
    assert render_chat(conversation, TOOLS[:1], QWEN_STYLE_TEMPLATE, enable_thinking=True) == (
        thinking
    )
    assert render_chat(conversation[:2], None, QWEN_STYLE_TEMPLATE) == (
        "<|im_start|>system\nYou are a finance assistant.<|im_end|>\n"
        f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
    )


def test_special_tokens_are_passed_as_template_variables():
    template = (
        "{{ bos_token }}{% for m in messages %}"
        "<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}"
    )
    conversation = [Message.user("hi"), Message.assistant("yo")]
    rendered = render_chat(
        conversation,
        template=template,
        add_generation_prompt=False,
        bos_token="<s>",
        eos_token="</s>",
    )
    assert rendered == "<s><|user|>hi</s><|assistant|>yo</s>"
    # Built-in templates take no variables and ignore them, as HF does for unused ones.
    assert render_chat(conversation, bos_token="<s>") == render_chat(conversation)


def test_the_generation_block_renders_its_body():
    template = """\
{% for message in messages %}
{% if message.role == 'assistant' %}
{% generation %}
{{ message.role }}: {{ message.content }}
{% endgeneration %}
{% else %}
{{ message.role }}: {{ message.content }}
{% endif %}
{% endfor %}"""
    conversation = [Message.user("hi"), Message.assistant("yo")]
    prompt = render_chat(conversation, template=template, add_generation_prompt=False)
    assert prompt == "user: hi\nassistant: yo\n"


# --- errors and bounds --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ 1/0 }}", "chat template failed at line 1: ZeroDivisionError: division by zero"),
        (
            "{% for m in messages %}\n{{ m.content + 1 }}\n{% endfor %}",
            "chat template failed at line 2: "
            'TypeError: can only concatenate str (not "int") to str',
        ),
        (
            "{{ range(10**9) | length }}",
            "chat template failed at line 1: OverflowError: Range too big. "
            "The sandbox blocks ranges larger than MAX_RANGE (100000).",
        ),
        (
            "{{ messages[0].content.split('') }}",
            "chat template failed at line 1: ValueError: empty separator",
        ),
        (
            "{{ 'a' * 10**8 }}",
            "template exceeded TemplateLimits.max_length=8000000: '*' would have 100000000 "
            "characters or items; pass prompts.TemplateLimits with a higher limit if the "
            "template is trusted",
        ),
        (
            "{{ 3 ** 10000000 }}",
            "template exceeded TemplateLimits.max_int_digits=10000: '**' would build a larger "
            "integer; pass prompts.TemplateLimits with a higher limit if the template is trusted",
        ),
        ("{{ raise_exception('no') }}", "chat template raised: no"),
        (
            "{{ cycler(1) | tojson }}",
            "chat template failed at line 1: "
            "TypeError: Object of type Cycler is not JSON serializable",
        ),
    ],
)
def test_errors_while_rendering_a_chat_template_become_prompt_errors(template, message):
    with pytest.raises(PromptError) as caught:
        render_chat([Message.user("hi")], template=template)
    assert str(caught.value) == message
