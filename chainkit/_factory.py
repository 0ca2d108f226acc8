"""`module:factory` specs, as the command line names what a user's code makes (mcp-serve's
tools, a batch job's chain): import the module, follow the attribute path, call it."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from chainkit._errors import FactoryError


def load(spec: str, example: str, made: tuple[type, ...] = ()) -> Any:
    """What `module:attribute.path` names, called when callable (a function or a class) and
    not already an instance of one of `made`; FactoryError naming what is wrong, with
    `example` as a spec that works."""
    module_name, colon, attribute = spec.partition(":")
    if not (colon and module_name and attribute):
        raise FactoryError(f"expected module:factory, such as {example}, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would, for a module beside the user
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise FactoryError(f"cannot import {module_name}: {error}") from error
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise FactoryError(f"{module_name} has no attribute {attribute!r}") from None
    return target() if callable(target) and not isinstance(target, made) else target
