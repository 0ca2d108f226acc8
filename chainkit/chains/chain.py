"""Chain: the one contract every chain shares, `call(inputs) -> outputs`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from chainkit.callbacks import CombiningHandler, Handler, guard
from chainkit.schema import Memory


class Chain(ABC):
    """Base of every chain. Call it through `chains.call` / `chains.run`, which add memory,
    key checks and chain callbacks around `call`.

    Call options a chain passes on to its model: stop_words, streaming_func, temperature,
    max_tokens, top_p, seed, model, and any other a backend understands.
    """

    memory: Memory | None = None
    _callbacks_handler: Handler | None = None
    _callbacks: CombiningHandler | None = None

    @property
    @abstractmethod
    def input_keys(self) -> list[str]:
        """Keys `call` needs in its inputs."""

    @property
    @abstractmethod
    def output_keys(self) -> list[str]:
        """Keys `call` returns."""

    @abstractmethod
    def call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        """Runs the chain on `inputs`; options reach the model unchanged."""

    async def acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        """Async twin of `call`; by default runs `call` in a worker thread."""
        import asyncio  # loaded already by the running event loop, not at import

        return await asyncio.to_thread(self.call, inputs, **options)

    @property
    def callbacks_handler(self) -> Handler | None:
        return self._callbacks_handler

    @callbacks_handler.setter
    def callbacks_handler(self, handler: Handler | None) -> None:
        self._callbacks_handler = handler
        self._callbacks = guard(handler)

    @property
    def callbacks(self) -> CombiningHandler | None:
        """The handler wrapped so that a failing callback cannot break the run."""
        return self._callbacks

    @property
    def name(self) -> str:
        return type(self).__name__
