"""A run state's integrity tag: an HMAC-SHA256, under a key the application keeps, of the
state's canonical JSON, so a state kept outside the application (a file, a queue, a browser)
cannot be changed without the change being noticed."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from chainkit.checkpoints._json_data import canonical
from chainkit.checkpoints.errors import StateFormatError

FIELD = "tag"
_SCHEME = "hmac-sha256:"


def tag(data: Mapping[str, Any], key: bytes) -> str:
    """The tag of `data` (without its own tag field) under `key`."""
    untagged = {name: value for name, value in data.items() if name != FIELD}
    return _SCHEME + hmac.new(key, canonical(untagged), hashlib.sha256).hexdigest()


def verify(data: Mapping[str, Any], key: bytes) -> None:
    """Raises StateFormatError unless `data` carries the tag `key` gives it."""
    given = data.get(FIELD)
    if given is None:
        raise StateFormatError(
            "run state carries no tag, and this executor has a state key: write states with "
            "state.to_json(key=...) (or to_dict) under the same key"
        )
    expected = tag(data, key).encode("ascii")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode("utf-8"), expected):
        raise StateFormatError(
            "run state's tag does not verify: the state was changed after it was written, or "
            "written under another key"
        )
