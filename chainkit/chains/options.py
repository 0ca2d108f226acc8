"""Turns chain call options into model keyword arguments, dropping none of them."""

from __future__ import annotations

from typing import Any

from chainkit.callbacks import CombiningHandler, join
from chainkit.chains.errors import OptionsError as OptionsError


def check_options(options: dict[str, Any]) -> None:
    """Raises for options that would fail only once work has started: `callbacks` that is no
    Handler (TypeError), `stop_words` given with `stop` (OptionsError)."""
    join(options.get("callbacks"), None)
    _with_stop(options)


def model_options(options: dict[str, Any], callbacks: CombiningHandler | None) -> dict[str, Any]:
    """The keyword arguments for `Model.generate`.

    `stop_words` becomes the model's `stop` (None counts as not given; giving both is an
    error). A `callbacks` option is combined with the chain's handler, not swapped for it.
    Every other option passes through as given.
    """
    options = _with_stop(options)
    given = options.get("callbacks")
    joined = join(given, callbacks)
    if joined is not given:
        options = {**options, "callbacks": joined}
    return options


def _with_stop(options: dict[str, Any]) -> dict[str, Any]:
    if "stop_words" not in options:
        return options
    options = dict(options)
    stop_words = options.pop("stop_words")
    if stop_words is not None:
        if options.get("stop") is not None:
            raise OptionsError("give stop_words or stop, not both")
        options["stop"] = stop_words
    return options


def with_callbacks(
    options: dict[str, Any], own: CombiningHandler | None
) -> tuple[CombiningHandler | None, dict[str, Any]]:
    """The handler for one call: a component's own, joined to a `callbacks` option (a Handler
    or a list of them), and the options passing it down, so the components it calls report
    to it too."""
    given = options.get("callbacks")
    callbacks = join(given, own)
    if callbacks is not given:
        options = {**options, "callbacks": callbacks}
    return callbacks, options
