"""Errors of callbacks: a handler that is none, one set up with settings it cannot use or
missing a package, and a trace file that cannot be read; and the cancellation of a run whose
stream was closed."""

from __future__ import annotations

from chainkit._errors import ChainkitError


class HandlerTypeError(ChainkitError, TypeError):
    """Something given as a handler is not a `callbacks.Handler` (nor a list of them), or a
    handler was given an argument of the wrong type, such as a stream that cannot be written."""


class HandlerConfigError(ChainkitError, ValueError):
    """A handler setting has a value it cannot take, such as a negative `max_chars`."""


class HandlerDependencyError(ChainkitError, ModuleNotFoundError):
    """A handler needs a package that is not installed, such as OpenTelemetry's API."""


class StreamClosed(BaseException):
    """The reader of a run's stream (`chains.stream`, `chains.astream`, `FinalAnswerStream`)
    closed it: the run was stopped, not failed. The handlers of the stream hear it as the error
    of each run still open; OpenTelemetry spans end without status ERROR.

    A BaseException, like KeyboardInterrupt: no `except Exception` on the way (a tool's error
    handling, a model's retries) takes it for a failure to handle.
    """

    def __init__(self, message: str = "the consumer closed the stream") -> None:
        super().__init__(message)


class TraceFormatError(ChainkitError, ValueError):
    """A trace file holds a line that is not an event as `TraceFile` writes them."""
