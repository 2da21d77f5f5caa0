"""`manage.py backup PATH [--force]`: a consistent copy of the SQLite database, server running.

SQLite's online backup API copies the database as one read transaction: in WAL mode writers
go on meanwhile, and the copy is the database as of one moment (every acknowledged write up
to then, nothing half-written). The copy is written beside PATH under a temporary name,
checked (`PRAGMA integrity_check`), made owner-only and then renamed into place, so PATH is
never a partial file; a missing folder of PATH is made, owner-only. On PostgreSQL use pg_dump
(docs/operations.md).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections

from synapse_site.paths import private_dir


class Command(BaseCommand):
    help = (
        "Write a consistent copy of the SQLite database to PATH while the server runs "
        "(SQLite's online backup API). Refuses to overwrite PATH unless --force. "
        "On PostgreSQL, use pg_dump."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="Where to write the copy, e.g. backups/synapse.sqlite3")
        parser.add_argument("--force", action="store_true", help="Overwrite PATH if it exists.")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS, help="Database alias.")

    def handle(self, *args: Any, path: str, force: bool, database: str, **options: Any) -> None:
        conn = connections[database]
        if conn.vendor != "sqlite":
            raise CommandError(
                f"This database is {conn.vendor}, not SQLite: back it up with pg_dump, e.g.\n"
                '  pg_dump --format=custom --file=synapse.dump "$DATABASE_URL"\n'
                "and restore with pg_restore (docs/operations.md)."
            )
        source = Path(conn.settings_dict["NAME"]).resolve()
        target = Path(path).expanduser().resolve()
        if target == source:
            raise CommandError(f"{target} is the live database itself; pick another path.")
        if target.exists() and not force:
            raise CommandError(f"{target} exists; pass --force to overwrite it.")
        # Backups hold people's memories, like data/: a folder made here is owner-only.
        private_dir(target.parent)

        conn.ensure_connection()
        fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(fd)
        temp = Path(temp_name)
        try:
            copy = sqlite3.connect(temp)
            try:
                conn.connection.backup(copy)  # all pages in one step: one consistent snapshot
                problems = copy.execute("PRAGMA integrity_check").fetchall()
                if problems != [("ok",)]:
                    raise CommandError(f"The copy failed its integrity check: {problems[:5]}")
                memories = copy.execute("SELECT count(*) FROM memories_memory").fetchone()[0]
                minds = copy.execute("SELECT count(*) FROM minds_mind").fetchone()[0]
            finally:
                copy.close()
            os.chmod(temp, 0o600)  # people's memories: owner-only, like data/
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
        size = target.stat().st_size / 1024 / 1024
        self.stdout.write(
            f"Backed up {memories} memories of {minds} minds to {target} ({size:.1f} MB)."
        )
