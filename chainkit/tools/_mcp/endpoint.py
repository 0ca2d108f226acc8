"""Where an MCP server is: a command to start over stdio, or a streamable HTTP URL.

Checked when MCPTools is built, before anything is started, so a wrong argument fails at once and
names what was expected. Headers and environment values are never shown: they may hold keys.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from chainkit._redact import redact, url_without_credentials
from chainkit.tools.errors import ToolConfigError, ToolTypeError

# RFC 9110: a header name is a token; a value, visible ASCII, spaces and tabs.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A checked server address; `str()` gives it as it may appear in errors and reprs."""

    command: tuple[str, ...] | None
    url: str | None
    env: dict[str, str] | None = field(default=None, repr=False)
    cwd: str | None = None
    headers: dict[str, str] | None = field(default=None, repr=False)

    def __str__(self) -> str:
        if self.command is not None:
            return redact(shlex.join(self.command))  # a key may be given as an argument
        assert self.url is not None
        return url_without_credentials(self.url)

    @property
    def short_name(self) -> str:
        """A name for a server that gives none: its program's, or its URL's host and port."""
        if self.command is not None:
            return os.path.basename(self.command[0])
        return urlsplit(str(self)).netloc


def endpoint(
    command: Sequence[str] | None,
    url: str | None,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    headers: Mapping[str, str] | None,
) -> Endpoint:
    """The Endpoint these MCPTools arguments describe; ToolTypeError or ToolConfigError naming
    what is wrong with them."""
    if (command is None) == (url is None):
        raise ToolTypeError(
            "MCPTools needs exactly one of command=[program, *args] (a server started over "
            'stdio) or url="http://host:port/mcp" (streamable HTTP)'
        )
    if command is not None:
        if headers is not None:
            raise ToolTypeError(
                "headers= is for url= servers; a command= server takes env= instead"
            )
        return Endpoint(
            command=_command(command),
            url=None,
            env=_strings("env", env),
            cwd=None if cwd is None else os.fspath(cwd),
        )
    assert url is not None
    if env is not None or cwd is not None:
        raise ToolTypeError("env= and cwd= are for command= servers; a url= server takes headers=")
    return Endpoint(command=None, url=_url(url), headers=_headers(headers))


def check_timeout(timeout: float) -> float:
    """`timeout` as seconds; ToolConfigError unless it is a positive, finite number."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ToolTypeError(f"timeout must be a number of seconds, got {type(timeout).__name__}")
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ToolConfigError(
            f"timeout must be a positive, finite number of seconds, got {timeout!r}"
        )
    return float(timeout)


def _command(command: Sequence[str]) -> tuple[str, ...]:
    if isinstance(command, str):
        raise ToolTypeError(
            f"command must be a list such as ['python', 'server.py'], got the string {command!r}"
        )
    words = tuple(command)
    if not words:
        raise ToolConfigError("command is empty: give the program to start and its arguments")
    for word in words:
        if not isinstance(word, str):
            raise ToolTypeError(f"command must be a list of strings, got {type(word).__name__}")
        if "\0" in word:
            raise ToolConfigError(f"command words cannot contain NUL characters: {word!r}")
    if not words[0]:
        raise ToolConfigError("command starts with an empty program name")
    return words


def _url(url: str) -> str:
    if not isinstance(url, str):
        raise ToolTypeError(f"url must be a string, got {type(url).__name__}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolConfigError(
            f"url must be an http:// or https:// address such as http://127.0.0.1:8000/mcp, "
            f"got {Endpoint(None, url)}"
        )
    return url


def _headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """The headers, each one HTTP can send: a token for a name; a value of printable ASCII
    (or tabs) without CR or LF, which would end the header and start another."""
    checked = _strings("headers", headers)
    for name, value in (checked or {}).items():
        if not _HEADER_NAME.fullmatch(name):
            raise ToolConfigError(
                f"the header name {name!r} cannot be sent: use letters, digits and !#$%&'*+-.^_`|~"
            )
        if not _HEADER_VALUE.fullmatch(value):
            # Name the header, never the value: it may be a key.
            raise ToolConfigError(
                f"the value of the header {name!r} cannot be sent: HTTP header values are "
                "printable ASCII, without line breaks or other control characters"
            )
    return checked


def _strings(what: str, values: Mapping[str, str] | None) -> dict[str, str] | None:
    if values is None:
        return None
    if not isinstance(values, Mapping):
        raise ToolTypeError(f"{what} must map names to strings, got {type(values).__name__}")
    for name, value in values.items():
        if not isinstance(name, str) or not isinstance(value, str):
            # Say which name is wrong, never the value: it may be a key.
            raise ToolTypeError(f"{what} must map strings to strings; {name!r} does not")
    return dict(values)
