"""A short answer as a model writes it, bared: the spaces, quotes, backticks and bold marks
around it and the full stop after it taken off ("**Yes.**" is "Yes")."""

from __future__ import annotations

from typing import Final

_AROUND: Final = " \t\r\n\"'`*_“”‘’「」"
_AFTER: Final = ".!?。！？"


def bare(text: str) -> str:
    return text.strip(_AROUND).rstrip(_AFTER).strip(_AROUND)
