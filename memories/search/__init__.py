"""Search over a mind's memories: `memory_search` is the one selector every caller uses.

- query.py  turns what a person typed into a `ParsedQuery` (and a safe FTS5 expression);
- sqlite.py is the SQLite FTS5 backend (index DDL, the MATCH query, rebuild and check);
- postgres.py is the PostgreSQL backend (tsvector column, triggers, GIN index): same answers;
- api.py    is `GET /memory/search`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import ModuleType

from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from memories.models import Memory
from memories.search.query import ParsedQuery, SearchQueryError, parse_query
from minds.models import Mind

__all__ = ["MAX_LIMIT", "SearchHit", "SearchPage", "SearchQueryError", "memory_search"]

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
    parsed: ParsedQuery
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


def memory_search(
    *,
    mind: Mind,
    q: str,
    tag: str | None = None,
    category: str | None = None,
    include_expired: bool = False,
    limit: int = DEFAULT_LIMIT,
    now: datetime | None = None,
) -> SearchPage:
    """The mind's memories matching `q`, best first.

    Raises `SearchQueryError` (a 400 for the API) when `q` holds nothing searchable.
    Expired memories are left out unless `include_expired`; `tag` and `category` narrow.
    """
    parsed = parse_query(q)
    limit = max(1, min(limit, MAX_LIMIT))
    now = now or timezone.now()
    if tag and "\x00" in tag:  # no tag holds one (PostgreSQL could not even compare it)
        return SearchPage(query=q, parsed=parsed, hits=[], total=0)
    found = backend().search(
        mind_id=mind.pk,
        parsed=parsed,
        tag=tag.strip().lower() if tag else None,
        category=category,
        include_expired=include_expired,
        limit=limit,
        now=now,
    )
    hits = [
        SearchHit(memory=m, score=float(m.search_score), snippet=m.search_snippet)
        for m in found.memories
    ]
    return SearchPage(query=q, parsed=parsed, hits=hits, total=found.total)
