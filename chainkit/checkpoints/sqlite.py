"""SQLiteStore: runs' states in one SQLite file (stdlib sqlite3, WAL), for the threads and
processes of one machine."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, cast

from chainkit._store import Caller, Database, open_sqlite
from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints._sql_store import SQLStore
from chainkit.checkpoints.errors import CheckpointConfigError

if TYPE_CHECKING:
    from chainkit._store.sqlite import SQLiteDatabase


class SQLiteStore(SQLStore):
    """Keeps each run as a row and each of its steps as a row, in the SQLite database at
    `path` (":memory:" for one process's tests), or in a SQLite database opened already
    (`chainkit.open_database`) and shared with other stores: then `synchronous` and `timeout`
    are the database's, and closing the store leaves it open. A save is one transaction;
    WAL lets readers (`chainkit runs list`) in while a run writes. A run is held (`acquire`)
    by one store at a time, for `lease_seconds` after each save; a hold whose process has
    died (or whose machine rebooted) is taken over at once, any other once it expired.

    `synchronous` is SQLite's setting: "NORMAL" (the default) survives a process crash,
    "FULL" a power loss too, at the cost of a disk flush per step. `timeout` is how long (in
    seconds) a read or write waits while another connection holds the database's write lock.

    A failure of the database raises StoreError naming this store, what it was doing and the
    cause (StoreUnavailableError for a lock held past `timeout`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | Database,
        *,
        synchronous: str = "NORMAL",
        lease_seconds: float = leases.DEFAULT_SECONDS,
        timeout: float = 30.0,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise CheckpointConfigError(
                f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}"
            )
        if not isinstance(timeout, int | float) or not 0 <= timeout < math.inf:
            raise CheckpointConfigError(f"timeout must be seconds >= 0, got {timeout!r}")
        leases.checked_seconds(lease_seconds)
        if isinstance(path, Database):
            if path.dialect != "sqlite":
                raise CheckpointConfigError(
                    f"SQLiteStore takes a SQLite database, not {path!r}: use PostgresStore"
                )
            shared = cast("SQLiteDatabase", path)
            self.path, self.timeout = shared.path, shared.timeout
            super().__init__(shared, f"SQLiteStore({shared.where})", lease_seconds, owned=False)
            return
        self.path = os.fspath(path)
        self.timeout = float(timeout)
        name = f"SQLiteStore({self.path!r})"
        database = open_sqlite(self.path, synchronous=synchronous, timeout=timeout, by=Caller(name))
        try:
            super().__init__(database, name, lease_seconds, owned=True)
        except BaseException:
            database.close()
            raise
