"""A run's outputs as a client gets them: plain JSON, as the events carry them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chainkit._plain import plain


def served_outputs(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """`outputs` as plain JSON data."""
    served: dict[str, Any] = plain(dict(outputs))
    return served
