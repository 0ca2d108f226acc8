"""Callbacks observe a run: what went into the model, what it chose, what the tools returned."""

from chainkit.callbacks.combining import CombiningHandler, Handlers, guard, join
from chainkit.callbacks.errors import HandlerConfigError, HandlerTypeError
from chainkit.callbacks.handler import Handler
from chainkit.callbacks.log import LogHandler
from chainkit.callbacks.observed import Observed

__all__ = [
    "CombiningHandler",
    "Handler",
    "HandlerConfigError",
    "HandlerTypeError",
    "Handlers",
    "LogHandler",
    "Observed",
    "guard",
    "join",
]
