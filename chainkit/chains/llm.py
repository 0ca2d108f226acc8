"""LLMChain: format a prompt, call a model, optionally parse the reply."""

from __future__ import annotations

from typing import Any

from chainkit.callbacks import Handlers
from chainkit.chains.chain import Chain
from chainkit.chains.errors import ChainTypeError, ChainWiringError
from chainkit.llms import Model
from chainkit.prompts import BasePromptTemplate, PromptTemplate
from chainkit.schema import Memory, Message, OutputParser


class LLMChain(Chain):
    """Formats `prompt` with the inputs, calls `llm`, and returns the reply under `output_key`,
    parsed by `output_parser` when one is given."""

    def __init__(
        self,
        prompt: BasePromptTemplate,
        llm: Model,
        output_key: str = "text",
        output_parser: OutputParser | None = None,
        memory: Memory | None = None,
        callbacks: Handlers = None,
    ) -> None:
        _require(prompt, BasePromptTemplate, "prompt", "a prompt template (BasePromptTemplate)")
        _require(llm, Model, "llm", "a model (llms.Model)")
        if not isinstance(output_key, str) or not output_key:
            raise ChainTypeError(f"LLMChain output_key must be a non-empty str, got {output_key!r}")
        if output_parser is not None:
            _require(output_parser, OutputParser, "output_parser", "an OutputParser or None")
        if memory is not None:
            _require(memory, Memory, "memory", "a Memory or None")
        if memory is not None:
            unread = [v for v in memory.memory_variables if v not in prompt.input_variables]
            if unread:
                # History loaded and then silently left out of the prompt is worse than an error.
                raise ChainWiringError(
                    f"the prompt does not use memory variable(s) {unread}; its variables are "
                    f"{sorted(prompt.input_variables)}. Add {{{unread[0]}}} to the prompt, or "
                    "name the memory's key after one of its variables"
                )
            _check_history_fits(prompt, memory)
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

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        messages = self.prompt.format_messages(**inputs)
        reply = self.llm.generate(messages, **options)
        return self._outputs(reply)

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        messages = self.prompt.format_messages(**inputs)
        reply = await self.llm.agenerate(messages, **options)
        return self._outputs(reply)

    def _outputs(self, reply: Message) -> dict[str, Any]:
        if self.output_parser is None:
            return {self.output_key: reply.content}
        return {self.output_key: self.output_parser.parse(reply.content)}


def _check_history_fits(prompt: BasePromptTemplate, memory: Memory) -> None:
    """Raises when a memory that gives its history as messages fills an f-string template,
    which would write them out as their Python reprs (found here, before the first call: the
    first history is an empty list, which reads as "[]"). A jinja2 template may loop over
    them."""
    if (
        isinstance(prompt, PromptTemplate)
        and prompt.template_format == "f-string"
        and getattr(memory, "return_messages", False) is True
    ):
        key = memory.memory_variables[0]
        raise ChainWiringError(
            f"the memory gives its history as messages (return_messages=True), which the "
            f"f-string PromptTemplate would write out as their Python reprs: give it "
            f"return_messages=False for the history as text, or use a ChatPromptTemplate "
            f"with MessagesPlaceholder({key!r})"
        )


def _require(value: object, kind: type, argument: str, expected: str) -> None:
    if not isinstance(value, kind):
        raise ChainTypeError(f"LLMChain {argument} must be {expected}, got {type(value).__name__}")
