"""Keyword search over memories that are no rows of the database (a mind as of a moment,
memories/as_of.py): the SQLite backend's own rules (the query as `to_fts5` writes it, the
same tokenizer, column weights, tie order and snippets) run on an FTS5 table in a private
in-memory SQLite database, whichever database the service runs on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing

from memories.models import Memory
from memories.search import SearchHit, SearchPage
from memories.search.query import ParsedQuery, to_fts5
from memories.search.sqlite import (
    SNIPPET_CLOSE,
    SNIPPET_ELLIPSIS,
    SNIPPET_OPEN,
    SNIPPET_TOKENS,
    WEIGHTS,
    content_snippet,
)

_CREATE = (
    "CREATE VIRTUAL TABLE found USING fts5(key, tags, content, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
_RANK = f"bm25(found, {WEIGHTS['key']}, {WEIGHTS['tags']}, {WEIGHTS['content']})"
# Best match first; equal scores: the newer memory first, as the backend orders them.
_SEARCH = (
    f"SELECT rowid, -{_RANK}, snippet(found, 2, ?, ?, ?, ?) FROM found "
    f"WHERE found MATCH ? ORDER BY {_RANK}, rowid DESC"
)


def keyword_search_memories(
    memories: Sequence[Memory], *, q: str, parsed: ParsedQuery, limit: int, offset: int
) -> SearchPage:
    """A page of the keyword matches of `parsed` among `memories` (already filtered), best
    first, each with its score and snippet, and the total."""
    # Oldest first, so that a larger rowid is a newer memory, as in the memories table.
    ordered = sorted(memories, key=lambda m: (m.created_at, m.pk))
    with closing(sqlite3.connect(":memory:")) as db:
        db.execute(_CREATE)
        db.executemany(
            "INSERT INTO found(rowid, key, tags, content) VALUES (?, ?, ?, ?)",
            [
                (number, _text(m.key), _text(" ".join(m.tags)), _text(m.content))
                for number, m in enumerate(ordered, 1)
            ],
        )
        snippet = (SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS, SNIPPET_TOKENS)
        found = db.execute(_SEARCH, (*snippet, to_fts5(parsed))).fetchall()
    hits = [
        SearchHit(
            ordered[rowid - 1],
            score=score,
            snippet=content_snippet(marked, ordered[rowid - 1].content),
        )
        for rowid, score, marked in found[offset : offset + limit]
    ]
    return SearchPage(query=q, hits=hits, total=len(found), mode="keyword")


def _text(value: str) -> str:
    """Text SQLite can take: a lone surrogate (which no UTF-8 holds) as a replacement mark."""
    return value.encode("utf-8", "replace").decode("utf-8")
