"""The worker storing a batch while a write changes one of its memories, on PostgreSQL (where
the two really run side by side; SQLite's write lock takes them one after the other).

The worker holds its batch's job rows from the moment it checks them until its commit; a
write upserts the job first and only then deletes the memory's vector. So a write that
comes in between waits, then deletes the vector the worker has just stored: no vector of
an old text survives, and the job stays for the new text.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

from memories import services
from memories.actors import Actor
from memories.embeddings import get_embedder, outbox
from memories.embeddings.text import embedding_text, text_hash
from memories.models import EmbeddingJob, MemoryVector

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

ACTOR = Actor(kind="agent", name="mk_test")


def waiting_backends() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return int(cursor.fetchone()[0])


def test_a_write_during_the_workers_commit_leaves_no_vector_of_the_old_text(mind, monkeypatch):
    # Only this test's worker embeds: no wake-up runs the task at a write's commit.
    monkeypatch.setattr(outbox, "_wakers", [])
    memory = services.memory_upsert(
        mind=mind, actor=ACTOR, category="fact", key="pet", content="Has a border collie"
    ).memory
    locked, writer_done, errors = threading.Event(), threading.Event(), []
    delete_jobs = outbox._delete_jobs

    def delete_jobs_after_the_write_came(jobs):
        locked.set()  # the worker holds the job rows and has stored the vector
        deadline = time.monotonic() + 30
        while not waiting_backends() and not writer_done.is_set():
            assert time.monotonic() < deadline, "the write never came"
            time.sleep(0.01)
        delete_jobs(jobs)

    monkeypatch.setattr(outbox, "_delete_jobs", delete_jobs_after_the_write_came)

    def write():
        try:
            locked.wait(timeout=30)
            services.memory_update(memory=memory, actor=ACTOR, content="Has a black cat")
        except Exception as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            writer_done.set()
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    batch = outbox.embed_batch(get_embedder())
    writer.join(timeout=60)
    assert not errors and not writer.is_alive()
    assert batch.stored == 1  # the worker's commit went first ...

    # ... and the write, which waited for it, removed the vector of the old text.
    memory.refresh_from_db()
    assert memory.content == "Has a black cat"
    assert not MemoryVector.objects.filter(memory_id=memory.pk).exists()
    assert EmbeddingJob.objects.filter(memory_id=memory.pk).exists()

    monkeypatch.setattr(outbox, "_delete_jobs", delete_jobs)
    outbox.embed_pending()
    vector = MemoryVector.objects.get(memory_id=memory.pk)
    assert vector.text_hash == text_hash(embedding_text(memory))
    assert not EmbeddingJob.objects.exists()
