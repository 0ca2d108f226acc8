"""The memory contract a chain uses to carry state between calls."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Memory(Protocol):
    """Loads variables into a chain's inputs before a call and saves the exchange after it.

    A memory may also have async twins, `aload_memory_variables(inputs)` and
    `asave_context(inputs, outputs)`: chains' async calls use them when present, so that a
    history in a database or a summary's model call does not hold up the event loop."""

    @property
    def memory_variables(self) -> list[str]: ...

    def check_keys(self, input_keys: Collection[str], output_keys: Collection[str]) -> None:
        """Raises a ValueError naming the problem when, for a chain called with `input_keys`
        that returns `output_keys`, the memory could not load or save: a key it needs is
        missing, or it cannot tell which key holds the exchange. Chains call it before they
        run, so a wiring mistake never costs a model call."""
        ...

    def load_memory_variables(self, inputs: Mapping[str, Any]) -> dict[str, Any]: ...

    def save_context(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None: ...

    def clear(self) -> None: ...
