import dataclasses
import json
from typing import Literal

import pytest

from chainkit import agents, chains, llms, tools
from chainkit._search.terms import tokens
from chainkit.llms import OfflineModel
from chainkit.llms.offline._question import find_expression
from chainkit.llms.offline.model import _choose
from chainkit.schema import Message, ToolInfo


def builtin_agent():
    model = OfflineModel()
    tool_list = [tools.Calculator(), tools.RandomNumber(seed=1), tools.CurrentTime()]
    return agents.Executor(agents.OneShotAgent(model, tool_list), return_intermediate_steps=True)


@pytest.mark.parametrize(
    ("question", "tool", "tool_input"),
    [
        ("告诉我一个随机数", "random_number", ""),
        ("what is 12*(3+4)?", "calculator", "12*(3+4)"),
        ("现在几点了?", "current_time", ""),
        ("give me a random number", "random_number", ""),
        ("计算 3.5 * 2", "calculator", "3.5 * 2"),
        ("what time is it now?", "current_time", ""),
        # The argument is what the question says besides asking for the tool.
        ("给我一个1到6之间的随机数", "random_number", "1到6"),
        ("give me a random number from 1 to 6", "random_number", "1 to 6"),
        ("a random number between -5 and 5 please", "random_number", "-5 and 5"),
        ("１－６的随机数", "random_number", "１－６"),  # a range, not a subtraction
        ("what time is it in Asia/Shanghai?", "current_time", "Asia/Shanghai"),
        ("what time is it in Tokyo?", "current_time", "Tokyo"),
        ("1-10+2 = ?", "calculator", "1-10+2"),
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
    assert json.loads(weather.tool_calls[0].function.arguments) == {"city": "北京"}
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
    assert _choose("nothing", [("a", "b")]) is None


def weather_tool():
    @tools.tool
    def get_weather(
        city: str, unit: Literal["celsius", "fahrenheit"] = "celsius", days: int = 1
    ) -> str:
        """Current weather (天气) for a city."""
        return f"{city}: {days} day(s), 21 {unit}"

    return get_weather


@pytest.mark.parametrize(
    ("question", "arguments"),
    [
        ("北京天气怎么样?", {"city": "北京"}),
        ("上海的天气", {"city": "上海"}),
        ("what's the weather like in Paris today?", {"city": "Paris"}),
        (
            "weather in New York in fahrenheit for 3 days",
            {"city": "New York", "unit": "fahrenheit", "days": 3},
        ),
        ("东京未来3天的天气", {"city": "东京", "days": 3}),
        # Nothing left to name a city: the argument is left out, and the tool says it is missing.
        ("what's the weather?", {}),
    ],
)
def test_native_arguments_are_read_from_the_question(question, arguments):
    reply = OfflineModel().generate([Message.user(question)], tools=[weather_tool().info()])
    [call] = reply.tool_calls
    assert json.loads(call.function.arguments) == arguments


def test_native_tool_call_runs_with_the_extracted_city():
    executor = agents.Executor(agents.ToolCallingAgent(OfflineModel(), [weather_tool()]))
    assert chains.run(executor, "北京天气怎么样?") == "北京: 1 day(s), 21 celsius"


@pytest.mark.parametrize(
    ("question", "tool_input"),
    [
        ("查一下北京的天气", "北京"),
        ("what is the weather in Berlin?", "Berlin"),
    ],
)
def test_mrkl_arguments_of_user_tools_are_read_from_the_question(question, tool_input):
    executor = agents.Executor(
        agents.OneShotAgent(OfflineModel(), [weather_tool(), tools.RandomNumber(seed=1)]),
        return_intermediate_steps=True,
    )
    [step] = chains.call(executor, {"input": question})["intermediate_steps"]
    assert (step.action.tool, step.action.tool_input) == ("get_weather", tool_input)


def test_a_tool_named_for_math_gets_the_bare_expression():
    class Evaluator(tools.Tool):
        name = "math"
        description = "Evaluates what it is given."

        def call(self, input: str) -> str:
            return f"<{input}>"

    executor = agents.Executor(agents.OneShotAgent(OfflineModel(), [Evaluator()]))
    assert chains.run(executor, "compute 2+3 quickly") == "<2+3>"


def offline_executor(tool_list: list[tools.Tool]) -> agents.Executor:
    model = OfflineModel()
    return agents.Executor(agents.OneShotAgent(model, tool_list), return_intermediate_steps=True)


def test_offline_streaming_chunks_join_to_the_reply():
    chunks: list[str] = []
    infos = [ToolInfo("weather", "weather forecast for a city")]
    messages = [Message.user("q"), Message.tool("sunny and warm all week long", "call_1")]
    reply = OfflineModel().generate(messages, tools=infos, streaming_func=chunks.append)
    assert reply.content == "sunny and warm all week long"
    assert len(chunks) > 1
    assert "".join(chunks) == reply.content


def test_offline_native_tool_puts_numbers_in_number_parameters_and_the_rest_in_text():
    parameters = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "q": {"type": "string"}},
        "required": ["n", "q"],
    }
    question = "weather forecast for Paris, 3 days ahead"
    infos = [ToolInfo("weather", "weather forecast", parameters)]
    reply = OfflineModel().generate([Message.user(question)], tools=infos)
    [call] = reply.tool_calls
    assert call.function.name == "weather"
    assert json.loads(call.function.arguments) == {"n": 3, "q": "Paris days ahead"}


def test_offline_gives_calculator_the_bare_expression_when_it_is_chosen():
    question = "what is 1-10+2"
    executor = offline_executor(
        [tools.Calculator(), tools.RandomNumber(seed=1), tools.CurrentTime()]
    )
    outputs = chains.call(executor, {"input": question})
    [step] = outputs["intermediate_steps"]
    # The expression counts as asking for math, which the calculator's description covers.
    assert step.action.tool == "calculator"
    assert step.action.tool_input == "1-10+2"


