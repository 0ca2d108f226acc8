"""The contract of an output parser: model text in, structured value out."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class OutputParser(Protocol):
    """Turns a model's text into the value a chain returns."""

    def parse(self, text: str) -> Any: ...
