"""The ids a client names (a run's, a session's), checked before any use: they end up in
headers, paths, logs and database keys, so only a short run of safe characters is taken."""

from __future__ import annotations

import re

from chainkit.serving._problems import Problem

LONGEST = 128
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def checked_id(kind: str, value: str) -> str:
    """`value` when it is 1 to 128 letters, digits, `.`, `_`, `:` or `-` (starting with a
    letter or digit, with no `..`); else 422 naming `kind` (e.g. "run_id")."""
    if len(value) > LONGEST or not _SAFE.fullmatch(value) or ".." in value:
        raise Problem(
            422,
            "invalid_id",
            f"{kind} must be 1 to {LONGEST} letters, digits, '.', '_', ':' or '-', "
            "starting with a letter or digit",
        )
    return value
