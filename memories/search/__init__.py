"""Full-text search over a mind's memories; `selectors.memory_search` is what callers use.

- query.py    turns what a person typed into a `ParsedQuery` (and a safe FTS5 expression);
- sqlite.py   is the SQLite FTS5 backend (index DDL, the MATCH query, rebuild and check);
- postgres.py is the PostgreSQL backend (tsvector column, triggers, GIN index): same answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from django.db import DEFAULT_DB_ALIAS, connections

from memories.models import Memory
from memories.search.query import MAX_QUERY_CHARS, SearchQueryError, parse_query

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "SearchHit",
    "SearchPage",
    "SearchQueryError",
    "backend",
    "parse_query",
]

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


@dataclass(frozen=True)
class SearchHit:
    memory: Memory
    score: float  # higher is better (negated bm25 on SQLite, ts_rank on PostgreSQL)
    snippet: str  # matched words marked «like this»


@dataclass(frozen=True)
class SearchPage:
    query: str
    hits: list[SearchHit]
    total: int  # every match after filters, not only this page


def backend(using: str = DEFAULT_DB_ALIAS) -> ModuleType:
    """The search backend module for the database `using`: sqlite or postgres."""
    vendor = connections[using].vendor
    if vendor == "sqlite":
        from memories.search import sqlite

        return sqlite
    if vendor == "postgresql":
        from memories.search import postgres

        return postgres
    raise NotImplementedError(f"Full-text search is not implemented for {vendor}.")
