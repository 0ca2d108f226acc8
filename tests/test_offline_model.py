import json

import pytest

from chainkit import agents, chains, tools
from chainkit.llms import OfflineModel
from chainkit.llms._lexical import best_match, find_expression, tokens
from chainkit.schema import Message, ToolInfo


def builtin_agent():
    model = OfflineModel()
    tool_list = [tools.Calculator(), tools.RandomNumber(seed=1), tools.CurrentTime()]
    return agents.Executor(agents.OneShotAgent(model, tool_list), return_intermediate_steps=True)


@pytest.mark.parametrize(
    ("question", "tool", "tool_input"),
    [
        ("告诉我一个随机数", "random_number", "告诉我一个随机数"),
        ("what is 12*(3+4)?", "calculator", "12*(3+4)"),
        ("现在几点了?", "current_time", "现在几点了?"),
        ("give me a random number", "random_number", "give me a random number"),
        ("计算 3.5 * 2", "calculator", "3.5 * 2"),
        ("what time is it now?", "current_time", "what time is it now?"),
    ],
)
def test_offline_model_picks_the_right_tool(question, tool, tool_input):
    outputs = chains.call(builtin_agent(), {"input": question})
    [step] = outputs["intermediate_steps"]
    assert (step.action.tool, step.action.tool_input) == (tool, tool_input)
    assert outputs["output"] == step.observation


def test_offline_calculator_answer():
    agent = agents.OneShotAgent(OfflineModel(), [tools.Calculator()])
    assert chains.run(agents.Executor(agent), "what is 12*(3+4)?") == "84"
    assert chains.run(agents.Executor(agent), "sqrt(16)/2 等于多少") == "2"


def test_prompt_without_a_question_line_gets_no_tool():
    model = OfflineModel()
    prompt = "calculator: does math\nAction: one of [calculator]\nSolve 12*(3+4)"
    reply = model.generate([Message.user(prompt)])
    assert "Final Answer:" in reply.content and "Action:" not in reply.content


def test_the_library_model_prints_no_notice(capfd):
    # The notice that this is no LLM is the CLI's to give; library code prints nothing.
    chains.call(builtin_agent(), {"input": "告诉我一个随机数"})
    assert capfd.readouterr() == ("", "")


def test_no_matching_tool_gives_final_answer():
    outputs = chains.call(builtin_agent(), {"input": "xyzzy"})
    assert outputs["intermediate_steps"] == []
    assert "none matches" in outputs["output"]


def test_native_tool_calls():
    infos = [
        ToolInfo(
            "get_weather", "查询城市天气 weather", {"type": "object", "properties": {"city": {}}}
        ),
        ToolInfo(
            "get_financial_report", "查询上市公司财报 净利润", {"type": "object", "properties": {}}
        ),
    ]
    model = OfflineModel()
    reply = model.generate([Message.user("帮我查 2025 年贵州茅台的净利润")], tools=infos)
    [call] = reply.tool_calls
    assert (
        call.function.name == "get_financial_report" and json.loads(call.function.arguments) == {}
    )
    weather = model.generate([Message.user("北京天气怎么样")], tools=infos)
    assert json.loads(weather.tool_calls[0].function.arguments) == {"city": "北京天气怎么样"}
    answer = model.generate([Message.user("q"), Message.tool("晴", "c1")], tools=infos)
    assert answer.content == "晴" and not answer.tool_calls


def test_lexical_helpers():
    assert "随机" in tokens("告诉我一个随机数") and "机数" in tokens("告诉我一个随机数")
    assert "number" in tokens("Random Numbers")
    assert find_expression("what is 12*(3+4)?") == "12*(3+4)"
    assert find_expression("in 2025 there") is None
    assert find_expression("sqrt(2)/3 是多少") == "sqrt(2)/3"
    assert find_expression("2024-01-01 是星期几") is None
    assert find_expression("１２+３") == "12+3"
    assert find_expression("e.g. 5-3") == "5-3"
    assert best_match("nothing", [("a", "b")]) == (-1, 0.0)
