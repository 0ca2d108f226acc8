"""The `|` of every runnable part: prompts, models, parsers and chains compose into a pipeline.

A pipeline is a chain (`chains.Pipeline`), a layer above prompts, models and parsers; their `|`
builds one through the composer `chains` registers here when it is imported, so that the
parts' imports still point down the layers. A part used before `chains` was ever imported has
it imported, by name, on its first `|`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

Composer = Callable[[object, object], Any]
"""Builds the pipeline of its two operands, left first; checks that they fit."""

_composer: list[Composer] = []


def register(composer: Composer) -> None:
    """Makes `composer` the one every `|` calls (the pipeline module's, once)."""
    _composer[:] = [composer]


def compose(left: object, right: object) -> Any:
    """The pipeline `left | right`."""
    if not _composer:
        importlib.import_module("chainkit.chains.pipeline")
    return _composer[0](left, right)


class Pipeable:
    """Gives a part `|`: `part | other` and `other | part` (a function, a dict of parts) are
    the pipeline of the two."""

    __slots__ = ()

    def __or__(self, other: object) -> Any:
        return compose(self, other)

    def __ror__(self, other: object) -> Any:
        return compose(other, self)
