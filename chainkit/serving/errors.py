"""Errors of serving: a server's settings that cannot work, found before it listens."""

from __future__ import annotations

from chainkit._errors import ChainkitError


class ServeConfigError(ChainkitError, ValueError):
    """A server setting that cannot work (no token without `no_auth`, a limit out of range, a
    chain that is no chain), named with the setting that fixes it."""
