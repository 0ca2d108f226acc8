"""Errors of memory."""

from __future__ import annotations

from chainkit._errors import ChainkitError


class MemoryKeyError(ChainkitError, ValueError):
    """The memory cannot tell which input or output key holds the exchange to save."""


class MemoryTypeError(ChainkitError, TypeError):
    """A memory was built with a setting of the wrong type."""


class MemoryValueError(ChainkitError, ValueError):
    """A memory or chat history was given a value of the right type it cannot take: an empty
    or overlong session id, a bound below what it needs."""
