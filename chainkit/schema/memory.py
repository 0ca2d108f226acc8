"""The memory contract a chain uses to carry state between calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Memory(Protocol):
    """Loads variables into a chain's inputs before a call and saves the exchange after it."""

    @property
    def memory_variables(self) -> list[str]: ...

    def load_memory_variables(self, inputs: Mapping[str, Any]) -> dict[str, Any]: ...

    def save_context(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None: ...

    def clear(self) -> None: ...
