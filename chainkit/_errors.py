"""The root of every error chainkit raises on purpose, and the errors of no one package.

Each package keeps its own errors in its `errors.py`; each derives from `ChainkitError` and
keeps a standard base too (ValueError, TypeError, TimeoutError, …), so both
`except chainkit.ChainkitError` and the usual `except ValueError` catch it. The errors here
are chainkit's own, exported from `chainkit` itself: a stop escaping user code, which any
package may raise, those of the `module:factory` specs and the batch output that the
command line and `chainkit.distributed` share, and those of the databases that checkpoints,
chat histories and caches keep their rows in (`chainkit._store`). docs/errors.md shows the
tree.
"""

from typing import Any, Self


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


class StoreConfigError(ChainkitError, ValueError):
    """A database named in a way no store can open: not a path, a `postgresql://` DSN or an
    open database; a DSN libpq cannot read (never quoted: it may hold a password); or
    PostgreSQL asked for without psycopg installed."""


class StoreError(ChainkitError, RuntimeError):
    """A store's database refused a read or write, for a cause that waiting will not cure:
    a read-only or full disk, a file that is not a database (or a corrupt one), tables of
    another schema or of a newer chainkit, a refused login, a closed database. The message
    names the store, what it was doing and the database's own words (never a password);
    what was stored before is intact."""


class StoreUnavailableError(StoreError, ConnectionError):
    """A store's database could not be reached, or stayed busy, for as long as the store
    waits: a PostgreSQL server down, restarting or failing over and not back in time, or
    another process holding a SQLite database's write lock. Nothing of the refused call was
    stored: try again once the database answers (a checkpointed run resumes with
    `chains.resume(executor, run_id)`)."""

    def __new__(cls, *args: Any) -> Self:
        # Laid out as an OSError: unpickling makes one by `__new__`, and the one its MRO finds
        # first, RuntimeError's, refuses to.
        return ConnectionError.__new__(cls, *args)
