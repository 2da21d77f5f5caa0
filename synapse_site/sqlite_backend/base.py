"""Django's SQLite backend, with write transactions that queue without sleeping.

Several processes write one database file: the web workers and the embedding worker. Each
write transaction begins with `BEGIN IMMEDIATE` (settings.py), which takes the file's write
lock or finds it taken. SQLite's own busy timeout then sleeps 1, 2, 5, 10 ms and more
between its tries, while a write holds the lock for about a millisecond: with two workers
writing, much of their time went to that sleep. Here `BEGIN` tries again after 50 µs,
doubling up to 1 ms, until the connection's busy timeout has passed, then fails as before
("database is locked"). Every other statement keeps SQLite's own waiting.

The database file is made owner-only before SQLite opens it, whatever its folder's mode.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from django.db import OperationalError
from django.db.backends.sqlite3 import base

from synapse_site.paths import private_sqlite_file

FIRST_WAIT = 50e-6  # seconds
LONGEST_WAIT = 1e-3


class DatabaseWrapper(base.DatabaseWrapper):
    busy_timeout_ms = 0

    def get_new_connection(self, conn_params: dict[str, Any]) -> sqlite3.Connection:
        name = str(conn_params["database"])
        if name != ":memory:" and not name.startswith("file:"):
            private_sqlite_file(Path(name))
        connection: sqlite3.Connection = super().get_new_connection(conn_params)
        self.busy_timeout_ms = int(connection.execute("PRAGMA busy_timeout").fetchone()[0])
        return connection

    def _start_transaction_under_autocommit(self) -> None:
        raw = self.connection
        raw.execute("PRAGMA busy_timeout = 0")  # BEGIN answers at once: taken or busy
        try:
            deadline = time.monotonic() + self.busy_timeout_ms / 1000
            wait = FIRST_WAIT
            while True:
                try:
                    super()._start_transaction_under_autocommit()  # type: ignore[misc]  # not in the stubs
                    return
                except OperationalError as exc:
                    busy = getattr(exc.__cause__, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
                    if not busy or time.monotonic() >= deadline:
                        raise
                time.sleep(wait)
                wait = min(2 * wait, LONGEST_WAIT)
        finally:
            raw.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
