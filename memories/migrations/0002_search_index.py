"""Full-text search index: an FTS5 external-content table over memories_memory + triggers.

SQLite only: on PostgreSQL the operations do nothing (its full-text search gets its own
migration operation, guarded the same way). The SQL is frozen here on purpose; the same
statements live in memories/search/sqlite.py for `manage.py search_index --rebuild`, and
tests/memories/test_search_index.py checks the two stay identical.
See memories/search/sqlite.py for why each choice was made.
"""

from django.db import migrations


class SQLiteOnlyRunSQL(migrations.RunSQL):
    """RunSQL, applied (and reversed) only when the database is SQLite."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "sqlite":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "sqlite":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


TAGS_NEW = "(SELECT group_concat(value, ' ') FROM json_each(new.tags))"
TAGS_OLD = "(SELECT group_concat(value, ' ') FROM json_each(old.tags))"
NEW_VALUES = f"new.rowid, new.key, {TAGS_NEW}, new.content, replace(new.mind_id, '_', '')"
OLD_VALUES = f"old.rowid, old.key, {TAGS_OLD}, old.content, replace(old.mind_id, '_', '')"

CREATE_TABLE = (
    "CREATE VIRTUAL TABLE memories_memory_fts USING fts5("
    "key, tags, content, mind_id, "
    "content='memories_memory', content_rowid='rowid', "
    "tokenize='porter unicode61 remove_diacritics 2')"
)

TRIGGER_INSERT = (
    "CREATE TRIGGER memories_memory_fts_ai AFTER INSERT ON memories_memory BEGIN "
    "INSERT INTO memories_memory_fts(rowid, key, tags, content, mind_id) "
    f"VALUES ({NEW_VALUES}); END"
)

TRIGGER_DELETE = (
    "CREATE TRIGGER memories_memory_fts_ad AFTER DELETE ON memories_memory BEGIN "
    "INSERT INTO memories_memory_fts(memories_memory_fts, rowid, key, tags, content, mind_id) "
    f"VALUES ('delete', {OLD_VALUES}); END"
)

TRIGGER_UPDATE = (
    "CREATE TRIGGER memories_memory_fts_au AFTER UPDATE ON memories_memory "
    "WHEN old.rowid IS NOT new.rowid OR old.key IS NOT new.key OR old.tags IS NOT new.tags "
    "OR old.content IS NOT new.content OR old.mind_id IS NOT new.mind_id BEGIN "
    "INSERT INTO memories_memory_fts(memories_memory_fts, rowid, key, tags, content, mind_id) "
    f"VALUES ('delete', {OLD_VALUES}); "
    "INSERT INTO memories_memory_fts(rowid, key, tags, content, mind_id) "
    f"VALUES ({NEW_VALUES}); END"
)

FILL_EXISTING = (
    "INSERT INTO memories_memory_fts(rowid, key, tags, content, mind_id) "
    "SELECT m.rowid, m.key, (SELECT group_concat(value, ' ') FROM json_each(m.tags)), "
    "m.content, replace(m.mind_id, '_', '') FROM memories_memory AS m"
)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0001_initial"),
    ]

    operations = [
        SQLiteOnlyRunSQL(
            sql=[CREATE_TABLE, TRIGGER_INSERT, TRIGGER_DELETE, TRIGGER_UPDATE, FILL_EXISTING],
            reverse_sql=[
                "DROP TRIGGER IF EXISTS memories_memory_fts_au",
                "DROP TRIGGER IF EXISTS memories_memory_fts_ad",
                "DROP TRIGGER IF EXISTS memories_memory_fts_ai",
                "DROP TABLE IF EXISTS memories_memory_fts",
            ],
        ),
    ]
