"""A database's failure, as the StoreError a store raises for it: who could not do what, what
went wrong in words an operator acts on, and the database's own message (with any password
masked). A driver's exception never leaves the store layer as it came."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chainkit._errors import StoreError, StoreUnavailableError
from chainkit._redact import redact


@dataclass(frozen=True, slots=True)
class Caller:
    """Who uses the database, as its failures name it."""

    name: str
    """The store as messages name it: its repr, e.g. `SQLiteStore('runs.db')`."""
    tables: str = "chainkit's"
    """Its tables, for a database whose tables are not the ones it writes."""
    after: str = "what the database held before this call is intact"
    """What still holds when the database is out of reach, and how to go on."""
    bad_text: Callable[[str, UnicodeEncodeError], Exception] | None = None
    """The error for a value that is not valid Unicode (a lone surrogate), given what was
    being done; None: a StoreError."""


# SQLite's result codes (their names without "SQLITE_" and any extended suffix): what each
# means to the person who must fix it.
_SQLITE_CAUSES = {
    "READONLY": "the database file, or its folder (where SQLite keeps the -wal and -shm files), "
    "is read-only to this process: give it write access",
    "FULL": "the disk is full: free some space",
    "IOERR": "the disk failed a read or write: check the disk and its file system",
    "CORRUPT": "the file is damaged: restore it from a backup, or give the store a new path",
    "NOTADB": "the file is not a SQLite database: give the store the path of its database",
    "CANTOPEN": "the file cannot be opened (a missing folder, a folder given as the file, or "
    "no permission): check the path",
    "PERM": "this process may not open the file: check its permissions",
    "AUTH": "this process may not open the file: check its permissions",
}
_SCHEMA_WORDS = ("no such table", "no such column", "has no column named")


def _schema_cause(caller: Caller) -> str:
    return (
        f"the database's {caller.tables} tables are not the ones this version of chainkit "
        "writes (another program's tables of those names, or tables dropped while the store "
        "was open): give the store a database of its own"
    )


def sqlite_failure(caller: Caller, doing: str, error: Exception, timeout: float) -> StoreError:
    """The error `caller` raises for sqlite3's `error` while `doing` (a verb phrase)."""
    name = str(getattr(error, "sqlite_errorname", "")).removeprefix("SQLITE_").split("_")[0]
    said = f"(SQLite: {error})"
    if name in ("BUSY", "LOCKED"):
        return StoreUnavailableError(
            f"{caller.name} could not {doing}: another connection held the database's write "
            f"lock for longer than the store's timeout of {timeout:g} s {said}; "
            f"{caller.after} once it lets go, or give the store a longer timeout"
        )
    cause = _SQLITE_CAUSES.get(name)
    if cause is None and any(words in str(error) for words in _SCHEMA_WORDS):
        cause = _schema_cause(caller)
    if cause is None and "closed database" in str(error):
        cause = CLOSED
    return StoreError(f"{caller.name} could not {doing}: {cause or 'the database refused'} {said}")


CLOSED = "the store was closed (store.close()): open a new one"


def closed(caller: Caller, doing: str) -> StoreError:
    """The error for work asked of a store, or database, that was closed."""
    return StoreError(f"{caller.name} could not {doing}: {CLOSED}")


def postgres_failure(
    caller: Caller, doing: str, error: Exception, secret: str | None, unavailable: bool
) -> StoreError:
    """The error `caller` raises for psycopg's `error` while `doing`; `unavailable` when the
    server could not be reached (or lost the connection) in the time the store waits."""
    said = f"(PostgreSQL: {redact(str(error).strip(), secret)})"
    sqlstate = str(getattr(error, "sqlstate", "") or "")
    if unavailable:
        problem = (
            f"{_POSTGRES_CAUSES[sqlstate]}, still after reconnecting"
            if sqlstate == READ_ONLY
            else "the server could not be reached, or dropped the connection, and did not "
            "answer again in time"
        )
        return StoreUnavailableError(
            f"{caller.name} could not {doing}: {problem} {said}; {caller.after} once it is back"
        )
    cause = _POSTGRES_CAUSES.get(sqlstate) or _POSTGRES_CAUSES.get(sqlstate[:2])
    if cause is None and sqlstate in _SCHEMA_STATES:
        cause = _schema_cause(caller)
    if cause is None:  # libpq's refusal of a login carries no SQLSTATE: its words tell
        cause = next((c for words, c in LOGIN_REFUSALS if words in str(error)), None)
    if cause is None and "NUL (0x00)" in str(error):
        cause = _NUL_CAUSE
    return StoreError(f"{caller.name} could not {doing}: {cause or 'the server refused'} {said}")


def bad_text(caller: Caller, doing: str, error: UnicodeEncodeError) -> Exception:
    """The error for a value that is not valid Unicode (a lone surrogate)."""
    if caller.bad_text is not None:
        return caller.bad_text(doing, error)
    return StoreError(
        f"{caller.name} could not {doing}: a value is not valid Unicode text "
        f"({error.reason}), so no database can store it"
    )


READ_ONLY = "25006"
"""The SQLSTATE of a write sent to a read-only standby (after a failover, the old primary)."""
_SCHEMA_STATES = ("42P01", "42703", "42804")
"""Undefined table, undefined column, a column of another type."""
# SQLSTATE codes (whole, or their class of two characters): what each means to the operator.
_POSTGRES_CAUSES = {
    "28": "the server refused the login: check the user and password of the DSN",
    "3D": "the database or user named in the DSN does not exist: create it, or fix the DSN",
    "42501": "the DSN's user lacks a privilege on the chainkit tables: grant it",
    "53100": "the server's disk is full: free some space",
    "53": "the server ran out of a resource (memory, connections): see its log",
    READ_ONLY: "the server is a read-only standby (after a failover?): point the DSN at the "
    "primary, or list every host with target_session_attrs=read-write",
    "54000": "a value is too large for the server (an id of thousands of characters?)",
}
LOGIN_REFUSALS = (
    ("authentication failed", _POSTGRES_CAUSES["28"]),
    ("no pg_hba.conf entry", _POSTGRES_CAUSES["28"]),
    ("does not exist", _POSTGRES_CAUSES["3D"]),
)
"""The words of libpq's refusals of a login, which no retry cures."""
_NUL_CAUSE = "a text (an id, a name) holds a NUL character, which PostgreSQL cannot store"
