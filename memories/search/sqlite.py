"""The SQLite backend: an FTS5 index over memories_memory, kept in sync by triggers.

The DDL is created by migration 0002_search_index and repeated here for
`manage.py search_index --rebuild`. Design notes: docs/internals.md#the-sqlite-fts5-backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.backends.utils import CursorWrapper

from memories.filters import MemoryFilters, order_sql
from memories.models import Memory
from memories.search.query import ParsedQuery, to_fts5

FTS_TABLE = "memories_memory_fts"
TRIGGER_NAMES = ("memories_memory_fts_ai", "memories_memory_fts_ad", "memories_memory_fts_au")

# bm25 column weights, in FTS column order (key, tags, content, mind_id). A key or a tag is
# a short label the writer chose to say what the memory is *about*, so a word there counts
# more than a word the content mentions in passing. Only modestly more: keys also carry the
# category prefix ("preference_…", "project_…"), which matches generic question words
# ("prefer", "project"), and a strong boost lets those outrank the content that answers.
# bench/search_eval.py compares this choice with equal weights and a strong boost
# (docs/performance.md). The mind token scores nothing: every candidate has it.
WEIGHTS = {"key": 1.5, "tags": 1.5, "content": 1.0}

SNIPPET_OPEN = "«"
SNIPPET_CLOSE = "»"
SNIPPET_ELLIPSIS = "…"
SNIPPET_TOKENS = 16


def content_lead(content: str) -> str:
    """The start of a content, as a snippet of it with no word matched."""
    words = content.split()
    head = " ".join(words[:SNIPPET_TOKENS])
    return head + (SNIPPET_ELLIPSIS if len(words) > SNIPPET_TOKENS else "")


def content_snippet(marked: str | None, content: str) -> str:
    """A search snippet: always of the content, its matched words marked, or its start
    (`content_lead`) when only the key or a tag matched. Every face shows the key beside the
    snippet: a snippet of the key would show it twice and hide what the memory says."""
    return marked if marked and SNIPPET_OPEN in marked else content_lead(content)


TAGS_TEXT = "(SELECT group_concat(value, ' ') FROM json_each({row}.tags))"
MIND_TOKEN = "replace({row}.mind_id, '_', '')"


def mind_token(mind_id: str) -> str:
    """What MIND_TOKEN makes of a mind id, computed in Python for the MATCH expression."""
    return mind_id.replace("_", "")


def _values(row: str) -> str:
    return (
        f"{row}.rowid, {row}.key, {TAGS_TEXT.format(row=row)}, {row}.content, "
        f"{MIND_TOKEN.format(row=row)}"
    )


CREATE_TABLE_SQL = (
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5("
    "key, tags, content, mind_id, "
    "content='memories_memory', content_rowid='rowid', "
    "tokenize='porter unicode61 remove_diacritics 2')"
)

TRIGGERS_SQL = (
    f"CREATE TRIGGER memories_memory_fts_ai AFTER INSERT ON memories_memory BEGIN "
    f"INSERT INTO {FTS_TABLE}(rowid, key, tags, content, mind_id) "
    f"VALUES ({_values('new')}); END",
    f"CREATE TRIGGER memories_memory_fts_ad AFTER DELETE ON memories_memory BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key, tags, content, mind_id) "
    f"VALUES ('delete', {_values('old')}); END",
    # Only when an indexed value changes: verifying or re-prioritising does not reindex.
    f"CREATE TRIGGER memories_memory_fts_au AFTER UPDATE ON memories_memory "
    f"WHEN old.rowid IS NOT new.rowid OR old.key IS NOT new.key OR old.tags IS NOT new.tags "
    f"OR old.content IS NOT new.content OR old.mind_id IS NOT new.mind_id BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key, tags, content, mind_id) "
    f"VALUES ('delete', {_values('old')}); "
    f"INSERT INTO {FTS_TABLE}(rowid, key, tags, content, mind_id) "
    f"VALUES ({_values('new')}); END",
)

FILL_SQL = (
    f"INSERT INTO {FTS_TABLE}(rowid, key, tags, content, mind_id) "
    f"SELECT {_values('m')} FROM memories_memory AS m"
)

DROP_SQL = (
    *(f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGER_NAMES),
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
)

# Three steps: `matched` ranks every match of the mind (bm25 must run where the MATCH is)
# and is counted for `total`; `page` keeps the rows shown; only those get a snippet, which
# re-reads and re-tokenizes the text. CROSS JOIN fixes the join order: the index drives,
# each hit is fetched by rowid. (Letting SQLite start from the mind's rows would run the
# MATCH once per memory of the mind.)
#
# Snippets need the MATCH in the query that computes them. Two ways, same rows and order:
# - by rowid: the expression is evaluated once per page row, seeking to that rowid: cheap
#   for whole words, but FTS5 re-expands a prefix (`deplo*`) over the whole index each time;
# - in one pass: evaluate the expression once more over all the mind's matches and keep
#   the page's rows.
# `search` and `snippets` pick by-rowid unless the query has a prefix term (`_one_pass`).
_SEARCH_HEAD = f"""
WITH matched AS MATERIALIZED (
    SELECT {FTS_TABLE}.rowid AS hit_rowid,
           bm25({FTS_TABLE}, {{key:f}}, {{tags:f}}, {{content:f}}, 0.0) AS hit_rank
    FROM {FTS_TABLE} CROSS JOIN memories_memory AS m ON m.rowid = {FTS_TABLE}.rowid
    WHERE {FTS_TABLE} MATCH %s AND m.mind_id = %s {{filters}}
),
page AS MATERIALIZED (
    SELECT hit_rowid, hit_rank FROM matched {{page_join}}
    ORDER BY {{order}} LIMIT %s OFFSET %s
)
SELECT m.*, -page.hit_rank AS search_score, (SELECT count(*) FROM matched) AS search_total,
       snippet({FTS_TABLE}, 2, '{SNIPPET_OPEN}', '{SNIPPET_CLOSE}', '{SNIPPET_ELLIPSIS}',
               {SNIPPET_TOKENS}) AS search_snippet
