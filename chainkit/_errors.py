"""The root of every error chainkit raises on purpose, and the errors of no one package.

Each package keeps its own errors in its `errors.py`; each derives from `ChainkitError` and
keeps a standard base too (ValueError, TypeError, TimeoutError, …), so both
`except chainkit.ChainkitError` and the usual `except ValueError` catch it. The errors here
are chainkit's own, exported from `chainkit` itself: a stop escaping user code, which any
package may raise, and those of the `module:factory` specs and the batch output that the
command line and `chainkit.distributed` share. docs/errors.md shows the tree.
"""

from typing import Any


class ChainkitError(Exception):
    """Base of every exception chainkit raises on purpose.

    Pickled as its arguments and attributes, never by calling its `__init__` again, whose
    parameters differ from class to class: an error crosses processes whole (a Ray worker's,
    a batch job's)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickled, (type(self), self.args, self.__dict__))


def _unpickled(
    kind: type[ChainkitError], args: tuple[Any, ...], attributes: dict[str, Any]
) -> ChainkitError:
    error = kind.__new__(kind)
    error.args = args
    error.__dict__.update(attributes)
    return error


class EscapedStopError(ChainkitError, RuntimeError):
    """A StopIteration or StopAsyncIteration that a tool, a chain or a model raised, raised in
    its place (as its `__cause__`)."""


class FactoryError(ChainkitError, ValueError):
    """A `module:factory` spec (of `chainkit batch`, `chainkit mcp-serve` or
    `distributed.ray_batch`) names nothing usable; the message says why."""


class OutputBusyError(ChainkitError, OSError):
    """Another process is writing the same batch output file."""


class OutputWriteError(ChainkitError, OSError):
    """A batch result line could not be written or made durable: the job cannot go on."""
