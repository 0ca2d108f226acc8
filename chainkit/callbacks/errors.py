"""Errors of callbacks: a handler that is none, one set up with settings it cannot use or
missing a package, and a trace file that cannot be read."""

from __future__ import annotations

from chainkit._errors import ChainkitError


class HandlerTypeError(ChainkitError, TypeError):
    """Something given as a handler is not a `callbacks.Handler` (nor a list of them), or a
    handler was given an argument of the wrong type, such as a stream that cannot be written."""


class HandlerConfigError(ChainkitError, ValueError):
    """A handler setting has a value it cannot take, such as a negative `max_chars`."""


class HandlerDependencyError(ChainkitError, ModuleNotFoundError):
    """A handler needs a package that is not installed, such as OpenTelemetry's API."""


class TraceFormatError(ChainkitError, ValueError):
    """A trace file holds a line that is not an event as `TraceFile` writes them."""
