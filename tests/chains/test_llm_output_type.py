"""LLMChain(output_type=...) and LLMChain(output_parser=Parser): typed values through
generate_object, parsers re-asked through generate_parsed, over real HTTP, sync and async."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

import pytest

from chainkit import chains, llms, parsers, prompts
from chainkit.chains.errors import ChainTypeError, ChainWiringError, OutputNotStringError
from chainkit.llms.openai.chat import OpenAI
from tests.support.modes import Mode
from tests.support.openai_server import OpenAIServer, Reply

PROMPT = prompts.PromptTemplate.from_template("Weather in {city}?")


@dataclass
class Weather:
    city: str
    celsius: float


class Sky(enum.Enum):
    CLEAR = "clear"
    CLOUDY = "cloudy"


def test_output_type_gives_the_typed_value_through_the_models_json_schema(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json({"city": "Oslo", "celsius": -3}))
    chain = chains.LLMChain(PROMPT, openai_llm, output_key="weather", output_type=Weather)
    assert mode.call(chain, {"city": "Oslo"}) == {"weather": Weather("Oslo", -3.0)}
    [request] = openai_server.chat_requests()
    assert request.body["response_format"]["json_schema"]["name"] == "Weather"


def test_output_type_re_asks_with_the_validation_problems(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(
        Reply.of_json({"city": "Oslo", "celsius": "cold"}),
        Reply.of_json({"city": "Oslo", "celsius": 1}),
    )
    chain = chains.LLMChain(PROMPT, openai_llm, output_type=Weather)
    assert mode.call(chain, {"city": "Oslo"})["text"] == Weather("Oslo", 1.0)
    second = openai_server.chat_requests()[1].body["messages"]
    assert 'celsius: expected number, got "cold"' in second[-1]["content"]


def test_a_typed_parser_is_asked_for_with_its_strategy_and_retries(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply.of_json({"value": "cloudy"}))
    parser = parsers.TypedParser(Sky, strategy="prompted", max_retries=0)
    chain = chains.LLMChain(PROMPT, openai_llm, output_parser=parser)
    assert mode.call(chain, {"city": "Oslo"})["text"] is Sky.CLOUDY
    [request] = openai_server.chat_requests()
    assert "response_format" not in request.body
    assert "matches this JSON Schema" in request.body["messages"][0]["content"]


def test_a_parser_with_retries_re_asks_with_its_error(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Hmm, hard to say.", "**Yes.**")
    chain = chains.LLMChain(PROMPT, openai_llm, output_parser=parsers.BooleanParser(max_retries=1))
    assert mode.call(chain, {"city": "Oslo"})["text"] is True
    retry = openai_server.chat_requests()[1].body["messages"][-1]["content"]
    assert "BooleanParser expected yes or no, got 'Hmm, hard to say.'" in retry


def test_a_parser_without_retries_raises_its_parse_error(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Hmm")
    chain = chains.LLMChain(PROMPT, openai_llm, output_parser=parsers.BooleanParser())
    with pytest.raises(parsers.ParseError, match="expected yes or no, got 'Hmm'"):
        mode.call(chain, {"city": "Oslo"})
    assert len(openai_server.chat_requests()) == 1


def test_retries_exhausted_raise_output_validation_error(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("Hmm", "Hmm")
    chain = chains.LLMChain(PROMPT, openai_llm, output_parser=parsers.BooleanParser(max_retries=1))
    with pytest.raises(llms.OutputValidationError, match="in 2 attempts"):
        mode.call(chain, {"city": "Oslo"})


def test_run_refuses_a_typed_chain_before_calling_the_model(mode: Mode) -> None:
    typed = chains.LLMChain(PROMPT, llms.FakeLLM([]), output_type=list[Weather])
    with pytest.raises(
        OutputNotStringError, match=r"answers with list\[Weather\] \(its output_type\)"
    ):
        mode.run(typed, "Oslo")
    listed = chains.LLMChain(PROMPT, llms.FakeLLM([]), output_parser=parsers.ListParser())
    with pytest.raises(OutputNotStringError, match=r"answers with list\[str\] \(its ListParser\)"):
        mode.run(listed, "Oslo")


def test_run_takes_a_chain_whose_parser_gives_text(mode: Mode) -> None:
    chosen = parsers.ChoiceParser(["clear", "cloudy"])
    chain = chains.LLMChain(PROMPT, llms.FakeLLM(["Cloudy."]), output_parser=chosen)
    assert chain.output_not_text is None and chain.output_type == Literal["clear", "cloudy"]
    assert mode.run(chain, "Oslo") == "cloudy"
    text = chains.LLMChain(PROMPT, llms.FakeLLM(["hi"]), output_parser=parsers.TextParser())
    assert mode.run(text, "Oslo") == "hi"


def test_output_type_and_output_parser_together_are_refused() -> None:
    with pytest.raises(ChainWiringError, match="takes output_type or output_parser, not both"):
        chains.LLMChain(
            PROMPT, llms.FakeLLM([]), output_parser=parsers.TextParser(), output_type=Weather
        )


def test_an_output_type_without_a_schema_is_refused_when_built() -> None:
    with pytest.raises(
        ChainTypeError, match=r"LLMChain output_type: .*set\[int\] has no JSON schema"
    ):
        chains.LLMChain(PROMPT, llms.FakeLLM([]), output_type=set[int])
