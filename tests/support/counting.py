"""Counting work instead of timing it: the characters a function of one text is handed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def characters_handed(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Makes `owner.name`, a function whose first argument is a text, count the characters it
    is handed; returns the count, in a list of one, which grows as the test goes on."""
    handed = [0]
    function: Callable[..., Any] = getattr(owner, name)

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        handed[0] += len(text)
        return function(text, *args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return handed
