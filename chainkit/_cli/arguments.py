"""The argument types the `chainkit` commands share: each turns a flag's text into its value,
or raises ArgumentTypeError saying what was expected (argparse names the flag)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any


def positive(text: str) -> int:
    """A whole number from 1: a count, a limit."""
    return _whole(text, 1)


def count(text: str) -> int:
    """A whole number from 0: how many of something, none included."""
    return _whole(text, 0)


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value


def seconds(text: str) -> float:
    """A finite number of seconds, more than zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"must be a finite number of seconds, more than zero, got {text!r}"
        )
    return value


def not_empty(text: str) -> str:
    """Text that is not only blanks: a name, a URL."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty")
    return text


def port(text: str) -> int:
    """A TCP port, from 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is from 0 to 65535, got {value}")
    return value


def json_object(text: str) -> dict[str, Any]:
    """A JSON object, such as a settings mapping."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('expected a JSON object, e.g. {"pip": ["chainkit"]}')
    return value


def prices(text: str) -> dict[str, tuple[float, float]]:
    """Prices per million tokens in and out, by model: a JSON object such as
    {"gpt-4o-mini": [0.15, 0.6]}, checked as `callbacks.UsageTotals` takes it."""
    from chainkit._errors import ChainkitError
    from chainkit.callbacks.usage import UsageTotals

    try:
        return UsageTotals(json_object(text)).prices
    except ChainkitError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
