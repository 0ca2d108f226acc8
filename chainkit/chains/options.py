"""Turns chain call options into model keyword arguments, dropping none of them."""

from __future__ import annotations

from typing import Any

from chainkit.callbacks import Handler, guard


class OptionsError(ValueError):
    """Call options that contradict each other."""


def model_options(options: dict[str, Any], callbacks: Handler | None) -> dict[str, Any]:
    """The keyword arguments for `Model.generate`.

    `stop_words` becomes the model's `stop` (None counts as not given; giving both is an
    error). A `callbacks` option is combined with the chain's handler, not swapped for it.
    Every other option passes through as given.
    """
    if "stop_words" in options:
        options = dict(options)
        stop_words = options.pop("stop_words")
        if stop_words is not None:
            if options.get("stop") is not None:
                raise OptionsError("give stop_words or stop, not both")
            options["stop"] = stop_words
    if callbacks is not None:
        given = options.get("callbacks")
        if given is None:
            options = {**options, "callbacks": callbacks}
        elif given is not callbacks:
            options = {**options, "callbacks": guard(given, callbacks)}
    return options
