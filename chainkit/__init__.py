"""chainkit: composable LLM chains and agents you can read, debug and trust.

Import the subpackages you use: ``from chainkit import agents, chains, llms, tools``.
``chainkit.open_database(where)`` opens a SQLite file or a PostgreSQL DSN once, for every
store (checkpoints, chat history, the response cache) to share.
Importing chainkit loads neither openai nor jinja2.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from chainkit._errors import (
    ChainkitError,
    EscapedStopError,
    FactoryError,
    OutputBusyError,
    OutputWriteError,
    StoreConfigError,
    StoreError,
    StoreUnavailableError,
)

if _TYPE_CHECKING:
    from chainkit._store import open_database as open_database

__version__: str
"""The installed distribution's version, read from its metadata when first asked for."""

__all__ = [
    "ChainkitError",
    "EscapedStopError",
    "FactoryError",
    "OutputBusyError",
    "OutputWriteError",
    "StoreConfigError",
    "StoreError",
    "StoreUnavailableError",
    "open_database",
]


def __dir__() -> list[str]:
    return sorted({*globals(), "open_database", "__version__"})


def __getattr__(name: str) -> object:
    if name == "open_database":  # the store layer loads with the first store, or when asked
        from chainkit._store import open_database

        globals()[name] = open_database
        return open_database
    # importlib.metadata takes longer to import than chainkit: only when the version is read.
    if name != "__version__":
        raise AttributeError(f"module 'chainkit' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("chainkit")
    except PackageNotFoundError:  # run from a checkout that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
