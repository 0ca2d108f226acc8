"""`generate_parsed`: a reply read by an output parser, re-asked with the parser's error through
generate_object's loop, over real HTTP to the loopback server, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from chainkit import llms, parsers
from chainkit.llms.errors import ModelTypeError
from chainkit.llms.openai.chat import OpenAI
from chainkit.llms.structured import PARSED, agenerate_parsed, generate_parsed
from chainkit.schema import Message
from tests.support.modes import Mode, run_then_close
from tests.support.openai_server import OpenAIServer, Reply


def parsed(mode: Mode, llm: llms.Model, parser: parsers.Parser, **options: Any) -> Any:
    """`generate_parsed` with the parser, or its async twin in a fresh event loop."""
    given = {"name": parser.name, "max_retries": parser.max_retries, **options}
    if not mode.is_async:
        return generate_parsed(llm, "List three cities", parser.parse, **given)
    work = agenerate_parsed(llm, "List three cities", parser.parse, **given)
    if isinstance(llm, OpenAI):
        return run_then_close(llm, work)
    return asyncio.run(work)


def test_a_reply_that_does_not_parse_is_sent_back_with_the_error(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("I would rather not.", "1. Paris\n2. Rome\n3. Oslo")
    value, reply = parsed(mode, openai_llm, parsers.ListParser("numbered", max_retries=1))
    assert value == ["Paris", "Rome", "Oslo"]
    assert reply.content == "1. Paris\n2. Rome\n3. Oslo"
    first, second = (request.body["messages"] for request in openai_server.chat_requests())
    assert first == [{"role": "user", "content": "List three cities"}]
    assert second[:2] == [*first, {"role": "assistant", "content": "I would rather not."}]
    assert second[2]["role"] == "user"
    assert second[2]["content"] == (
        "Your answer could not be read: ListParser expected a numbered list (lines starting "
        "with 1. or 1)), got 'I would rather not.' (no item in it). Answer again, corrected."
    )


def test_retries_exhausted_raise_output_validation_error_with_every_attempt(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("maybe", "perhaps", "unsure")
    with pytest.raises(llms.OutputValidationError) as raised:
        parsed(mode, openai_llm, parsers.BooleanParser(max_retries=2))
    assert [rejected.text for rejected in raised.value.rejected] == ["maybe", "perhaps", "unsure"]
    assert raised.value.rejected[-1].problems == ("BooleanParser expected yes or no, got 'unsure'",)
    assert {rejected.strategy for rejected in raised.value.rejected} == {PARSED}
    assert str(raised.value).startswith(
        "the model's reply did not fit BooleanParser in 3 attempts; the last: BooleanParser"
    )
    assert len(openai_server.chat_requests()) == 3


def test_no_retries_means_one_request(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push("maybe")
    with pytest.raises(llms.OutputValidationError, match="in 1 attempt;"):
        parsed(mode, openai_llm, parsers.BooleanParser())
    assert len(openai_server.chat_requests()) == 1


def test_each_attempt_streams_to_a_fresh_reader(
    openai_server: OpenAIServer, openai_llm: OpenAI
) -> None:
    openai_server.push(Reply("- a\nnothing", chunk_size=2), Reply("- b\n- c\n", chunk_size=2))
    parser = parsers.ListParser("bulleted", max_retries=1)
    heard: list[list[Any]] = []

    def streaming() -> Callable[[str], None]:
        reader = parser.reader()
        found: list[Any] = []
        heard.append(found)
        return lambda chunk: found.extend(reader.feed(chunk))

    def only_b_and_c(text: str) -> list[str]:
        items = parser.parse(text)
        if items == ["a"]:
            raise parsers.ParseError("Check", "b and c", text)
        return items

    tokens: list[str] = []
    value, _ = generate_parsed(
        openai_llm,
        "list",
        only_b_and_c,
        name="Check",
        max_retries=1,
        streaming=streaming,
        streaming_func=tokens.append,
    )
    assert value == ["b", "c"]
    assert heard == [[["a"]], [["b"], ["b", "c"]]]
    assert "".join(tokens) == "- a\nnothing- b\n- c\n"  # the caller's hears every attempt
    assert all(request.body["stream"] for request in openai_server.chat_requests())


def test_an_error_that_is_no_value_error_is_not_sent_back() -> None:
    def broken(text: str) -> object:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        generate_parsed(llms.FakeLLM(["x", "y"]), "hi", broken, name="Broken", max_retries=3)


def test_a_refusal_is_raised_as_one(openai_server: OpenAIServer, openai_llm: OpenAI) -> None:
    openai_server.push(Reply(refusal="I cannot help with that."))
    with pytest.raises(llms.ModelRefusalError):
        generate_parsed(openai_llm, "hi", str.strip, name="Text", max_retries=2)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"read": "parse"}, "read must be a plain function of the reply's text, got str"),
        ({"name": ""}, "name must be a non-empty str"),
        ({"max_retries": -1}, "max_retries must be 0 or more"),
        ({"streaming": 3}, "streaming must be a plain function"),
    ],
)
def test_wrong_arguments_are_refused_before_any_request(
    arguments: dict[str, Any], message: str
) -> None:
    given: dict[str, Any] = {"read": str.strip, "name": "Text", **arguments}
    read = given.pop("read")
    with pytest.raises((ModelTypeError, llms.errors.ModelConfigError), match=message):
        generate_parsed(llms.FakeLLM([]), [Message.user("hi")], read, **given)
