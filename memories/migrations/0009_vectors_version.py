"""The mind's vectors version: one row per mind, moved by triggers on every change to its
vectors, so the search cache checks it is current with one read by key (it counted the
mind's vectors before, a scan that grows with the mind). The vectors' index loses
`embedded_at`, which only that count read.

The triggers' SQL is frozen here; memories/search/semantic.py holds the same statements
(VERSION_TRIGGERS) for `ensure_version_triggers`, and tests/memories/test_search_semantic.py
checks the two agree.
"""

import django.db.models.deletion
from django.db import migrations, models

VECTORS, VERSIONS = "memories_memoryvector", "memories_vectorsversion"
BUMP = (
    f"INSERT INTO {VERSIONS} (mind_id, version) VALUES (new.mind_id, 1) "
    f"ON CONFLICT (mind_id) DO UPDATE SET version = {VERSIONS}.version + 1"
)
TRIGGERS = {
    "sqlite": {
        "memories_vectors_version_ai": (
            f"CREATE TRIGGER IF NOT EXISTS memories_vectors_version_ai AFTER INSERT ON "
            f"{VECTORS} BEGIN {BUMP}; END"
        ),
        "memories_vectors_version_au": (
            f"CREATE TRIGGER IF NOT EXISTS memories_vectors_version_au AFTER UPDATE ON "
            f"{VECTORS} BEGIN {BUMP}; UPDATE {VERSIONS} SET version = version + 1 "
            "WHERE mind_id = old.mind_id AND old.mind_id <> new.mind_id; END"
        ),
        "memories_vectors_version_ad": (
            f"CREATE TRIGGER IF NOT EXISTS memories_vectors_version_ad AFTER DELETE ON "
            f"{VECTORS} BEGIN UPDATE {VERSIONS} SET version = version + 1 "
            "WHERE mind_id = old.mind_id; END"
        ),
    },
    "postgresql": {
        "memories_vectors_version": (
            "CREATE OR REPLACE FUNCTION memories_vectors_version() RETURNS trigger "
            "LANGUAGE plpgsql AS $fn$ BEGIN "
            f"IF TG_OP <> 'DELETE' THEN {BUMP}; END IF; "
            f"IF TG_OP = 'DELETE' OR old.mind_id <> new.mind_id THEN UPDATE {VERSIONS} "
            "SET version = version + 1 WHERE mind_id = old.mind_id; END IF; "
            "RETURN NULL; END $fn$"
        ),
        "memories_vectors_version_aiud": (
            "CREATE OR REPLACE TRIGGER memories_vectors_version_aiud AFTER INSERT OR UPDATE OR "
            f"DELETE ON {VECTORS} FOR EACH ROW EXECUTE FUNCTION memories_vectors_version()"
        ),
    },
}
DROP = {
    "sqlite": [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS["sqlite"]],
    "postgresql": [
        f"DROP TRIGGER IF EXISTS memories_vectors_version_aiud ON {VECTORS}",
        "DROP FUNCTION IF EXISTS memories_vectors_version()",
    ],
}


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        # Minds that already have vectors start at 1: no process has cached them under it.
        cursor.execute(
            f"INSERT INTO {VERSIONS} (mind_id, version) SELECT DISTINCT mind_id, 1 FROM {VECTORS}"
        )
        for sql in TRIGGERS.get(vendor, {}).values():
            cursor.execute(sql)


def backwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for sql in DROP.get(schema_editor.connection.vendor, []):
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0008_review_and_updated_indexes_cover_their_pages"),
        ("minds", "0003_forget_keys_in_sessions"),
    ]

    operations = [
        migrations.CreateModel(
            name="VectorsVersion",
            fields=[
                (
                    "mind",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="minds.mind",
                    ),
                ),
                ("version", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RemoveIndex(model_name="memoryvector", name="memory_vector_mind_idx"),
        migrations.AddIndex(
            model_name="memoryvector",
            index=models.Index(fields=["mind", "model"], name="memory_vector_mind_idx"),
        ),
        migrations.RunPython(forwards, backwards),
    ]
