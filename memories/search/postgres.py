"""The PostgreSQL backend: a tsvector column on memories_memory, kept by triggers, GIN-indexed.

Same answers as the SQLite FTS5 backend. The DDL is created by migration
0003_search_index_postgres and repeated here for `manage.py search_index --rebuild`.
Design notes: docs/internals.md#the-postgresql-backend.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction

from memories.filters import MemoryFilters, order_sql
from memories.models import Memory
from memories.search.query import MIN_PREFIX_CHARS, ParsedQuery, Term
from memories.search.sqlite import (
    SNIPPET_CLOSE,
    SNIPPET_ELLIPSIS,
    SNIPPET_OPEN,
    SNIPPET_TOKENS,
    WEIGHTS,
    Hits,
    content_snippet,
)

if TYPE_CHECKING:
    from memories.search.sqlite import SearchRow

CONFIG = "synapse"
VECTOR_COLUMN = "search_vector"
DOCUMENT_FUNCTION = "memories_memory_search_document"
TRIGGER_FUNCTION = "memories_memory_search_vector"
TRIGGER_NAMES = ("memories_memory_search_ai", "memories_memory_search_au")
INDEX_NAME = "memories_memory_search_idx"

PLAIN_FUNCTION = "memories_memory_search_plain"

_PUNCTUATION = string.punctuation  # the 32 ASCII punctuation characters
_TO_SPACES = str.maketrans(_PUNCTUATION, " " * len(_PUNCTUATION))


def plain_text(text: str) -> str:
    """What the index sees of `text`: ASCII punctuation turned into spaces, char for char.

    The SQL function memories_memory_search_plain does the same in the database.
    """
    return text.translate(_TO_SPACES)


# --- DDL (frozen copy in migration 0003_search_index_postgres) ----------------------------

_PLAIN_BODY = (
    "SELECT translate(value, '"
    + _PUNCTUATION.replace("'", "''")
    + "', '"
    + " " * len(_PUNCTUATION)
    + "')"
)
# `||` numbers the right vector's words on from the left one's last: a placeholder word
# between the fields, deleted afterwards, keeps the last word of one field and the first of
# the next from being adjacent, so a phrase never spans two fields (as in FTS5 columns).
FIELD_GAP = "synapsefieldgap"
_TAGS_TEXT = (
    "CASE WHEN jsonb_typeof(tags) = 'array' THEN "
    "(SELECT string_agg(value, ' ') FROM jsonb_array_elements_text(tags)) END"
)

SETUP_SQL = (
    "CREATE EXTENSION IF NOT EXISTS unaccent",
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "CREATE TEXT SEARCH DICTIONARY synapse_stem (TEMPLATE = snowball, LANGUAGE = english)",
    f"CREATE TEXT SEARCH CONFIGURATION {CONFIG} (COPY = english)",
    f"ALTER TEXT SEARCH CONFIGURATION {CONFIG} ALTER MAPPING FOR "
    "asciiword, asciihword, hword_asciipart, word, hword, hword_part, "
    "numword, numhword, hword_numpart WITH unaccent, synapse_stem",
    f"ALTER TABLE memories_memory ADD COLUMN {VECTOR_COLUMN} tsvector",
)

FUNCTIONS_SQL = (
    f"CREATE OR REPLACE FUNCTION {PLAIN_FUNCTION}(value text) RETURNS text "
    f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$ {_PLAIN_BODY} $fn$",
    f"CREATE OR REPLACE FUNCTION {DOCUMENT_FUNCTION}(key text, tags jsonb, content text) "
    "RETURNS tsvector LANGUAGE sql STABLE AS $fn$ SELECT ts_delete("
    f"setweight(to_tsvector('{CONFIG}', {PLAIN_FUNCTION}(coalesce(key, ''))), 'A') || "
    f"'{FIELD_GAP}:1'::tsvector || "
    f"setweight(to_tsvector('{CONFIG}', {PLAIN_FUNCTION}(coalesce({_TAGS_TEXT}, ''))), 'B') || "
    f"'{FIELD_GAP}:1'::tsvector || "
    f"setweight(to_tsvector('{CONFIG}', {PLAIN_FUNCTION}(coalesce(content, ''))), 'D'), "
    f"'{FIELD_GAP}') $fn$",
    f"CREATE OR REPLACE FUNCTION {TRIGGER_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $fn$ "
    f"BEGIN NEW.{VECTOR_COLUMN} := {DOCUMENT_FUNCTION}(NEW.key, NEW.tags, NEW.content); "
    "RETURN NEW; END $fn$",
)

TRIGGERS_SQL = (
    f"CREATE TRIGGER memories_memory_search_ai BEFORE INSERT ON memories_memory "
    f"FOR EACH ROW EXECUTE FUNCTION {TRIGGER_FUNCTION}()",
    # Only when an indexed value changes: verifying or re-prioritising does not reindex.
    f"CREATE TRIGGER memories_memory_search_au BEFORE UPDATE ON memories_memory FOR EACH ROW "
    "WHEN (OLD.key IS DISTINCT FROM NEW.key OR OLD.tags IS DISTINCT FROM NEW.tags "
    "OR OLD.content IS DISTINCT FROM NEW.content) "
    f"EXECUTE FUNCTION {TRIGGER_FUNCTION}()",
)

FILL_SQL = f"UPDATE memories_memory SET {VECTOR_COLUMN} = {DOCUMENT_FUNCTION}(key, tags, content)"

INDEX_SQL = f"CREATE INDEX {INDEX_NAME} ON memories_memory USING gin (mind_id, {VECTOR_COLUMN})"

REVERSE_SQL = (
    *(f"DROP TRIGGER IF EXISTS {name} ON memories_memory" for name in TRIGGER_NAMES),
    f"DROP FUNCTION IF EXISTS {TRIGGER_FUNCTION}()",
    f"DROP INDEX IF EXISTS {INDEX_NAME}",
    f"ALTER TABLE memories_memory DROP COLUMN IF EXISTS {VECTOR_COLUMN}",
    f"DROP FUNCTION IF EXISTS {DOCUMENT_FUNCTION}(text, jsonb, text)",
    f"DROP FUNCTION IF EXISTS {PLAIN_FUNCTION}(text)",
    f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {CONFIG}",
    "DROP TEXT SEARCH DICTIONARY IF EXISTS synapse_stem",
)

MIGRATION_SQL = (*SETUP_SQL, *FUNCTIONS_SQL, *TRIGGERS_SQL, FILL_SQL, INDEX_SQL)


# --- the query ---------------------------------------------------------------------------


def _term_tsquery(term: Term) -> str | None:
    """One term as tsquery text: quoted words joined by <->, the last one `:*` for a prefix."""
    words = plain_text(term.text).split()
    if not words:
        return None
    operands = [f"'{word}'" for word in words]  # no ' or \ left: plain_text removed them
    if term.prefix:
        operands[-1] += ":*"
    expression = " <-> ".join(operands)
    if len(operands) > 1:
        expression = f"({expression})"
    # The stemmer turns a final "y" into "i" ("lazy" → "lazi"), in prefixes too, so
    # "lazy*" would miss "lazyvim": also try the prefix without its "y" (as sqlite does).
    shorter = term.text[:-1]
    if (
        term.prefix
        and term.text.endswith("y")
        and sum(ch.isalnum() for ch in shorter) >= MIN_PREFIX_CHARS
    ):
        alternative = _term_tsquery(Term(shorter, prefix=True))
        if alternative:
            expression = f"({expression} | {alternative})"
    return expression


def to_tsquery_text(parsed: ParsedQuery) -> str:
    """The to_tsquery input for a parsed query: the same logic as query.to_fts5.

    Phrases are ANDed; plain words ORed (with the phrases, so they only lift the ranking);
    exclusions as `& !(...)`. Terms with no word left (only punctuation) are skipped.
    """

    def rendered(terms: Iterable[Term]) -> list[str]:
        return [text for text in map(_term_tsquery, terms) if text]

    parts = rendered(parsed.required)
    any_of = rendered(parsed.required + parsed.optional)
    if parsed.optional and any_of:
        parts.append("(" + " | ".join(any_of) + ")")
    expression = " & ".join(parts)
    excluded = rendered(parsed.excluded)
    if expression and excluded:
        expression = f"({expression}) & !(" + " | ".join(excluded) + ")"
    return expression


_COLUMNS = ", ".join(f'm."{f.column}"' for f in Memory._meta.concrete_fields)
# ts_rank takes weights in 0..1 ({D, C, B, A}): sqlite.WEIGHTS scaled to the largest.
_TOP = max(WEIGHTS.values())
_RANK_WEIGHTS = (
    f"'{{{WEIGHTS['content'] / _TOP:.4f}, 0.0, "
    f"{WEIGHTS['tags'] / _TOP:.4f}, {WEIGHTS['key'] / _TOP:.4f}}}'"
)
# ts_rank divides by the document's length (flag 2), as bm25 discounts long documents: the
# closest to SQLite's ranking on bench/search_eval.py of the normalizations tried
# (docs/performance.md).
_RANK_NORMALIZATION = 2
_TSQUERY = f"to_tsquery('{CONFIG}', %s)"
_HEADLINE = (
    f"StartSel={SNIPPET_OPEN}, StopSel={SNIPPET_CLOSE}, MaxWords={SNIPPET_TOKENS}, "
    f"MinWords={SNIPPET_TOKENS // 2}, ShortWord=0, MaxFragments=1"
)

# Every match of the mind, ranked: `search` pages it, `ranking_counted` takes its best.
_MATCHED = f"""
WITH matched AS MATERIALIZED (
    SELECT m.id AS hit_id, m.created_at AS hit_created,
           ts_rank({_RANK_WEIGHTS}, m.{VECTOR_COLUMN}, {_TSQUERY}, {_RANK_NORMALIZATION})
               AS hit_rank
    FROM memories_memory AS m
    WHERE m.mind_id = %s AND m.{VECTOR_COLUMN} @@ {_TSQUERY} /*filters*/
)"""
# `matched` ranks every match of the mind and is counted for `total`; `page` keeps the rows
# shown; only those get headlines (ts_headline re-parses the text). The tsquery is written
# out where it is used (not joined from a CTE) so the planner sees a constant it can take
# to the GIN index. Equal scores (rare): the newer memory first, as on SQLite.
SEARCH_SQL = f"""{_MATCHED},
page AS MATERIALIZED (
    SELECT matched.* FROM matched /*page_join*/ ORDER BY /*order*/ LIMIT %s OFFSET %s
)
SELECT {_COLUMNS}, page.hit_rank AS search_score,
       (SELECT count(*) FROM matched) AS search_total,
       ts_headline('{CONFIG}', {PLAIN_FUNCTION}(m.content), q.query, '{_HEADLINE}')
           AS search_snippet
