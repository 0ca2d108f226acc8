"""A pipeline is fitted together when built: steps that cannot fit raise ChainWiringError at the
`|`, naming both steps and what does not fit, before any model is called."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chainkit import chains, llms, prompts
from chainkit.chains.errors import ChainTypeError, ChainWiringError, MissingInputKeysError
from chainkit.llms import OpenAI
from tests.support.openai_server import OpenAIServer

P = prompts.PromptTemplate.from_template


@pytest.fixture
def model(openai_server: OpenAIServer, openai_llm: OpenAI) -> Iterator[OpenAI]:
    yield openai_llm
    assert openai_server.requests == [], "a check made at build time must precede any call"


def test_a_missing_key_names_both_steps_and_the_key_meant(model: OpenAI) -> None:
    with pytest.raises(ChainWiringError) as raised:
        {"query": chains.pick("q")} | P("{question}") | model
    message = str(raised.value)
    assert "PromptTemplate needs the key(s) ['question']" in message
    assert "Parallel does not give: it gives ['query']" in message
    assert "did you mean 'query' for 'question'?" in message


def test_a_misspelt_key_among_several_is_suggested(model: OpenAI) -> None:
    step = {"contxt": chains.pick("q"), "question": chains.pick("q")}
    with pytest.raises(ChainWiringError, match=r"did you mean 'contxt' for 'context'\?"):
        step | P("{context} {question}") | model


def test_a_key_a_prompt_would_leave_unused_is_refused(model: OpenAI) -> None:
    with pytest.raises(ChainWiringError, match=r"does not use the key\(s\) \['extra'\]"):
        {"question": chains.pick("q"), "extra": chains.pick("q")} | P("{question}")


def test_a_chain_after_a_step_missing_its_input_is_refused(model: OpenAI) -> None:
    llm_chain = chains.LLMChain(P("{topic}"), model)
    with pytest.raises(ChainWiringError, match=r"LLMChain needs the key\(s\) \['topic'\]"):
        {"subject": chains.pick("s")} | llm_chain


def test_a_parser_after_a_step_giving_a_list_is_refused(model: OpenAI) -> None:
    def split(text: str) -> list[str]:
        return text.split()

    class Parser:
        output_type = dict

        def parse(self, text: str) -> Any:
            return text

    with pytest.raises(
        ChainWiringError,
        match=r"Parser takes one value \(str \| Message\), and split gives one value \(list",
    ):
        P("{q}") | model | split | Parser()


def test_a_function_whose_parameter_type_cannot_fit_is_refused(model: OpenAI) -> None:
    def count(items: list[str]) -> int:
        return len(items)

    def halve(number: float) -> float:
        return number / 2

    def shout(text: str) -> str:
        return text.upper()

    P("{q}") | model | shout | str.split | count | halve  # int fits float
    with pytest.raises(
        ChainWiringError, match=r"shout takes one value \(str\), and count gives one value \(int\)"
    ):
        chains.pipe(count, shout)


def test_one_value_into_a_prompt_of_several_variables_is_refused(model: OpenAI) -> None:
    with pytest.raises(
        ChainWiringError, match=r"put a dict step between them, e.g. \{'a': \.\.\., 'b': \.\.\.\}"
    ):
        P("{q}") | model | P("{a} and {b}")


def test_a_dict_of_several_keys_into_a_one_value_step_suggests_pick(model: OpenAI) -> None:
    with pytest.raises(ChainWiringError, match=r"did you mean chains.pick\('a'\) between them\?"):
        {"a": chains.pick("q"), "b": chains.pick("q")} | model


def test_a_stream_of_pieces_before_a_step_taking_a_whole_value_is_refused(model: OpenAI) -> None:
    def pieces(text: str) -> Iterator[str]:
        yield from text.split()

    with pytest.raises(
        ChainWiringError,
        match=r"pieces gives a stream of pieces \(Iterator\[str\]\), and shout takes a whole",
    ):

        def shout(text: str) -> str:
            return text.upper()

        chains.pipe(pieces, shout)
    with pytest.raises(ChainWiringError, match=r"PromptTemplate takes a whole value"):
        chains.pipe(pieces, P("{q}"))
    chains.pipe(pieces, lambda stream: list(stream))  # a step of no stated type may read it


def test_each_branch_of_a_dict_and_a_branch_step_is_checked(model: OpenAI) -> None:
    with pytest.raises(ChainWiringError, match=r"needs the key\(s\) \['b'\]"):
        chains.pipe({"x": chains.pick("a")}, {"y": P("{b}")})
    with pytest.raises(ChainWiringError, match=r"needs the key\(s\) \['c'\]"):
        {"x": chains.pick("a")} | chains.branch((lambda v: True, P("{x}")), default=P("{c}"))


def test_what_cannot_be_a_step_is_named() -> None:
    with pytest.raises(ChainTypeError, match=r"int cannot be a pipeline step"):
        chains.pipe(P("{q}"), 3)
    with pytest.raises(ChainTypeError, match=r"takes one value .* takes 2"):
        chains.pipe(lambda a, b: a)
    with pytest.raises(ChainTypeError, match=r"non-empty list of steps"):
        chains.Pipeline([])
    with pytest.raises(ChainTypeError, match=r"dict step maps output keys"):
        chains.pipe(P("{q}"), {})


def test_a_plain_function_takes_what_its_annotation_says_or_anything() -> None:
    def takes_any(value):
        return value

    chains.pipe(P("{q}"), llms.FakeLLM(["x"]), takes_any)
    chains.pipe(P("{q}"), takes_any)  # messages, to a function of no stated type


def test_steps_sharing_a_value_may_each_leave_keys_the_others_use() -> None:
    plain = P("Answer {question}")
    translated = P("Answer {question} in {language}")
    two = {"question": chains.pick("question"), "language": chains.pick("language")}
    chains.pipe(two, chains.branch((lambda values: True, plain), default=translated))
    chains.pipe(two, {"short": plain, "long": translated})
    chains.pipe(two, chains.fallbacks(plain, translated))
    chains.pipe(two, chains.assign(prompt=plain))
    with pytest.raises(ChainWiringError, match=r"does not use the key\(s\) \['language'\]"):
        chains.pipe(two, plain)


def test_an_unused_key_suggests_only_a_variable_not_given() -> None:
    with pytest.raises(ChainWiringError) as raised:
        chains.pipe({"question": chains.pick("q"), "extra": chains.pick("q")}, P("{question}"))
    assert "did you mean" not in str(raised.value)
    with pytest.raises(ChainWiringError, match=r"did you mean 'langauge' for 'language'\?"):
        chains.pipe(
            {"question": chains.pick("q"), "langauge": chains.pick("q")}, P("{question} {language}")
        )


def test_a_dict_from_an_untyped_step_fills_a_prompt_of_one_variable_by_its_keys() -> None:
    def misspelt(value):
        return {"questoin": value}

    def text(value):
        return value

    with pytest.raises(
        MissingInputKeysError,
        match=r"PromptTemplate is missing input key\(s\) \['question'\]; got \['questoin'\]",
    ):
        chains.call(chains.pipe(misspelt, P("Q: {question}")), {"input": "hi"})
    outputs = chains.call(chains.pipe(text, P("Q: {question}")), {"input": "hi"})
    assert outputs["output"][0].content == "Q: hi"
