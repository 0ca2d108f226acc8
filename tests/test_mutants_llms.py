"""Tests that pin behaviour of chainkit/llms which a mutation run showed to be unchecked."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from chainkit import agents, chains, tools
from chainkit._lexical import tokens
from chainkit.callbacks import Handler
from chainkit.llms import FakeLLM, OfflineModel
from chainkit.llms._question import find_expression
from chainkit.llms.fake import FakeLLMExhaustedError
from chainkit.llms.offline import _choose
from chainkit.schema import Message, ToolInfo


class Recorder(Handler):
    def __init__(self) -> None:
        self.starts: list[dict[str, Any]] = []
        self.errors: list[BaseException] = []

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        self.starts.append(dict(options))

    def handle_llm_error(self, error: BaseException) -> None:
        self.errors.append(error)


class BrokenStart(Handler):
    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        raise RuntimeError("handler bug")


# --- llms/model.py -------------------------------------------------------------------------


def test_failed_sync_call_fires_llm_error():
    recorder = Recorder()
    with pytest.raises(FakeLLMExhaustedError) as raised:
        FakeLLM([]).generate([Message.user("hi")], callbacks=recorder)
    assert recorder.errors == [raised.value]


def test_raw_handler_raising_in_llm_start_does_not_break_the_call():
    reply = FakeLLM(["ok"]).generate([Message.user("hi")], callbacks=BrokenStart())
    assert reply.content == "ok"


def test_llm_start_options_show_stop_as_list_and_tools_by_name():
    recorder = Recorder()
    infos = [ToolInfo("alpha", "first"), ToolInfo("beta", "second")]
    FakeLLM(["ok"]).generate(
        [Message.user("hi")], stop=("\nObservation:", "END"), tools=infos, callbacks=recorder
    )
    [options] = recorder.starts
    assert options["stop"] == ["\nObservation:", "END"]
    assert type(options["stop"]) is list
    assert options["tools"] == ["alpha", "beta"]


# --- llms/fake.py --------------------------------------------------------------------------


def test_fake_llm_records_a_copy_of_the_messages():
    fake = FakeLLM(["ok"])
    messages = [Message.user("first")]
    fake.generate(messages)
    messages.append(Message.user("added later"))
    messages[0] = Message.user("replaced")
    assert fake.calls[0].messages == [Message.user("first")]


# --- llms/offline.py -----------------------------------------------------------------------


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


# --- _lexical.py, llms/_question.py, the offline model's choice ------------------------


def test_tokens_stem_plural_s_but_not_double_s():
    assert tokens("class") == {"class": 1.0}
    assert tokens("glass") == {"glass": 1.0}
    assert tokens("numbers") == {"number": 1.0}


def test_tokens_drop_stop_words():
    assert tokens("what the weather") == {"weather": 1.0}


def test_tokens_cjk_stop_chars_are_not_single_tokens_but_bigrams_stay():
    assert tokens("我的猫") == {"我的": 1.0, "的猫": 1.0, "猫": 0.25}


def test_tokens_cjk_extension_a_is_cjk():
    # As CJK it forms a bigram with its neighbour; as a non-CJK char it would be dropped.
    assert tokens("㐀猫") == {"㐀": 0.25, "猫": 0.25, "㐀猫": 1.0}


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


def test_plurals_in_ss_stem_to_their_singular() -> None:
    from chainkit._lexical import tokens as words

    assert "class" in words("classes") and "class" in words("class")
