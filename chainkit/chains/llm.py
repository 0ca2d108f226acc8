"""LLMChain: format a prompt, call a model, optionally read the reply into a value."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, Literal, cast

from chainkit._text import shorten, type_text
from chainkit.callbacks import Handlers
from chainkit.chains._memory_fit import check_memory_fits
from chainkit.chains.chain import Chain
from chainkit.chains.errors import ChainTypeError, ChainWiringError
from chainkit.llms import Model
from chainkit.llms.output_strategies import StrategyName
from chainkit.llms.structured import (
    agenerate_object,
    agenerate_parsed,
    generate_object,
    generate_parsed,
)
from chainkit.parsers import Parser, TypedParser
from chainkit.parsers.errors import ParserTypeError
from chainkit.prompts import BasePromptTemplate
from chainkit.schema import Memory, Message, OutputParser


class LLMChain(Chain):
    """Formats `prompt` with the inputs, calls `llm`, and returns the reply under `output_key`:
    its text, or read by `output_parser`, or a value of `output_type` (asked for as
    `llms.generate_object` asks, the same as `output_parser=parsers.TypedParser(output_type)`).

    A `parsers.Parser` with `max_retries` sends a reply it cannot read back to the model with
    the error, that many times at most, then raises `llms.OutputValidationError`; any other
    parser's error is raised as it is.
    """

    def __init__(
        self,
        prompt: BasePromptTemplate,
        llm: Model,
        output_key: str = "text",
        output_parser: OutputParser | None = None,
        memory: Memory | None = None,
        callbacks: Handlers = None,
        *,
        output_type: Any = None,
    ) -> None:
        _require(prompt, BasePromptTemplate, "prompt", "a prompt template (BasePromptTemplate)")
        _require(llm, Model, "llm", "a model (llms.Model)")
        if not isinstance(output_key, str) or not output_key:
            raise ChainTypeError(f"LLMChain output_key must be a non-empty str, got {output_key!r}")
        if output_parser is not None:
            _require(output_parser, OutputParser, "output_parser", "an OutputParser or None")
        if output_type is not None:
            output_parser = _typed_parser(output_type, output_parser)
        if memory is not None:
            _require(memory, Memory, "memory", "a Memory or None")
        if memory is not None:
            check_memory_fits(memory, prompt.input_variables, prompt)
        self.prompt = prompt
        self.llm = llm
        self.output_key = output_key
        self.output_parser = output_parser
        self.memory = memory
        self.callbacks = callbacks

    def __repr__(self) -> str:
        return f"LLMChain(llm={self.llm!r}, output_key={self.output_key!r})"

    @property
    def input_keys(self) -> list[str]:
        return list(self.prompt.input_variables)

    @property
    def output_keys(self) -> list[str]:
        return [self.output_key]

    @property
    def output_type(self) -> Any:
        """The type of the chain's output: `str`, or its parser's `output_type` (Any for a
        parser that does not say)."""
        if self.output_parser is None:
            return str
        return getattr(self.output_parser, "output_type", Any)

    @property
    def output_not_text(self) -> str | None:
        parser = self.output_parser
        if not isinstance(parser, Parser) or _is_text(parser.output_type):
            return None
        given = "output_type" if isinstance(parser, TypedParser) else parser.name
        output_type = parser.output_type
        shown = "JSON data" if isinstance(output_type, Mapping) else type_text(output_type)
        return f"answers with {shorten(shown, 80)} (its {given})"

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        messages = self.prompt.format_messages(**inputs)
        parser = self.output_parser
        if isinstance(parser, TypedParser):
            value = generate_object(
                self.llm, messages, parser.output_type, **_asked(parser), **options
            )
        elif isinstance(parser, Parser) and parser.max_retries:
            value, _ = generate_parsed(
                self.llm, messages, parser.parse, **_reread(parser), **options
            )
        else:
            value = self._read(self.llm.generate(messages, **options))
        return {self.output_key: value}

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        messages = self.prompt.format_messages(**inputs)
        parser = self.output_parser
        if isinstance(parser, TypedParser):
            asked = _asked(parser)
            value = await agenerate_object(
                self.llm, messages, parser.output_type, **asked, **options
            )
        elif isinstance(parser, Parser) and parser.max_retries:
            reread = _reread(parser)
            value, _ = await agenerate_parsed(self.llm, messages, parser.parse, **reread, **options)
        else:
            value = self._read(await self.llm.agenerate(messages, **options))
        return {self.output_key: value}

    def _read(self, reply: Message) -> Any:
        if self.output_parser is None:
            return reply.content
        return self.output_parser.parse(reply.content)


def _is_text(output_type: object) -> bool:
    """Whether values of `output_type` are strings (or may be: Any)."""
    if output_type is str or output_type is Any:
        return True
    choices = typing.get_args(output_type) if typing.get_origin(output_type) is Literal else ()
    return bool(choices) and all(isinstance(choice, str) for choice in choices)


def _typed_parser(output_type: object, output_parser: OutputParser | None) -> TypedParser:
    if output_parser is not None:
        raise ChainWiringError(
            "LLMChain takes output_type or output_parser, not both: output_type=X is "
            "output_parser=parsers.TypedParser(X)"
        )
    try:
        return TypedParser(output_type)
    except ParserTypeError as error:
        raise ChainTypeError(
            f"LLMChain output_type: {error} (give a dataclass, TypedDict, Enum, Literal, "
            "list[...], a JSON Schema dict or a pydantic model)"
        ) from None


def _asked(parser: TypedParser) -> dict[str, Any]:
    """How `generate_object` is to ask for a typed parser's value."""
    return {
        "strategy": cast("StrategyName | None", parser.strategy),
        "max_retries": parser.max_retries,
    }


def _reread(parser: Parser) -> dict[str, Any]:
    """How `generate_parsed` is to re-ask for a parser's value."""
    return {"name": parser.name, "max_retries": parser.max_retries}


def _require(value: object, kind: type, argument: str, expected: str) -> None:
    if not isinstance(value, kind):
        raise ChainTypeError(f"LLMChain {argument} must be {expected}, got {type(value).__name__}")