"""
# Best match first; equal scores (rare: same words, same lengths): the newer memory first.
RANK_ORDER = "hit_rank, hit_rowid DESC"
PAGE_RANK_ORDER = "page.hit_rank, page.hit_rowid DESC"

SEARCH_SQL_BY_ROWID = f"""{_SEARCH_HEAD}
FROM page
CROSS JOIN {FTS_TABLE} ON {FTS_TABLE}.rowid = page.hit_rowid
CROSS JOIN memories_memory AS m ON m.rowid = page.hit_rowid
WHERE {FTS_TABLE} MATCH %s
ORDER BY {{final_order}}
"""

SEARCH_SQL_ONE_PASS = f"""{_SEARCH_HEAD}
FROM {FTS_TABLE}
CROSS JOIN page ON page.hit_rowid = {FTS_TABLE}.rowid
CROSS JOIN memories_memory AS m ON m.rowid = page.hit_rowid
WHERE {FTS_TABLE} MATCH %s
ORDER BY {{final_order}}
"""


class SearchColumns(TypedDict):
    """The columns a search query adds to each memory it reads (both backends)."""

    search_score: float
    search_total: int
    search_snippet: str | None


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    SearchRow = WithAnnotations[Memory, SearchColumns]


@dataclass
class Hits:
    memories: list[SearchRow]  # each with .search_score, .search_snippet
    total: int


def match_expression(*, mind_id: str, parsed: ParsedQuery, tags: Sequence[str] = ()) -> str:
    """The whole MATCH: the mind's token AND (each tag's words in `tags`) AND the user query.

    The tag part only narrows early; the exact tag test is the filter in SQL, since
    "docker compose" also matches the tags ["docker", "compose"].
    """
    token = mind_token(mind_id).replace('"', '""')
    narrow = "".join(
        ' AND tags : "' + tag.replace('"', '""') + '"'
        for tag in tags
        if any(ch.isalnum() for ch in tag)
    )
    return f'mind_id : "{token}"{narrow} AND ({to_fts5(parsed)})'


def search(
    *,
    mind_id: str,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    sort: str | None,
    limit: int,
    offset: int,
    now: datetime,
) -> Hits:
    """Run one search: the only place a MATCH is executed, every value a bound parameter.

    Best match first, or in the order SORTS[sort] names.
    """
    expression = match_expression(mind_id=mind_id, parsed=parsed, tags=filters.all_tags)
    where, params = filters.sql(now=now, db=connection)
    template = SEARCH_SQL_ONE_PASS if _one_pass(parsed) else SEARCH_SQL_BY_ROWID
    if sort is None:
        page_join, order, final_order = "", RANK_ORDER, PAGE_RANK_ORDER
    else:
        page_join = "CROSS JOIN memories_memory AS m ON m.rowid = matched.hit_rowid"
        order = final_order = order_sql(sort)
    sql = template.format(
        filters=where, page_join=page_join, order=order, final_order=final_order, **WEIGHTS
    )
    found = Memory.objects.raw(sql, [expression, mind_id, *params, limit, offset, expression])
    rows = cast("list[SearchRow]", list(found))
    for memory in rows:
        memory.search_snippet = content_snippet(memory.search_snippet, memory.content)
    if not rows and offset:  # past the last page: still say how many there are
        return Hits([], _count(expression, mind_id, where, params))
    return Hits(rows, rows[0].search_total if rows else 0)


RANKING_SQL = f"""
SELECT m.id, -bm25({FTS_TABLE}, {{key:f}}, {{tags:f}}, {{content:f}}, 0.0) AS score
FROM {FTS_TABLE} CROSS JOIN memories_memory AS m ON m.rowid = {FTS_TABLE}.rowid
WHERE {FTS_TABLE} MATCH %s AND m.mind_id = %s {{filters}}
ORDER BY score DESC, m.rowid DESC LIMIT %s
"""

_SNIPPET_COLUMNS = f"""
SELECT m.id, snippet({FTS_TABLE}, 2, '{SNIPPET_OPEN}', '{SNIPPET_CLOSE}', '{SNIPPET_ELLIPSIS}',
                     {SNIPPET_TOKENS})
