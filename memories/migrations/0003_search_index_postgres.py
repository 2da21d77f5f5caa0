"""Full-text search on PostgreSQL: a tsvector column on memories_memory, triggers, GIN index.

PostgreSQL only: on SQLite the operation does nothing (its FTS5 index is 0002). The SQL is
frozen here on purpose; the same statements live in memories/search/postgres.py for
`manage.py search_index --rebuild`, and tests/memories/test_search_index_postgres.py checks
the two stay identical. See memories/search/postgres.py for why each choice was made.

Needs the unaccent and btree_gin extensions (PostgreSQL's contrib package; both are
"trusted", so the database owner may create them without being a superuser).
"""

from django.db import migrations


class PostgreSQLOnlyRunSQL(migrations.RunSQL):
    """RunSQL, applied (and reversed) only when the database is PostgreSQL."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


FORWARD = [
    'CREATE EXTENSION IF NOT EXISTS unaccent',
    'CREATE EXTENSION IF NOT EXISTS btree_gin',
    'CREATE TEXT SEARCH DICTIONARY synapse_stem (TEMPLATE = snowball, LANGUAGE = english)',
    'CREATE TEXT SEARCH CONFIGURATION synapse (COPY = english)',
    'ALTER TEXT SEARCH CONFIGURATION synapse ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part, numword, numhword, hword_numpart WITH unaccent, synapse_stem',
    'ALTER TABLE memories_memory ADD COLUMN search_vector tsvector',
    'CREATE OR REPLACE FUNCTION memories_memory_search_plain(value text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$ SELECT translate(value, \'!"#$%&\'\'()*+,-./:;<=>?@[\\]^_`{|}~\', \'                                \') $fn$',
    "CREATE OR REPLACE FUNCTION memories_memory_search_document(key text, tags jsonb, content text) RETURNS tsvector LANGUAGE sql STABLE AS $fn$ SELECT ts_delete(setweight(to_tsvector('synapse', memories_memory_search_plain(coalesce(key, ''))), 'A') || 'synapsefieldgap:1'::tsvector || setweight(to_tsvector('synapse', memories_memory_search_plain(coalesce(CASE WHEN jsonb_typeof(tags) = 'array' THEN (SELECT string_agg(value, ' ') FROM jsonb_array_elements_text(tags)) END, ''))), 'B') || 'synapsefieldgap:1'::tsvector || setweight(to_tsvector('synapse', memories_memory_search_plain(coalesce(content, ''))), 'D'), 'synapsefieldgap') $fn$",
    'CREATE OR REPLACE FUNCTION memories_memory_search_vector() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN NEW.search_vector := memories_memory_search_document(NEW.key, NEW.tags, NEW.content); RETURN NEW; END $fn$',
    'CREATE TRIGGER memories_memory_search_ai BEFORE INSERT ON memories_memory FOR EACH ROW EXECUTE FUNCTION memories_memory_search_vector()',
    'CREATE TRIGGER memories_memory_search_au BEFORE UPDATE ON memories_memory FOR EACH ROW WHEN (OLD.key IS DISTINCT FROM NEW.key OR OLD.tags IS DISTINCT FROM NEW.tags OR OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION memories_memory_search_vector()',
    'UPDATE memories_memory SET search_vector = memories_memory_search_document(key, tags, content)',
    'CREATE INDEX memories_memory_search_idx ON memories_memory USING gin (mind_id, search_vector)',
]

BACKWARD = [
    'DROP TRIGGER IF EXISTS memories_memory_search_ai ON memories_memory',
    'DROP TRIGGER IF EXISTS memories_memory_search_au ON memories_memory',
    'DROP FUNCTION IF EXISTS memories_memory_search_vector()',
    'DROP INDEX IF EXISTS memories_memory_search_idx',
    'ALTER TABLE memories_memory DROP COLUMN IF EXISTS search_vector',
    'DROP FUNCTION IF EXISTS memories_memory_search_document(text, jsonb, text)',
    'DROP FUNCTION IF EXISTS memories_memory_search_plain(text)',
    'DROP TEXT SEARCH CONFIGURATION IF EXISTS synapse',
    'DROP TEXT SEARCH DICTIONARY IF EXISTS synapse_stem',
]


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0002_search_index"),
    ]

    operations = [
        PostgreSQLOnlyRunSQL(sql=FORWARD, reverse_sql=BACKWARD),
    ]
