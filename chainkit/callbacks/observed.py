"""Observed: the `callbacks` of every component that fires events."""

from __future__ import annotations

from chainkit.callbacks.combining import CombiningHandler, Handlers, guard


class Observed:
    """Gives a component a settable `callbacks` (a Handler, a list or tuple of them, or None)
    and, derived from it once per set, the guarded `handler` its runs add to the handlers
    active where they start (None when it has none).

    Anything else raises TypeError when set, before the component does any work.
    """

    _callbacks: Handlers = None
    _handler: CombiningHandler | None = None

    @property
    def callbacks(self) -> Handlers:
        """The handlers as set."""
        return self._callbacks

    @callbacks.setter
    def callbacks(self, callbacks: Handlers) -> None:
        self._handler = guard(callbacks, name=f"callbacks of {type(self).__name__}")
        self._callbacks = callbacks

    @property
    def handler(self) -> CombiningHandler | None:
        """`callbacks` wrapped so that a failing callback cannot break a run."""
        return self._handler