FROM page JOIN memories_memory AS m ON m.id = page.hit_id
CROSS JOIN (SELECT {_TSQUERY} AS query) AS q
ORDER BY /*final_order*/
"""
RANK_ORDER = "hit_rank DESC, hit_created DESC, hit_id DESC"
PAGE_RANK_ORDER = "page.hit_rank DESC, page.hit_created DESC, page.hit_id DESC"
COUNT_SQL = (
    f"SELECT count(*) FROM memories_memory AS m "
    f"WHERE m.mind_id = %s AND m.{VECTOR_COLUMN} @@ {_TSQUERY} /*filters*/"
)


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
    """Run one search: the only place a tsquery is executed, every value a bound parameter.

    Best match first, or in the order SORTS[sort] names.
    """
    expression = to_tsquery_text(parsed)
    if not expression:  # only punctuation-like words: nothing can match
        return Hits([], 0)
    where, params = filters.sql(now=now, db=connection)
    if sort is None:
        page_join, order, final_order = "", RANK_ORDER, PAGE_RANK_ORDER
    else:
        page_join = "JOIN memories_memory AS m ON m.id = matched.hit_id"
        order = final_order = order_sql(sort)
    sql = (
        SEARCH_SQL.replace("/*filters*/", where)
        .replace("/*page_join*/", page_join)
        .replace("/*order*/", order)
        .replace("/*final_order*/", final_order)
    )
    found = Memory.objects.raw(
        sql, [expression, mind_id, expression, *params, limit, offset, expression]
    )
    rows = cast("list[SearchRow]", list(found))
    for memory in rows:
        memory.search_snippet = _snippet(memory.search_snippet, memory.content)
    if not rows and offset:  # past the last page: still say how many there are
        with connection.cursor() as cursor:
            cursor.execute(COUNT_SQL.replace("/*filters*/", where), [mind_id, expression, *params])
            total: int = cursor.fetchone()[0]
            return Hits([], total)
    return Hits(rows, rows[0].search_total if rows else 0)


RANKING_SQL = f"""
SELECT m.id, ts_rank({_RANK_WEIGHTS}, m.{VECTOR_COLUMN}, {_TSQUERY}, {_RANK_NORMALIZATION})
    AS score