def test_offline_an_expression_does_not_outweigh_the_words_of_another_tool():
    question = "give me a random number between 1-10+2"
    executor = offline_executor(
        [tools.Calculator(), tools.RandomNumber(seed=1), tools.CurrentTime()]
    )
    outputs = chains.call(executor, {"input": question})
    [step] = outputs["intermediate_steps"]
    assert step.action.tool == "random_number"
    assert step.action.tool_input == "1-10+2"  # what the question says besides asking


def test_find_expression_prefers_the_longest_candidate():
    assert find_expression("1+2 and then 10*20+3") == "10*20+3"
    assert find_expression("10*20+3 and then 1+2") == "10*20+3"


def test_find_expression_needs_an_operator_after_the_sign():
    assert find_expression("-5") is None
    assert find_expression("-5+1") == "-5+1"


def test_find_expression_dates_need_a_four_digit_year():
    assert find_expression("2024-1-1") is None
    assert find_expression("24-1-1") == "24-1-1"


def test_choice_tie_goes_to_first_candidate():
    candidates = [("first", "weather report"), ("second", "weather report")]
    choice = _choose("weather", candidates)
    assert choice is not None and choice.name == "first"


def test_arithmetic_question_matches_math_description():
    candidates = [("alpha", "unrelated words"), ("beta", "does math")]
    choice = _choose("7*6", candidates)
    assert choice is not None and (choice.name, choice.expression) == ("beta", "7*6")


def test_choice_splits_tool_names_on_underscore_and_hyphen():
    for name in ("random_number", "random-number", "randomNumber"):
        choice = _choose("random", [("other", "nothing shared"), (name, "x")])
        assert choice is not None and choice.name == name


@dataclasses.dataclass
class _Forecast:
    city: str
    days: int


@pytest.mark.parametrize("strategy", ["json_schema", "prompted", None])
def test_a_typed_result_is_filled_from_the_question(mode, strategy):
    forecast = mode.generate_object(
        OfflineModel(), "Weather in Paris for 3 days", _Forecast, strategy=strategy
    )
    assert forecast.days == 3
    assert "Paris" in forecast.city


def test_a_typed_result_takes_the_expression_for_a_text_field():
    schema = {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    }
    assert llms.generate_object(OfflineModel(), "What is 2+3*4?", schema) == {"expression": "2+3*4"}


# An agent whose final answer is typed (Executor(output_type=...)) gets it from the offline
# model too: before, every answer was the tool's bare text, refused, until the step limit (and
# without one, forever).


@dataclasses.dataclass
class Sum:
    value: int


@dataclasses.dataclass
class Said:
    text: str


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", [agents.OneShotAgent, agents.ToolCallingAgent])
@pytest.mark.parametrize(("output_type", "expected"), [(Sum, Sum(4)), (Said, Said("4"))])
def test_a_typed_final_answer_is_filled_from_what_the_tool_returned(kind, output_type, expected):
    for limit in (5, None):
        agent = kind(OfflineModel(), tools.builtin_tools())
        executor = agents.Executor(agent, output_type=output_type, max_iterations=limit)
        assert chains.call(executor, {"input": "what is 2 + 2"})["output"] == expected


@pytest.mark.timeout(30)
def test_the_schema_asked_for_is_no_part_of_the_question_a_tool_is_chosen_by():
    agent = agents.OneShotAgent(OfflineModel(), tools.builtin_tools())
    executor = agents.Executor(agent, output_type=Said, return_intermediate_steps=True)
    outputs = chains.call(executor, {"input": "what time is it"})
    assert [step.action.tool for step in outputs["intermediate_steps"]] == ["current_time"]
    stamp = outputs["intermediate_steps"][0].observation.split()[0]  # 2026-01-01T10:00:00+00:00
    assert outputs["output"].text.startswith(stamp)


DOCUMENTS = """Documents:

[notes/cats.md@0]
Cats sleep for most of the day. A cat purrs when it is content.

[notes/tea.md@120] (source: notes/tea.md)
Green tea is steeped at 80 degrees.
Black tea wants boiling water!

[notes/城市.md@0]
北京是中国的首都。上海是最大的城市。

Question: """


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How hot should the water be for black tea?", "Black tea wants boiling water! "),
        ("Why does a cat purr?", "A cat purrs when it is content. [notes/cats.md@0]"),
        ("中国的首都是哪里?", "北京是中国的首都。 [notes/城市.md@0]"),
    ],
)
def test_offline_model_answers_from_labelled_documents_citing_them(question, answer):
    reply = llms.call(OfflineModel(), DOCUMENTS + question)

    assert reply.startswith(answer)
    assert reply.endswith("]")


def test_offline_model_answers_no_document_request_from_documents():
    # No match in the documents, or no Question line: the usual replies.
    assert "[" not in llms.call(OfflineModel(), DOCUMENTS + "zebra migration routes")
    assert "[" not in llms.call(OfflineModel(), "[a]\nCats sleep.\n\nWhy do cats sleep?")


def test_offline_model_answers_from_notes_that_end_with_their_citation():
    # What a map-reduce answer chain reduces: notes, each line citing its document.
    notes = (
        "Documents:\n\nYeast turns sugar into gas. [bread.md@0]\n\n"
        "The tortoise sleeps in straw. [pets.md@40]\nno citation here\n\n"
    )
    reply = llms.call(OfflineModel(), notes + "Question: Where does the tortoise sleep?")
    assert reply == "The tortoise sleeps in straw. [pets.md@40]"
