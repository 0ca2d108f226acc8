"""Chain: the one contract every chain shares, `call(inputs) -> outputs`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from chainkit._stop import to_thread
from chainkit.callbacks import Observed
from chainkit.schema import Memory


class Chain(Observed, ABC):
    """Base of every chain. Call it through `chains.call` / `chains.run`, which add memory,
    key checks and chain callbacks around `call`.

    Call options a chain passes on to its model: stop_words, streaming_func, temperature,
    max_tokens, top_p, seed, model, and any other a backend understands.
    """

    memory: Memory | None = None

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
        """Async twin of `call`; by default runs `call` in a daemon worker thread, so that a
        cancelled call that never returns does not keep `asyncio.run` from returning."""
        return await to_thread(f"chain {self.name}", self.call, inputs, **options)

    @property
    def name(self) -> str:
        return type(self).__name__
