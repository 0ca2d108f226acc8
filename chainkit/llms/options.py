"""CallOptions: the one typed set of options every call takes, from `chains.run` to a model.

`chains.*`, agents and `Model.generate` declare `**options: Unpack[CallOptions]`, so mypy
flags a misspelt option in user code; at run time `check_options` refuses an unknown name
before any request is made, suggesting the closest known one, and a value an option cannot
take (`temperature="hot"`, `max_tokens=-5`, `top_p=7`). An option only one server
understands goes in `extra_body`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypedDict

from chainkit._text import described
from chainkit.callbacks import Handlers
from chainkit.llms.errors import ModelConfigError, ModelTypeError, UnknownOptionError

StreamingFunc = Callable[[str], None]
"""Receives each piece of a reply's text as the model produces it."""


class DefaultOptions(TypedDict, total=False):
    """Options a model's constructor takes as its defaults for every call
    (`llms.OpenAI("gpt-4o-mini", temperature=0)`), a call's own option winning over its
    default: all call options but those only a call has (CallOptions adds them). None means
    "not set" for every option."""

    stop: Sequence[str] | None
    """Strings at which the model stops; OneShotAgent's default is "\\nObservation:"."""
    temperature: float | None
    max_tokens: int | None
    max_completion_tokens: int | None
    top_p: float | None
    seed: int | None
    presence_penalty: float | None
    frequency_penalty: float | None
    logit_bias: Mapping[str, float] | None
    logprobs: bool | None
    top_logprobs: int | None
    response_format: Mapping[str, Any] | None
    tool_choice: str | Mapping[str, Any] | None
    parallel_tool_calls: bool | None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | str | None
    user: str | None
    n: int | None
    """Choices per reply: only 1 is read, so a backend refuses any other number."""
    extra_body: Mapping[str, Any] | None
    """Fields added to the request body as they are, for what one server alone understands."""
    extra_headers: Mapping[str, str] | None
    extra_query: Mapping[str, Any] | None


class CallOptions(DefaultOptions, total=False):
    """Options of one call: the defaults a model takes, and those only a call has (a model's
    constructor has its own `model` and `timeout` parameters). None means "not set"."""

    model: str | None
    """The model name for this call, instead of the backend's own."""
    timeout: float | None
    """Seconds each attempt of the call may take."""
    streaming_func: StreamingFunc | None
    callbacks: Handlers
    """A Handler, or a list of them, that hears this call and every run inside it."""


KNOWN_OPTIONS: frozenset[str] = CallOptions.__optional_keys__
_RENAMED = {
    "stop_words": "stop",
    "callbacks_handler": "callbacks",
    "callback": "callbacks",
    "max_retries": "max_attempts of the model (llms.OpenAI(max_attempts=...)), which counts "
    "the first attempt too (max_retries=2 is max_attempts=3)",
    "request_timeout": "timeout",
    "openai_api_key": "api_key of the model",
    "openai_api_base": "base_url of the model",
    "model_name": "model",
    "stream": "a streaming_func",
    "streaming": "a streaming_func",
}
"""Names other libraries (or earlier chainkit) use, and what to use here."""


