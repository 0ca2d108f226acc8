"""CallOptions: the one typed set of options every call takes, from `chains.run` to a model.

`chains.*`, agents and `Model.generate` declare `**options: Unpack[CallOptions]`, so mypy
flags a misspelt option in user code; at run time `check_options` refuses an unknown name
before any request is made, suggesting the closest known one. An option only one server
understands goes in `extra_body`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypedDict

from chainkit.callbacks import Handlers
from chainkit.llms.errors import UnknownOptionError

StreamingFunc = Callable[[str], None]
"""Receives each piece of a reply's text as the model produces it."""


class CallOptions(TypedDict, total=False):
    """Options of one call. None means "not set" for every option."""

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
    model: str | None
    """The model name for this call, instead of the backend's own."""
    timeout: float | None
    """Seconds each attempt of the call may take."""
    n: int | None
    """Choices per reply: only 1 is read, so a backend refuses any other number."""
    streaming_func: StreamingFunc | None
    callbacks: Handlers
    """A Handler, or a list of them, that hears this call and every run inside it."""
    extra_body: Mapping[str, Any] | None
    """Fields added to the request body as they are, for what one server alone understands."""
    extra_headers: Mapping[str, str] | None
    extra_query: Mapping[str, Any] | None


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
    """Raises UnknownOptionError for the first option name that is not a CallOptions key."""
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