FROM memories_memory AS m
WHERE m.mind_id = %s AND m.{VECTOR_COLUMN} @@ {_TSQUERY} /*filters*/
ORDER BY score DESC, m.created_at DESC, m.id DESC LIMIT %s
"""

# `ranking`'s best, with how many match in all and which of some ids do, in one pass.
RANKING_COUNTED_SQL = f"""{_MATCHED}
SELECT hit_id, hit_rank, (SELECT count(*) FROM matched),
       (SELECT array_agg(hit_id) FROM matched WHERE hit_id = ANY(%s))
FROM matched ORDER BY {RANK_ORDER} LIMIT %s
"""

SNIPPETS_SQL = f"""
SELECT m.id,
       ts_headline('{CONFIG}', {PLAIN_FUNCTION}(m.content), q.query, '{_HEADLINE}')
FROM memories_memory AS m CROSS JOIN (SELECT {_TSQUERY} AS query) AS q
WHERE m.id = ANY(%s)
"""


def ranking(
    *, mind_id: str, parsed: ParsedQuery, filters: MemoryFilters, limit: int, now: datetime
) -> list[tuple[str, float]]:
    """The best `limit` matches as (memory id, score), in `search`'s order, without the
    rows or snippets (hybrid search fuses these ids, then reads only the page)."""
    expression = to_tsquery_text(parsed)
    if not expression:
        return []
    where, params = filters.sql(now=now, db=connection)
    with connection.cursor() as cursor:
        cursor.execute(
            RANKING_SQL.replace("/*filters*/", where),
            [expression, mind_id, expression, *params, limit],
        )
        return [(memory_id, float(score)) for memory_id, score in cursor.fetchall()]


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
    expression = to_tsquery_text(parsed)
    if not expression:
        return [], 0, set()
    where, params = filters.sql(now=now, db=connection)
    with connection.cursor() as cursor:
        cursor.execute(
            RANKING_COUNTED_SQL.replace("/*filters*/", where),
            [expression, mind_id, expression, *params, list(among), limit],
        )
        rows = cursor.fetchall()
    if not rows:
        return [], 0, set()
    _, _, total, found = rows[0]
    ranked = [(memory_id, float(score)) for memory_id, score, _, _ in rows]
    return ranked, total, set(found or ())


def snippets(*, mind_id: str, parsed: ParsedQuery, memories: list[Memory]) -> dict[str, str]:
    """The snippet `search` would give each of these memories (all matches of `parsed`)."""
    expression = to_tsquery_text(parsed)
    if not memories or not expression:
        return {}
    by_id = {m.pk: m for m in memories}
    with connection.cursor() as cursor:
        cursor.execute(SNIPPETS_SQL, [expression, list(by_id)])
        found = cursor.fetchall()
    return {memory_id: _snippet(content, by_id[memory_id].content) for memory_id, content in found}


def passing(
    *, mind_id: str, parsed: ParsedQuery, filters: MemoryFilters, ids: list[str], now: datetime
) -> set[str]:
    """Which of `ids` are the mind's memories passing `filters` and the query's constraints:
    every quoted phrase present, no excluded term (search by meaning finds the rest)."""
    if not ids:
        return set()
    where, params = filters.sql(now=now, db=connection)
    sql = f"SELECT m.id FROM memories_memory AS m WHERE m.mind_id = %s AND m.id = ANY(%s) {where}"
    params = [mind_id, list(ids), *params]
    if parsed.required:  # the phrases, less the exclusions
        constraint = ParsedQuery(required=parsed.required, excluded=parsed.excluded)
        expression = to_tsquery_text(constraint)
        if not expression:  # only punctuation-like words: nothing can match, as in search()
            return set()
        sql += f" AND m.{VECTOR_COLUMN} @@ {_TSQUERY}"
        params.append(expression)
    elif parsed.excluded:
        expression = to_tsquery_text(ParsedQuery(optional=parsed.excluded))
        if expression:
            sql += f" AND NOT (m.{VECTOR_COLUMN} @@ {_TSQUERY})"
            params.append(expression)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}


def matching_ids_sql(*, mind_id: str, parsed: ParsedQuery) -> tuple[str, list[Any]]:
    """A query of the ids of the mind's memories matching `parsed` (filters aside), with its
    parameters: for a list that also holds other memories (`pk__in` one or the other)."""
    expression = to_tsquery_text(parsed)
    if not expression:  # only punctuation-like words: nothing can match, as in search()
        return "SELECT m.id FROM memories_memory AS m WHERE false", []
    sql = (
        f"SELECT m.id FROM memories_memory AS m "
        f"WHERE m.mind_id = %s AND m.{VECTOR_COLUMN} @@ {_TSQUERY}"
    )
    return sql, [mind_id, expression]


def _restore(marked: str, original: str) -> str:
    """A headline of plain_text(original), with the original characters put back.

    plain_text keeps every position, so the unmarked headline is a substring of
    plain_text(original) at the same place; `…` where words before or after are left out.
    """
    bare = marked.replace(SNIPPET_OPEN, "").replace(SNIPPET_CLOSE, "")
    start = plain_text(original).find(bare)
    if start < 0:  # not expected; the translated text is still a faithful snippet
        return marked
    out, position = [], start
    for ch in marked:
        if ch in (SNIPPET_OPEN, SNIPPET_CLOSE):
            out.append(ch)
        else:
            out.append(original[position])
            position += 1
    text = "".join(out)
    # ts_headline stops at the last word: a trailing "." (or a leading quote) is kept as
    # it is, an ellipsis marks only words left out.
    head, tail = original[:start], original[position:]
    text = (SNIPPET_ELLIPSIS if _has_words(head) else head) + text
    return text + (SNIPPET_ELLIPSIS if _has_words(tail) else tail)


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _snippet(headline: str | None, content: str) -> str:
    """sqlite.content_snippet, the headline's characters put back first."""
    marked = _restore(headline, content) if headline and SNIPPET_OPEN in headline else None
    return content_snippet(marked, content)


