"""The Eino seed article's worked example, run end to end: a ToolCallingAgent with the six
registered tools answers the Moutai net-profit question, and the conversation it sends the
model renders to the article's ChatML prompts, kept as Message and as AgenticMessage alike."""

import json

import pytest

from chainkit import agents, chains, tools
from chainkit.llms import FakeLLM
from chainkit.prompts import render_chat
from chainkit.schema import FunctionCall, Message, ToolCall, from_agentic, to_agentic
from tests.prompts.test_render_chat import MESSAGE_ROUND_1, MESSAGE_ROUND_2, system_prompt

SYSTEM_PROMPT = system_prompt("当需要外部信息时输出工具调用JSON，不要多余文字。")
QUESTION = "帮我查 2025 年贵州茅台的净利润"
calls: list[tuple[str, dict[str, object]]] = []


@tools.tool
def get_financial_report(stock: str, year: str) -> str:
    """查询上市公司财报

    Args:
        stock: 股票代码
        year: 年份
    """
    calls.append(("get_financial_report", {"stock": stock, "year": year}))
    return "2025年贵州茅台净利润685亿"


@tools.tool
def get_stock_price(stock: str) -> str:
    """查询股票实时价格"""
    raise AssertionError("not relevant to the question")


@tools.tool
def calculate_irr(cash_flows: list[float]) -> str:
    """内部收益率计算"""
    raise AssertionError("not relevant to the question")


@tools.tool
def search_announcement(stock: str, keyword: str) -> str:
    """检索上市公司公告"""
    raise AssertionError("not relevant to the question")


@tools.tool
def get_weather(city: str) -> str:
    """查询城市天气"""
    raise AssertionError("not relevant to the question")


@tools.tool
def search_food(city: str) -> str:
    """查询当地美食推荐"""
    raise AssertionError("not relevant to the question")


SIX_TOOLS = [
    get_financial_report,
    get_stock_price,
    calculate_irr,
    search_announcement,
    get_weather,
    search_food,
]


@pytest.mark.parametrize("kept_as", ["Message", "AgenticMessage"])
def test_moutai_net_profit_run_renders_the_article_prompts(kept_as):
    calls.clear()
    tool_call = ToolCall(
        "call_001", FunctionCall("get_financial_report", '{"stock":"600519","year":"2025"}')
    )
    llm = FakeLLM([Message.assistant("", [tool_call]), "2025年贵州茅台净利润为685亿元。"])
    agent = agents.ToolCallingAgent(llm, SIX_TOOLS, system_prompt=SYSTEM_PROMPT)
    answer = chains.run(agents.Executor(agent), QUESTION)

    assert answer == "2025年贵州茅台净利润为685亿元。"
    assert calls == [("get_financial_report", {"stock": "600519", "year": "2025"})]
    [schema_names] = {tuple(t.name for t in call.options["tools"]) for call in llm.calls}
    assert schema_names == tuple(t.name for t in SIX_TOOLS)  # no tool is filtered out

    first, second = (call.messages for call in llm.calls)
    if kept_as == "AgenticMessage":
        agentic_first, agentic_second = to_agentic(first), to_agentic(second)
        assert from_agentic(agentic_second) == second
        assert render_chat(agentic_first, template="chatml-eino") == MESSAGE_ROUND_1
        assert render_chat(agentic_second, template="chatml-eino") == MESSAGE_ROUND_2
    else:
        assert render_chat(first, template="chatml-eino") == MESSAGE_ROUND_1
        assert render_chat(second, template="chatml-eino") == MESSAGE_ROUND_2


def test_structured_tool_schema_for_the_report_tool():
    schema = get_financial_report.parameters
    assert schema["required"] == ["stock", "year"]
    assert schema["properties"]["stock"] == {"type": "string", "description": "股票代码"}
    assert (
        get_financial_report.call('{"stock":"600519","year":"2025"}') == "2025年贵州茅台净利润685亿"
    )
    with pytest.raises(tools.ToolError, match="year"):
        get_financial_report.call(json.dumps({"stock": "600519"}))