def check_options(options: Mapping[str, Any]) -> None:
    """Raises UnknownOptionError for the first option name that is not a CallOptions key, then
    ModelTypeError or ModelConfigError for a value its option cannot take; None is "not set"
    for every option. Only the options given are looked at."""
    if not KNOWN_OPTIONS.issuperset(options):
        unknown = options.keys() - KNOWN_OPTIONS
        name = sorted(unknown)[0]
        if name in _RENAMED:
            hint = f"use {_RENAMED[name]}. "
        else:
            close = difflib.get_close_matches(name, KNOWN_OPTIONS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownOptionError(
            f"unknown call option {name!r}; {hint}Options only one server understands go in "
            f"extra_body={{{name!r}: ...}}. Known options: {', '.join(sorted(KNOWN_OPTIONS))}"
        )
    for name, value in options.items():
        if value is not None:
            check = _VALUE_CHECKS.get(name)
            if check is not None:
                check(name, value)


def _number(least: float | None, most: float | None = None) -> Callable[[str, Any], None]:
    """A check that a value is a finite number (not a bool) within [least, most]."""
    if least is None:
        takes = "a finite number"
    elif most is None:
        takes = f"a finite number, {least:g} or more"
    else:
        takes = f"a number from {least:g} to {most:g}"

    def check(name: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ModelTypeError(f"{name} must be {takes}, got {described(value)}")
        if (
            not math.isfinite(value)
            or (least is not None and value < least)
            or (most is not None and value > most)
        ):
            raise ModelConfigError(f"{name} must be {takes}, got {value!r}")

    return check


def _whole(least: int | None) -> Callable[[str, Any], None]:
    """A check that a value is an int (not a bool), at least `least`."""
    takes = "a whole number" if least is None else f"a whole number, {least} or more"

    def check(name: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelTypeError(f"{name} must be {takes}, got {described(value)}")
        if least is not None and value < least:
            raise ModelConfigError(f"{name} must be {takes}, got {value}")

    return check


def _instance(kind: type | tuple[type, ...], takes: str) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if not isinstance(value, kind):
            raise ModelTypeError(f"{name} must be {takes}, got {described(value)}")

    return check


def _flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ModelTypeError(f"{name} must be True or False, got {described(value)}")


def _text(name: str, value: Any) -> None:
    if not isinstance(value, str):
        raise ModelTypeError(f"{name} must be a str, got {described(value)}")
    if not value.strip():
        raise ModelConfigError(f"{name} must not be empty, got {value!r}")


_stop_checked: tuple[str, ...] = ()
"""The last tuple of stops found good: an agent passes its own on every model call. A tuple of
str cannot change, and holding it here keeps its id from being reused by another object."""


def check_stop(name: str, value: Any) -> None:
    """Raises unless `value`, the option `name`, is text at which to stop or a list of such
    texts (one str is one stop): the check of `stop` in `check_options`, which a model call
    makes on its own, as every agent's call gives stop words and most calls nothing else."""
    global _stop_checked
    if value is _stop_checked:
        return
    if type(value) is not list and type(value) is not tuple:  # the agents' own stop: no ABC check
        if isinstance(value, str):
            value = [value]
        elif not isinstance(value, Sequence) or isinstance(value, bytes | bytearray):
            raise ModelTypeError(f"{name} must be a str or a list of str, got {described(value)}")
    for item in value:
        if not isinstance(item, str):
            raise ModelTypeError(f"{name} must be a list of str; it holds {described(item)}")
        if not item:
            raise ModelConfigError(f"{name} holds an empty str, where every reply would stop")
    if type(value) is tuple:
        _stop_checked = value


def _timeout(name: str, value: Any) -> None:
    from chainkit.llms.retry import check_seconds  # loaded with a backend, not at import

    check_seconds(name, value)


def _streaming_func(name: str, value: Any) -> None:
    if not callable(value):
        raise ModelTypeError(
            f"{name} must be a function called with each chunk of text, got {described(value)}"
        )


def _bias(name: str, value: Any) -> None:
    if not isinstance(value, Mapping):
        raise ModelTypeError(f"{name} must be a dict of token id to bias, got {described(value)}")
    for token, bias in value.items():
        _finite(f"{name}[{token!r}]", bias)


_finite = _number(None)
_mapping = _instance(Mapping, "a dict")
_VALUE_CHECKS: dict[str, Callable[[str, Any], None]] = {
    "stop": check_stop,
    "temperature": _number(0),
    "max_tokens": _whole(1),
    "max_completion_tokens": _whole(1),
    "top_p": _number(0, 1),
    "seed": _whole(None),
    "presence_penalty": _finite,
    "frequency_penalty": _finite,
    "logit_bias": _bias,
    "logprobs": _flag,
    "top_logprobs": _whole(0),
    "response_format": _mapping,
    "tool_choice": _instance((str, Mapping), "'auto', 'none', 'required' or a dict"),
    "parallel_tool_calls": _flag,
    "reasoning_effort": _text,
    "user": _instance(str, "a str"),
    "model": _text,
    "timeout": _timeout,
    "n": _whole(1),
    "streaming_func": _streaming_func,
    "extra_body": _mapping,
    "extra_headers": _instance(Mapping, "a dict of header name to str"),
    "extra_query": _mapping,
}
"""How each option's value is checked; `callbacks` is checked where it is guarded."""
