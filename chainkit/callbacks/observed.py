"""Observed: the `callbacks_handler` attribute of every component that fires events."""

from __future__ import annotations

from chainkit.callbacks.combining import CombiningHandler, Handlers, guard
from chainkit.callbacks.handler import Handler


class Observed:
    """Gives a component a settable `callbacks_handler` and, derived from it once per set, the
    guarded `callbacks` it fires events through (None when nobody listens).

    It takes a Handler, a list or tuple of them, or None; anything else raises TypeError when
    set, before the component does any work.
    """

    _callbacks_handler: Handler | None = None
    _callbacks: CombiningHandler | None = None

    @property
    def callbacks_handler(self) -> Handler | None:
        """The handler as set; handlers set as a list read back combined in one."""
        return self._callbacks_handler

    @callbacks_handler.setter
    def callbacks_handler(self, handler: Handlers) -> None:
        guarded = guard(handler, name=f"callbacks_handler of {type(self).__name__}")
        self._callbacks = guarded
        self._callbacks_handler = handler if isinstance(handler, Handler) else guarded

    @property
    def callbacks(self) -> CombiningHandler | None:
        """The handler wrapped so that a failing callback cannot break the run."""
        return self._callbacks