# --- maintenance -------------------------------------------------------------------------


def rebuild_index(*, using: str = DEFAULT_DB_ALIAS) -> int:
    """Recreate the functions and triggers and recompute every memory's vector.

    Returns how many memories are indexed. For a restore that skipped triggers, or after
    `index_problems` reports something.
    """
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        for name in TRIGGER_NAMES:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON memories_memory")
        for statement in (*FUNCTIONS_SQL, *TRIGGERS_SQL, FILL_SQL):
            cursor.execute(statement)
        cursor.execute(f"SELECT count(*) FROM memories_memory WHERE {VECTOR_COLUMN} IS NOT NULL")
        indexed: int = cursor.fetchone()[0]
        return indexed


def index_problems(*, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Everything wrong with the index, as sentences; empty when it is sound.

    The column, its triggers and the GIN index exist, and every stored vector equals the
    one computed from the row now (catches writes made while the triggers were gone).
    """
    problems: list[str] = []
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns "
            "WHERE table_name = 'memories_memory' AND column_name = %s "
            "AND table_schema = current_schema()",
            [VECTOR_COLUMN],
        )
        if cursor.fetchone() is None:
            return [f"The search column memories_memory.{VECTOR_COLUMN} does not exist."]
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'memories_memory'::regclass "
            "AND tgname = ANY(%s)",
            [list(TRIGGER_NAMES)],
        )
        missing = sorted(set(TRIGGER_NAMES) - {row[0] for row in cursor.fetchall()})
        if missing:
            problems.append(f"Triggers missing (the index stops following writes): {missing}.")
        cursor.execute("SELECT 1 FROM pg_class WHERE relname = %s AND relkind = 'i'", [INDEX_NAME])
        if cursor.fetchone() is None:
            problems.append(f"The GIN index {INDEX_NAME} is missing (searches scan the table).")
        cursor.execute(
            f"SELECT count(*) FROM memories_memory WHERE {VECTOR_COLUMN} IS DISTINCT FROM "
            f"{DOCUMENT_FUNCTION}(key, tags, content)"
        )
        stale = cursor.fetchone()[0]
        if stale:
            problems.append(
                f"The index differs from the memories table: {stale} memories are indexed "
                "with old or no text. Run `manage.py search_index --rebuild`."
            )
    return problems
