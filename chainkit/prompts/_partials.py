"""Merging partial values into format inputs, shared by every template class."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar


def with_partials(partials: Mapping[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """`values` over `partials`. A callable partial is called on every format (fresh values such
    as today's date), unless `values` overrides it."""
    if not partials:
        return values
    merged = {**partials, **values}
    if any(map(callable, partials.values())):  # rare: test in C before looping in Python
        for name, value in partials.items():
            if callable(value) and name not in values:
                merged[name] = value()
    return merged


class _Partial(Protocol):
    partial_variables: dict[str, Any]
    input_variables: list[str]


T = TypeVar("T", bound=_Partial)


def with_values_fixed(template: T, values: Mapping[str, Any]) -> T:
    """A copy of `template` with `values` fixed as partials; a callable value is called on
    every format."""
    clone = copy.copy(template)
    clone.partial_variables = {**template.partial_variables, **values}
    clone.input_variables = [name for name in template.input_variables if name not in values]
    return clone