"""
# Snippets of given memories, the two ways `search` has (above): by rowid, or in one pass.
SNIPPETS_SQL_BY_ROWID = f"""
WITH page AS MATERIALIZED (SELECT rowid AS hit_rowid FROM memories_memory WHERE id IN ({{marks}}))
{_SNIPPET_COLUMNS}
FROM page
CROSS JOIN {FTS_TABLE} ON {FTS_TABLE}.rowid = page.hit_rowid
CROSS JOIN memories_memory AS m ON m.rowid = page.hit_rowid
WHERE {FTS_TABLE} MATCH %s
"""
SNIPPETS_SQL_ONE_PASS = f"""
{_SNIPPET_COLUMNS}
FROM {FTS_TABLE} CROSS JOIN memories_memory AS m ON m.rowid = {FTS_TABLE}.rowid
WHERE m.id IN ({{marks}}) AND {FTS_TABLE} MATCH %s
"""


def ranking(
    *, mind_id: str, parsed: ParsedQuery, filters: MemoryFilters, limit: int, now: datetime
) -> list[tuple[str, float]]:
    """The best `limit` matches as (memory id, score), in `search`'s order, without the
    rows or snippets (hybrid search fuses these ids, then reads only the page)."""
    expression = match_expression(mind_id=mind_id, parsed=parsed, tags=filters.all_tags)
    where, params = filters.sql(now=now, db=connection)
    with connection.cursor() as cursor:
        cursor.execute(
            RANKING_SQL.format(filters=where, **WEIGHTS), [expression, mind_id, *params, limit]
        )
        return [(memory_id, float(score)) for memory_id, score in cursor.fetchall()]


# `ranking`'s best, with how many match in all and which of some ids do, in one pass.
RANKING_COUNTED_SQL = f"""
WITH matched AS MATERIALIZED (
    SELECT m.id AS hit_id, m.rowid AS hit_rowid,
           bm25({FTS_TABLE}, {{key:f}}, {{tags:f}}, {{content:f}}, 0.0) AS hit_rank
    FROM {FTS_TABLE} CROSS JOIN memories_memory AS m ON m.rowid = {FTS_TABLE}.rowid
    WHERE {FTS_TABLE} MATCH %s AND m.mind_id = %s {{filters}}
)
SELECT hit_id, -hit_rank, (SELECT count(*) FROM matched),
       (SELECT group_concat(hit_id, ' ') FROM matched WHERE hit_id IN ({{marks}}))
