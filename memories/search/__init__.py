"""Search over a mind's memories: `memory_search` is the one selector every caller uses.

- query.py  turns what a person typed into a `ParsedQuery` (and a safe FTS5 expression);
- sqlite.py is the SQLite FTS5 backend (index DDL, the MATCH query, rebuild and check);
- api.py    is `GET /memory/search`.

PostgreSQL full-text search will be a second backend behind this same function.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection
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
    score: float  # higher is better (negated bm25)
    snippet: str  # matched words marked «like this»


@dataclass(frozen=True)
class SearchPage:
    query: str
    parsed: ParsedQuery
    hits: list[SearchHit]
    total: int  # every match after filters, not only this page


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
    if connection.vendor != "sqlite":
        raise NotImplementedError("Search is implemented for SQLite only so far.")
    from memories.search import sqlite

    found = sqlite.search(
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
