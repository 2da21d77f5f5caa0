"""Vectors for pgvector: an `embedding vector` column on memories_memoryvector, HNSW-indexed.

PostgreSQL only, and only where the `vector` extension is available (installed on the
server); otherwise nothing happens and search by meaning scores the BLOBs with numpy
(memories/search/semantic.py). With it, memories/search/pgvector.py asks the database for
the nearest vectors instead. Why each choice:

- The BLOB stays the record (the worker, SQLite and the numpy path read it); a trigger
  fills `embedding` from it on every insert and on every update of it, so no write path can
  leave the two apart, and the rows already there are filled here. The decoding is exact:
  the float32 values (little-endian, as numpy writes them on every platform we run on) are
  rebuilt from their sign, exponent and mantissa; a NaN or infinity gives no embedding.
- Untyped `vector`: models differ in size (an embeddings API's model may have 768 or 1536
  dimensions). An HNSW index needs one size, so it is a partial expression index for the
  bundled model's 384; vectors of other sizes are searched exactly, by the (mind, model)
  index, which for one mind is a small scan.
- STORAGE MAIN keeps `embedding` in the row and sends the BLOB to TOAST instead: a row with
  both is over PostgreSQL's inline limit, and search reads only the embedding.
- Cosine distance (`vector_cosine_ops`): the vectors are L2-normalised, so it is the numpy
  path's dot product.
- The extension is not dropped on the way back: other tables may use it.

To turn it on later (the package installed on the server after this ran): migrate memories
back to 0006, then forward again.
"""

import re

from django.db import migrations, transaction

FUNCTION = "memories_vector_from_float32"
TRIGGER_FUNCTION = "memories_memoryvector_embedding"
TRIGGER = "memories_memoryvector_embedding_biu"
INDEX = "memory_vector_hnsw_384"

FORWARD = [
    "ALTER TABLE memories_memoryvector ADD COLUMN embedding vector",
    "ALTER TABLE memories_memoryvector ALTER COLUMN embedding SET STORAGE MAIN",
    f"CREATE FUNCTION {FUNCTION}(data bytea) RETURNS vector LANGUAGE sql IMMUTABLE STRICT "
    "PARALLEL SAFE AS $fn$ SELECT CASE WHEN bool_or(e = 255) THEN NULL ELSE array_agg(((u & "
    "8388607) + CASE WHEN e = 0 THEN 0 ELSE 8388608 END) * 2::float8 ^ (greatest(e, 1) - 150) "
    "* (1 - 2 * (u >> 31)))::real[]::vector END FROM (SELECT u, (u >> 23) & 255 AS e FROM "
    "(SELECT get_byte(data, 4 * i) | (get_byte(data, 4 * i + 1) << 8) | (get_byte(data, 4 * i "
    "+ 2) << 16) | (get_byte(data, 4 * i + 3)::bigint << 24) AS u FROM generate_series(0, "
    "length(data) / 4 - 1) AS i OFFSET 0) AS w OFFSET 0) AS f $fn$",
    f"CREATE FUNCTION {TRIGGER_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN "
    f"NEW.embedding := {FUNCTION}(NEW.vector); RETURN NEW; END $fn$",
    f"CREATE TRIGGER {TRIGGER} BEFORE INSERT OR UPDATE OF vector ON memories_memoryvector "
    f"FOR EACH ROW EXECUTE FUNCTION {TRIGGER_FUNCTION}()",
    f"UPDATE memories_memoryvector SET embedding = {FUNCTION}(vector)",
    f"CREATE INDEX {INDEX} ON memories_memoryvector USING hnsw ((embedding::vector(384)) "
    "vector_cosine_ops) WHERE vector_dims(embedding) = 384",
]

BACKWARD = [
    f"DROP INDEX IF EXISTS {INDEX}",
    f"DROP TRIGGER IF EXISTS {TRIGGER} ON memories_memoryvector",
    f"DROP FUNCTION IF EXISTS {TRIGGER_FUNCTION}()",
    "ALTER TABLE memories_memoryvector DROP COLUMN IF EXISTS embedding",
    f"DROP FUNCTION IF EXISTS {FUNCTION}(bytea)",
]


def _has_embedding_column(cursor) -> bool:
    cursor.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('memories_memoryvector') "
        "AND attname = 'embedding' AND NOT attisdropped"
    )
    return cursor.fetchone() is not None


def forwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None or _has_embedding_column(cursor):
            return
        try:
            with transaction.atomic(using=connection.alias):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                (version,) = cursor.fetchone()
                if tuple(int(n) for n in re.findall(r"\d+", version)[:2]) < (0, 5):
                    raise ValueError(f"pgvector {version} has no HNSW index (0.5 has)")
        except Exception as exc:  # not allowed to (pgvector is not a trusted extension), or old
            print(f"\n  pgvector left off: {str(exc).strip().splitlines()[0]}")
            return
    for statement in FORWARD:
        schema_editor.execute(statement)


def backwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        if not _has_embedding_column(cursor):
            return
    for statement in BACKWARD:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0006_vectors_and_embedding_jobs"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards, elidable=False),
    ]
