"""Observed: the `callbacks_handler` attribute of every component that fires events."""

from __future__ import annotations

from chainkit.callbacks.combining import CombiningHandler, guard
from chainkit.callbacks.handler import Handler


class Observed:
    """Gives a component a settable `callbacks_handler` and, derived from it once per set, the
    guarded `callbacks` it fires events through (None when nobody listens)."""

    _callbacks_handler: Handler | None = None
    _callbacks: CombiningHandler | None = None

    @property
    def callbacks_handler(self) -> Handler | None:
        return self._callbacks_handler

    @callbacks_handler.setter
    def callbacks_handler(self, handler: Handler | None) -> None:
        self._callbacks_handler = handler
        self._callbacks = guard(handler)

    @property
    def callbacks(self) -> CombiningHandler | None:
        """The handler wrapped so that a failing callback cannot break the run."""
        return self._callbacks
