"""What search keeps of a memory after its row is gone, forgotten when it is purged."""

from __future__ import annotations

from django.db import connection

from memories.search import semantic
from memories.search.sqlite import FTS_TABLE


def search_index_forget() -> None:
    """Rewrite the keyword index without what deleted memories left in it, in the purging
    transaction. FTS5 keeps a deleted row's words in its segments until they are merged, so
    SQLite merges them all; on PostgreSQL the tsvector lives in the memory's row and goes
    with it (its dead row stays in the table's pages until VACUUM)."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")


def search_caches_forget(mind_id: str) -> None:
    """Drop this process's cached vectors of the mind (the others reread theirs at their next
    search, since the mind's vectors changed)."""
    semantic.forget_mind(mind_id)
