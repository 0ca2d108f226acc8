"""One sync/async parametrization for behaviour tests.

A test that takes the `mode` fixture (tests/conftest.py) runs twice: with `Mode("sync")` its
`mode.run(chain, input)` is `chains.run(chain, input)`; with `Mode("async")` it is
`await chains.arun(chain, input)` in an event loop of its own, as an async program would
call it. So one test body checks that both drivers behave the same. `mode.generate(model,
messages)` does the same for a model's `generate` / `agenerate`, and
`mode.generate_object(model, ...)` for `llms.generate_object` / `agenerate_object`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

from chainkit import chains, llms
from chainkit.schema import Message

T = TypeVar("T")

MODES: tuple[Literal["sync", "async"], ...] = ("sync", "async")


class AsyncClosable(Protocol):
    async def aclose(self) -> None: ...


class ClosableModel(llms.Model, AsyncClosable, Protocol):
    """A model with async connections to close, as the OpenAI backend has."""


def run_then_close(model: AsyncClosable, work: Coroutine[Any, Any, T]) -> T:
    """Runs `work` in a new event loop and closes the model's async connections before the
    loop ends, as an async program should."""

    async def main() -> T:
        try:
            return await work
        finally:
            await model.aclose()

    return asyncio.run(main())


class Mode:
    """Calls chainkit's chain entry points and a model's `generate` synchronously, or their
    async twins in a fresh event loop."""

    def __init__(self, name: Literal["sync", "async"]) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Mode({self.name!r})"

    @property
    def is_async(self) -> bool:
        return self.name == "async"

    def drive(self, function: str, *args: Any, **options: Any) -> Any:
        """`chains.<function>(*args, **options)`, or `chains.a<function>` awaited. Looked up
        at each call, so the tests' checked `chains.batch` (tests/support/named_errors.py)
        is the one called."""
        if self.is_async:
            return asyncio.run(getattr(chains, f"a{function}")(*args, **options))
        return getattr(chains, function)(*args, **options)

    def run(self, chain: chains.Chain, input: Any, **options: Any) -> str:
        answer: str = self.drive("run", chain, input, **options)
        return answer

    def call(
        self, chain: chains.Chain, inputs: Mapping[str, Any], **options: Any
    ) -> dict[str, Any]:
        outputs: dict[str, Any] = self.drive("call", chain, inputs, **options)
        return outputs

    def predict(self, chain: chains.Chain, inputs: Mapping[str, Any], **options: Any) -> str:
        answer: str = self.drive("predict", chain, inputs, **options)
        return answer

    def batch(self, chain: chains.Chain, items: Iterable[Any], **options: Any) -> list[Any]:
        results: list[Any] = self.drive("batch", chain, items, **options)
        return results

    def generate(
        self, model: ClosableModel, messages: Sequence[Message], **options: Any
    ) -> Message:
        """`model.generate(messages, **options)`, or `model.agenerate` awaited in a fresh
        event loop that closes the model's async connections before it ends."""
        if self.is_async:
            return run_then_close(model, model.agenerate(messages, **options))
        return model.generate(messages, **options)

    def generate_object(self, model: llms.Model, *args: Any, **options: Any) -> Any:
        """`llms.generate_object(model, ...)`, or `llms.agenerate_object` awaited in a fresh
        event loop (closing the model's async connections, if it has any, before it ends)."""
        if not self.is_async:
            return llms.generate_object(model, *args, **options)
        work = llms.agenerate_object(model, *args, **options)
        if isinstance(model, llms.OpenAI):
            return run_then_close(model, work)
        return asyncio.run(work)