FROM matched ORDER BY hit_rank, hit_rowid DESC LIMIT %s
"""


def ranking_counted(
    *,
    mind_id: str,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    limit: int,
    among: list[str],
    now: datetime,
) -> tuple[list[tuple[str, float]], int, set[str]]:
    """`ranking`, and with it how many match in all and which of `among` match."""
    expression = match_expression(mind_id=mind_id, parsed=parsed, tags=filters.all_tags)
    where, params = filters.sql(now=now, db=connection)
    marks = ", ".join(["%s"] * len(among)) or "NULL"
    sql = RANKING_COUNTED_SQL.format(filters=where, marks=marks, **WEIGHTS)
    with connection.cursor() as cursor:
        cursor.execute(sql, [expression, mind_id, *params, *among, limit])
        rows = cursor.fetchall()
    if not rows:
        return [], 0, set()
    _, _, total, found = rows[0]
    ranked = [(memory_id, float(score)) for memory_id, score, _, _ in rows]
    return ranked, total, set(found.split()) if found else set()


def snippets(*, mind_id: str, parsed: ParsedQuery, memories: list[Memory]) -> dict[str, str]:
    """The snippet `search` would give each of these memories (all matches of `parsed`)."""
    if not memories:
        return {}
    expression = match_expression(mind_id=mind_id, parsed=parsed)
    marks = ", ".join(["%s"] * len(memories))
    template = SNIPPETS_SQL_ONE_PASS if _one_pass(parsed) else SNIPPETS_SQL_BY_ROWID
    sql = template.format(marks=marks)
    by_id = {m.pk: m for m in memories}
    with connection.cursor() as cursor:
        cursor.execute(sql, [*by_id, expression])
        return {pk: content_snippet(marked, by_id[pk].content) for pk, marked in cursor.fetchall()}


def passing(
    *, mind_id: str, parsed: ParsedQuery, filters: MemoryFilters, ids: list[str], now: datetime
) -> set[str]:
    """Which of `ids` are the mind's memories passing `filters` and the query's constraints:
    every quoted phrase present, no excluded term (search by meaning finds the rest)."""
    if not ids:
        return set()
    where, params = filters.sql(now=now, db=connection)
    marks = ", ".join(["%s"] * len(ids))
    # `+m.mind_id`: still the guard, but not an index to scan the whole mind by; the ids
    # are looked up by primary key.
    sql = (
        f"SELECT m.id FROM memories_memory AS m WHERE m.id IN ({marks}) AND +m.mind_id = %s {where}"
    )
    params = [*ids, mind_id, *params]
    matching = f" AND m.rowid %s (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %%s)"
    if parsed.required:  # the phrases, less the exclusions: to_fts5 writes the NOT
        constraint = ParsedQuery(required=parsed.required, excluded=parsed.excluded)
        sql += matching % "IN"
        params.append(match_expression(mind_id=mind_id, parsed=constraint))
    elif parsed.excluded:  # FTS5 has no unary NOT: leave out what matches any excluded term
        sql += matching % "NOT IN"
        excluded = ParsedQuery(optional=parsed.excluded)
        params.append(match_expression(mind_id=mind_id, parsed=excluded))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}


def matching_ids_sql(*, mind_id: str, parsed: ParsedQuery) -> tuple[str, list[Any]]:
    """A query of the ids of the mind's memories matching `parsed` (filters aside), with its
    parameters: for a list that also holds other memories (`pk__in` one or the other)."""
    sql = (
        f"SELECT m.id FROM {FTS_TABLE} CROSS JOIN memories_memory AS m "
        f"ON m.rowid = {FTS_TABLE}.rowid WHERE {FTS_TABLE} MATCH %s AND m.mind_id = %s"
    )
    return sql, [match_expression(mind_id=mind_id, parsed=parsed), mind_id]


def _one_pass(parsed: ParsedQuery) -> bool:
    """Snippets in one pass, not by rowid: a prefix term, which FTS5 would re-expand over
    the whole index for every rowid it seeks (see SEARCH_SQL_ONE_PASS)."""
    return any(term.prefix for term in parsed.terms)


def _count(expression: str, mind_id: str, where: str, params: list[Any]) -> int:
    sql = (
        f"SELECT count(*) FROM {FTS_TABLE} CROSS JOIN memories_memory AS m "
        f"ON m.rowid = {FTS_TABLE}.rowid WHERE {FTS_TABLE} MATCH %s AND m.mind_id = %s {where}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [expression, mind_id, *params])
        total: int = cursor.fetchone()[0]
        return total


# --- maintenance -------------------------------------------------------------------------


def existing(cursor: CursorWrapper, kind: str, names: Iterable[str]) -> set[str]:
    """Which of `names` the database's schema has, of `kind` (table, trigger …)."""
    names = list(names)
    marks = ", ".join(["%s"] * len(names))
    cursor.execute(
        f"SELECT name FROM sqlite_master WHERE type = %s AND name IN ({marks})", [kind, *names]
    )
    return {row[0] for row in cursor.fetchall()}


