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
from memories.search import semantic
from tests.fake_embedder import fake_embedder  # noqa: F401

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

ACTOR = Actor(kind="agent", name="mk_test")


def waiting_backends() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return int(cursor.fetchone()[0])


def beside_the_workers_commit(monkeypatch, embedder, action) -> tuple[outbox.Batch, bool]:
    """Run one worker batch and, once it holds its job rows and has stored its vectors,
    `action` in another thread; the worker commits when `action` waits for a lock (or is
    done). The batch, and whether `action` was waiting when the worker committed."""
    locked, done, errors, waited = threading.Event(), threading.Event(), [], []
    delete_jobs = outbox._delete_jobs

    def delete_jobs_once_the_other_came(jobs):
        locked.set()
        deadline = time.monotonic() + 30
        while not waiting_backends() and not done.is_set():
            assert time.monotonic() < deadline, "the other transaction never came"
            time.sleep(0.01)
        waited.append(not done.is_set())
        delete_jobs(jobs)

    def other():
        try:
            locked.wait(timeout=30)
            action()
        except Exception as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            done.set()
            connection.close()

    monkeypatch.setattr(outbox, "_delete_jobs", delete_jobs_once_the_other_came)
    thread = threading.Thread(target=other)
    thread.start()
    batch = outbox.embed_batch(embedder)
    thread.join(timeout=60)
    monkeypatch.setattr(outbox, "_delete_jobs", delete_jobs)
    assert not errors and not thread.is_alive()
    return batch, waited == [True]


def test_a_write_during_the_workers_commit_leaves_no_vector_of_the_old_text(mind, monkeypatch):
    # Only this test's worker embeds: no wake-up runs the task at a write's commit.
    monkeypatch.setattr(outbox, "_wakers", [])
    memory = services.memory_upsert(
        mind=mind, actor=ACTOR, category="fact", key="pet", content="Has a border collie"
    ).memory

    def write():
        services.memory_update(memory=memory, actor=ACTOR, content="Has a black cat")

    batch, _ = beside_the_workers_commit(monkeypatch, get_embedder(), write)
    assert batch.stored == 1  # the worker's commit went first ...

    # ... and the write, which waited for it, removed the vector of the old text.
    memory.refresh_from_db()
    assert memory.content == "Has a black cat"
    assert not MemoryVector.objects.filter(memory_id=memory.pk).exists()
    assert EmbeddingJob.objects.filter(memory_id=memory.pk).exists()

    outbox.embed_pending()
    vector = MemoryVector.objects.get(memory_id=memory.pk)
    assert vector.text_hash == text_hash(embedding_text(memory))
    assert not EmbeddingJob.objects.exists()


@pytest.mark.usefixtures("fake_embedder")
@pytest.mark.parametrize("deleted", ["the batch's memory", "another memory of the mind"])
def test_a_delete_during_the_workers_commit_waits_for_it_without_deadlock(
    mind, monkeypatch, deleted
):
    # The worker holds its job rows, then (its vector rows stored) the mind's vectors
    # version; a delete takes the memory's job first, then the version through its vector.
    monkeypatch.setattr(outbox, "_wakers", [])
    kept = services.memory_upsert(
        mind=mind, actor=ACTOR, category="fact", key="home", content="Lives in Lisbon"
    ).memory
    outbox.embed_pending()  # `kept` has its vector; only the next memory is in the batch
    batched = services.memory_upsert(
        mind=mind, actor=ACTOR, category="fact", key="pet", content="Has a border collie"
    ).memory
    embedder = get_embedder()
    assert embedder is not None
    victim = batched if deleted == "the batch's memory" else kept
    before = semantic.mind_matrix(
        mind_id=mind.pk, model=embedder.model, dimensions=embedder.dimensions
    ).marker

    def delete():
        services.memory_delete(memory=victim, actor=ACTOR)

    batch, waited = beside_the_workers_commit(monkeypatch, embedder, delete)
    assert waited, "the delete did not wait for the worker's commit"
    assert batch.stored == 1  # the worker's commit went first, then the delete

    survivor = kept if victim is batched else batched
    assert set(MemoryVector.objects.values_list("memory_id", flat=True)) == {survivor.pk}
    assert not EmbeddingJob.objects.exists()
    matrix = semantic.mind_matrix(
        mind_id=mind.pk, model=embedder.model, dimensions=embedder.dimensions
    )
    assert matrix.ids == [survivor.pk] and matrix.marker != before
