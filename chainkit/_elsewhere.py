"""Methods other libraries' users reach for, which chainkit spells another way.

A class lists such a name as `invoke = Elsewhere("use chains.call(chain, inputs)",
ChainAttributeError)`: reading it raises that error (an AttributeError) naming chainkit's way,
where Python would only say the attribute is missing. `hasattr` stays False, and a name not
listed fails as it always did, so no other attribute error is masked (as a `__getattr__`
would mask one raised inside a property).
"""

from __future__ import annotations

from typing import NoReturn


class Elsewhere:
    """A descriptor whose every read raises `error` with `way`: what to use instead."""

    __slots__ = ("error", "name", "way")

    def __init__(self, way: str, error: type[AttributeError]) -> None:
        self.way = way
        self.error = error
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> NoReturn:
        kind = owner.__name__ if owner is not None else type(instance).__name__
        raise self.error(f"{kind} has no {self.name} method (as LangChain's have): {self.way}")
