"""PostgresStore: runs' states in PostgreSQL (psycopg 3, the `chainkit[postgres]` extra), for
runs resumed on any machine."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

from chainkit._errors import StoreConfigError
from chainkit._store import Database, open_postgres
from chainkit.checkpoints import _lease as leases
from chainkit.checkpoints._sql_store import SQLStore
from chainkit.checkpoints.errors import CheckpointConfigError

if TYPE_CHECKING:
    from chainkit._store.postgres import PostgresDatabase


class PostgresStore(SQLStore):
    """Keeps each run as a row and each of its steps as a row, in the PostgreSQL database at
    `dsn` (a libpq connection string or URL), or in a PostgreSQL database opened already
    (`chainkit.open_database`) and shared with other stores: then `reconnect_seconds` is the
    database's, and closing the store leaves it open. A save is one transaction. A run is held by
    one store at a time, for `lease_seconds` after each save, with a lease in its row naming
    the holding process: a hold whose process died (or whose machine rebooted) is taken over
    at once, one held on another machine once it expired.

    A connection the server dropped (a restart, a failover, an idle timeout) is opened again
    and what was being done is done again, for up to `reconnect_seconds`: every operation is
    safe to repeat (a save writes the same state again; a save the server committed but whose
    acknowledgement was lost with the connection is found stored as this save wrote it, and
    counts as done). Past `reconnect_seconds`, StoreUnavailableError; a refusal no retry
    cures (a login, a schema, a full disk) raises StoreError at once. No message, nor the
    repr, shows the DSN's password.
    """

    def __init__(
        self,
        dsn: str | Database,
        *,
        lease_seconds: float = leases.DEFAULT_SECONDS,
        reconnect_seconds: float = 10.0,
    ) -> None:
        if not isinstance(reconnect_seconds, int | float) or not (
            0 <= reconnect_seconds < math.inf
        ):
            raise CheckpointConfigError(
                f"reconnect_seconds must be seconds >= 0, got {reconnect_seconds!r}"
            )
        leases.checked_seconds(lease_seconds)
        if isinstance(dsn, Database):
            if dsn.dialect != "postgresql":
                raise CheckpointConfigError(
                    f"PostgresStore takes a PostgreSQL database, not {dsn!r}: use SQLiteStore"
                )
            self.reconnect_seconds = cast("PostgresDatabase", dsn).reconnect_seconds
            super().__init__(dsn, f"PostgresStore({dsn.where})", lease_seconds, owned=False)
            return
        self.reconnect_seconds = float(reconnect_seconds)
        try:
            database = open_postgres(dsn, reconnect_seconds=reconnect_seconds)
        except StoreConfigError as refused:
            raise CheckpointConfigError(f"PostgresStore: {refused}") from None
        try:
            super().__init__(database, f"PostgresStore({database.where})", lease_seconds, True)
        except BaseException:
            database.close()
            raise
