"""Turns chain call options into model keyword arguments, dropping none of them."""

from __future__ import annotations

from typing import Any

from chainkit.callbacks import Handler


def model_options(options: dict[str, Any], callbacks: Handler | None) -> dict[str, Any]:
    """`stop_words` becomes the model's `stop`; every other option passes through as given."""
    if "stop_words" in options:
        options = dict(options)
        options["stop"] = options.pop("stop_words")
    if callbacks is not None and "callbacks" not in options:
        options = {**options, "callbacks": callbacks}
    return options