def rebuild_index(*, using: str = DEFAULT_DB_ALIAS) -> int:
    """Recreate the index table and triggers from scratch; return how many memories it holds.

    A later migration that makes Django rebuild memories_memory (most field changes on
    SQLite) loses the triggers and renumbers rowids; `ensure_index` calls this at the end of
    that `migrate`.
    """
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        for statement in (*DROP_SQL, CREATE_TABLE_SQL, *TRIGGERS_SQL, FILL_SQL):
            cursor.execute(statement)
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE}_docsize")
        indexed: int = cursor.fetchone()[0]
        return indexed


def ensure_index(*, using: str = DEFAULT_DB_ALIAS) -> bool:
    """Rebuild the index if its table or a trigger is missing; True if it had to.

    Run after every `migrate` (post_migrate, memories/apps.py). Does nothing before
    migration 0002 created the index, or after it was reversed.
    """
    from django.db.migrations.recorder import MigrationRecorder

    db = connections[using]
    if db.vendor != "sqlite":
        return False
    with db.cursor() as cursor:
        present = existing(cursor, "table", [FTS_TABLE]) | existing(
            cursor, "trigger", TRIGGER_NAMES
        )
    if len(present) == 1 + len(TRIGGER_NAMES):
        return False
    applied = MigrationRecorder(db).applied_migrations()
    if ("memories", "0002_search_index") not in applied:
        return False
    rebuild_index(using=using)
    return True


def index_problems(*, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Everything wrong with the index, as sentences; empty when it is sound.

    1. the table and its three triggers exist; 2. FTS5's own integrity-check; 3. the index
    equals one built afresh from memories_memory right now (every term at the same rowid,
    column and position), which catches renumbered rowids and writes missed while the
    triggers were gone. FTS5's `integrity-check` with rank 1 would compare against the
    content table itself, but it reads the raw JSON of `tags`, not what we index.
    """
    problems: list[str] = []
    with connections[using].cursor() as cursor:
        if not existing(cursor, "table", [FTS_TABLE]):
            return [f"The search index table {FTS_TABLE} does not exist."]
        missing = sorted(set(TRIGGER_NAMES) - existing(cursor, "trigger", TRIGGER_NAMES))
        if missing:
            problems.append(f"Triggers missing (the index stops following writes): {missing}.")
        try:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('integrity-check')")
        except Exception as exc:  # FTS5 reports corruption as a generic database error
            problems.append(f"FTS5 integrity-check failed: {exc}.")
            return problems
        problems.extend(_compare_with_fresh_index(cursor))
    return problems


def _compare_with_fresh_index(cursor: CursorWrapper) -> list[str]:
    fresh = "temp.memories_memory_fts_check"
    statements_drop = [
        "DROP TABLE IF EXISTS temp.memories_fts_check_live_terms",
        "DROP TABLE IF EXISTS temp.memories_fts_check_fresh_terms",
        f"DROP TABLE IF EXISTS {fresh}",
    ]
    for statement in statements_drop:
        cursor.execute(statement)
    try:
        # Contentless: only the index is built, with the live table's tokenizer.
        cursor.execute(
            f"CREATE VIRTUAL TABLE {fresh} USING fts5(key, tags, content, mind_id, "
            "content='', tokenize='porter unicode61 remove_diacritics 2')"
        )
        cursor.execute(
            f"INSERT INTO {fresh}(rowid, key, tags, content, mind_id) "
            f"SELECT {_values('m')} FROM main.memories_memory AS m"
        )
        cursor.execute(
            "CREATE VIRTUAL TABLE temp.memories_fts_check_live_terms "
            f"USING fts5vocab(main, {FTS_TABLE}, instance)"
        )
        cursor.execute(
            "CREATE VIRTUAL TABLE temp.memories_fts_check_fresh_terms "
            "USING fts5vocab(temp, memories_memory_fts_check, instance)"
        )
        cursor.execute(
            "SELECT count(*) FROM (SELECT term, doc, col, offset FROM "
            "temp.memories_fts_check_live_terms EXCEPT SELECT term, doc, col, offset FROM "
            "temp.memories_fts_check_fresh_terms)"
        )
        stale = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM (SELECT term, doc, col, offset FROM "
            "temp.memories_fts_check_fresh_terms EXCEPT SELECT term, doc, col, offset FROM "
            "temp.memories_fts_check_live_terms)"
        )
        missing = cursor.fetchone()[0]
    finally:
        for statement in statements_drop:
            cursor.execute(statement)
    if stale or missing:
        return [
            f"The index differs from the memories table: {stale} indexed words no longer "
            f"match a memory, {missing} words of memories are not indexed. "
            "Run `manage.py search_index --rebuild`."
        ]
    return []
