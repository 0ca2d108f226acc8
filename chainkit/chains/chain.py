"""Chain: the one contract every chain shares, `_call(inputs) -> outputs`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from chainkit._stop import to_thread
from chainkit.callbacks import Observed
from chainkit.schema import Memory


class Chain(Observed, ABC):
    """Base of every chain. A subclass implements `_call` (and `_acall` when it can wait
    natively); users call a chain through `chains.call` / `chains.run`, which make each call a
    run with memory, key checks and callbacks around `_call`.

    The options `_call` gets are `llms.CallOptions`, checked already; a chain passes them on to
    its model.
    """

    memory: Memory | None = None

    @property
    @abstractmethod
    def input_keys(self) -> list[str]:
        """Keys `_call` needs in its inputs."""

    @property
    @abstractmethod
    def output_keys(self) -> list[str]:
        """Keys `_call` returns."""

    @abstractmethod
    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        """Runs the chain on `inputs`; options reach the model unchanged."""

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        """Async twin of `_call`; by default runs `_call` in a daemon worker thread, so that a
        cancelled call that never returns does not keep `asyncio.run` from returning."""
        return await to_thread(f"chain {self.name}", self._call, inputs, **options)

    @property
    def name(self) -> str:
        return type(self).__name__
