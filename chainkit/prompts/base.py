"""BasePromptTemplate: what chains and agents need from any prompt."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from chainkit.schema import Message


@runtime_checkable
class BasePromptTemplate(Protocol):
    """A prompt that names its inputs and turns values into the messages for a model."""

    @property
    def input_variables(self) -> list[str]: ...

    def format_messages(self, /, **values: Any) -> list[Message]: ...
