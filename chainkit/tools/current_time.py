"""CurrentTime: the current date, time and weekday, locally or in a named time zone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from chainkit.tools.base import Tool, ToolError

# strftime("%A") follows the process locale; the model should always see the same names.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MAX_ZONE_LENGTH = 64
_MAX_OFFSET = timedelta(hours=14)


class CurrentTime(Tool):
    """Returns e.g. "2025-03-14T15:09:26+08:00 Friday (Asia/Shanghai)".

    The input may name an IANA time zone ("UTC", "Asia/Shanghai", "Japan") or a fixed offset
    ("UTC+8", "GMT-05:30", "+08:00"); an unknown one ("Mars/Base", "UTC+99") is a ToolError.
    Empty input, or text that is not a zone ("now", the user's question), means local time.
    `clock` returns the current time (an aware datetime, or a naive one taken as local); tests
    pass a fixed one.
    """

    name = "current_time"
    description = (
        "Returns the current date, time and weekday (时间 几点 日期 星期 今天 现在 time date "
        'now today clock). Input: an optional time zone such as "UTC" or "Asia/Shanghai"; '
        "leave it empty for local time."
    )

    def __init__(self, *, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or _local_now

    def call(self, input: str) -> str:
        zone = parse_zone(input)
        now = self._clock()
        if zone is None:
            now, label = now.astimezone(), "local time"
        else:
            now, label = now.astimezone(zone), str(zone)
        return f"{now.isoformat(timespec='seconds')} {_WEEKDAYS[now.weekday()]} ({label})"


def _local_now() -> datetime:
    return datetime.now().astimezone()


def parse_zone(text: str) -> tzinfo | None:
    """The time zone `text` names; None for local time; ToolError for an unknown zone."""
    name = text.strip().strip("\"'`").strip()
    if not name or len(name) > _MAX_ZONE_LENGTH or not name.isascii():
        return None
    if any(char.isspace() for char in name):
        return None
    zone = _fixed_offset(name) or _zone(name) or _zone(name.upper())
    if zone is not None:
        return zone
    if _meant_as_zone(name):
        raise ToolError(
            f"unknown time zone {name!r}: give an IANA name such as 'UTC' or 'Asia/Shanghai', "
            "an offset such as 'UTC+8', or nothing for local time"
        )
    return None


def _zone(key: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # ValueError: not a valid key at all ("../x"); OSError: a directory such as "Asia".
        return None


def _meant_as_zone(name: str) -> bool:
    """Whether an unknown `name` was meant as a zone ("Asia/Shangai", "PST8", "UTC+99")
    rather than as text ("now", "today")."""
    return "/" in name or name.isupper() or name.upper().startswith(("UTC", "GMT", "+", "-"))


def _fixed_offset(name: str) -> timezone | None:
    """ "UTC+8", "GMT-05:30", "+0800" as a fixed offset; None if `name` is not one."""
    rest = name.upper()
    rest = rest.removeprefix("UTC") if rest.startswith("UTC") else rest.removeprefix("GMT")
    if rest[:1] not in ("+", "-"):
        return None
    sign, digits = rest[0], rest[1:]
    hours, colon, minutes = digits.partition(":")
    if not colon and len(hours) == 4:
        hours, minutes = hours[:2], hours[2:]
    minutes = minutes or "00"
    if not (hours.isdigit() and len(hours) <= 2 and minutes.isdigit() and len(minutes) == 2):
        return None
    offset = timedelta(hours=int(hours), minutes=int(minutes))
    if offset > _MAX_OFFSET or int(minutes) >= 60:
        raise ToolError(f"time zone offset {name!r} is out of range (at most ±14:00)")
    label = f"UTC{sign}{int(hours):02d}:{minutes}"
    return timezone(-offset if sign == "-" else offset, label)
