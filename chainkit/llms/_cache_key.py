"""The response cache's key: a hash of everything that changes a model's reply.

That is the model (its name, or the call's `model` option; its provider; its server's URL,
which carries no credentials), the messages as they go on the wire, the tools offered, and
every option in effect (the model's defaults under the call's own), but those that only
change how the call is made: `timeout`, `callbacks`, `streaming_func` and `extra_headers`
(HTTP headers, which are where credentials go). The API key is in none of these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from chainkit.schema import Message, ToolInfo

KEY_VERSION = 1
"""Changes whenever the material below does, so that no entry of an older key is read."""

IRRELEVANT_OPTIONS = frozenset(("timeout", "callbacks", "streaming_func", "extra_headers"))
"""Options that change how a call is made, never what the model answers."""


class Served(Protocol):
    """A model as the key names it (`llms.BaseModel` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def provider(self) -> str: ...

    @property
    def server_url(self) -> str | None: ...


def effective_options(
    defaults: Mapping[str, Any], given: Mapping[str, Any], stop: Sequence[str] | None
) -> dict[str, Any]:
    """The options a call is made with: the model's `defaults`, each replaced by the call's
    own (`given`) unless that is None (which means "not set"); the call's `stop` among them."""
    options = {k: v for k, v in defaults.items() if v is not None}
    options.update((k, v) for k, v in given.items() if v is not None)
    if stop:
        options["stop"] = stop
    return options


def key_material(
    model: Served,
    messages: Sequence[Message],
    tools: Sequence[ToolInfo] | None,
    options: Mapping[str, Any],
) -> str:
    """The text the key hashes: canonical JSON of what changes the reply."""
    relevant = {k: v for k, v in options.items() if k not in IRRELEVANT_OPTIONS}
    stop = relevant.get("stop")
    if isinstance(stop, str):
        relevant["stop"] = [stop]
    material = {
        "v": KEY_VERSION,
        "model": relevant.pop("model", None) or model.name,
        "provider": model.provider,
        "server": model.server_url,
        "messages": [message.to_dict(request=True) for message in messages],
        "tools": [tool.to_dict() for tool in tools] if tools else None,
        "options": relevant,
    }
    return json.dumps(
        material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
    )


def cache_key(
    model: Served,
    messages: Sequence[Message],
    tools: Sequence[ToolInfo] | None,
    options: Mapping[str, Any],
) -> str:
    """The key of a call: the SHA-256 of its `key_material`, in hex."""
    material = key_material(model, messages, tools, options)
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def _plain(value: object) -> object:
    """A value JSON has no form for, in one: a mapping as a dict, a set sorted, anything else
    by its repr (two such values then match only when they print the same)."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(map(repr, value))
    return repr(value)
