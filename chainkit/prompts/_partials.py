"""Merging partial values into format inputs, shared by every template class."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def with_partials(partials: Mapping[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """`values` over `partials`. A callable partial is called on every format (fresh values such
    as today's date), unless `values` overrides it."""
    if not partials:
        return values
    merged = {
        name: value() if callable(value) else value
        for name, value in partials.items()
        if name not in values
    }
    merged.update(values)
    return merged
