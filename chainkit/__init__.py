"""chainkit: composable LLM chains and agents you can read, debug and trust.

Import the subpackages you use: ``from chainkit import agents, chains, llms, tools``.
Importing chainkit loads neither openai nor jinja2.
"""

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
]


def __getattr__(name: str) -> str:
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
