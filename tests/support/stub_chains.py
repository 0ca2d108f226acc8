"""A base for the chains tests write: one text in under "input", one out under "output"."""

import asyncio
from abc import ABC
from typing import Any

from chainkit import chains


class InputOutputChain(chains.Chain, ABC):
    """A chain whose inputs are {"input": ...} and outputs {"output": ...}; a subclass
    writes `_call` (and `_acall` if it awaits)."""

    @property
    def input_keys(self) -> list[str]:
        return ["input"]

    @property
    def output_keys(self) -> list[str]:
        return ["output"]


class WaitsForever(InputOutputChain):
    """A run that waits until it is cancelled (its client gone): what an idle stream holds.
    Async only, as a server calls it."""

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        raise NotImplementedError("WaitsForever runs in async code only")

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("an Event nobody sets was set")
