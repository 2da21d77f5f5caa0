"""Full-text search over a mind's memories; `selectors.memory_search` is what callers use.

- query.py    turns what a person typed into a `ParsedQuery` (and a safe FTS5 expression);
- sqlite.py   is the SQLite FTS5 backend (index DDL, the MATCH query, rebuild and check);
- postgres.py is the PostgreSQL backend (tsvector column, triggers, GIN index): same answers;
- semantic.py searches by meaning (the mind's vectors, cosine) and fuses it with keywords.
- pgvector.py searches by meaning in PostgreSQL instead, where it has pgvector (HNSW).

Modes: `keyword` (full text only), `semantic` (meaning only), `hybrid` (both, fused).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from django.db import DEFAULT_DB_ALIAS, connections

from memories.models import Memory
from memories.search.query import MAX_QUERY_CHARS, SearchQueryError, parse_query

__all__ = [
    "DEFAULT_LIMIT",
    "MATCHES",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MODES",
    "SearchHit",
    "SearchPage",
    "SearchQueryError",
    "backend",
    "parse_query",
]

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
MODES = ("hybrid", "keyword", "semantic")
# Why a result was found: its words, its meaning, or both.
MATCHES = ("keyword", "meaning", "both")


@dataclass(frozen=True)
class SearchHit:
    memory: Memory
    # Higher is better: negated bm25 on SQLite, ts_rank on PostgreSQL; the cosine by meaning;
    # hybrid: the fused score (semantic.fuse).
    score: float
    snippet: str  # matched words marked «like this» (the content's start when none matched)
    match: str = "keyword"  # one of MATCHES
    similarity: float | None = None  # the cosine, when found by meaning


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
