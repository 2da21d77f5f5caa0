"""The embedding outbox: writes queue jobs in their own transaction, the worker turns them
into vectors of the memory's current text (memories/embeddings/outbox.py, memories/tasks.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from memories import services
from memories.actors import Actor
from memories.embeddings import get_embedder, outbox
from memories.embeddings.text import embedding_text, text_hash
from memories.models import EmbeddingJob, Memory, MemoryVector
from tests.factories import remember


@pytest.fixture
def actor():
    return Actor(kind="agent", name="mk_test")


def jobs():
    return set(EmbeddingJob.objects.values_list("memory_id", flat=True))


def vector_of(memory):
    return MemoryVector.objects.get(memory_id=memory.pk)


def test_a_store_queues_a_job_and_the_worker_embeds_its_text(mind, actor):
    memory = remember(mind, "pet_dog", "Has a border collie named Pixel", tags=["pets"])
    assert jobs() == {memory.pk}
    assert not MemoryVector.objects.exists()

    assert outbox.embed_pending() == 1

    assert jobs() == set()
    vector = vector_of(memory)
    memory.refresh_from_db()
    text = embedding_text(memory)
    assert text == "pet dog: Has a border collie named Pixel (tags: pets)"
    assert vector.text_hash == text_hash(text)
    assert vector.model == get_embedder().model
    assert vector.mind_id == mind.pk
    stored = np.frombuffer(bytes(vector.vector), dtype=np.float32)
    assert np.allclose(stored, get_embedder().embed_documents([text])[0], atol=1e-6)


def test_a_sync_queues_every_new_memory_in_one_batch(mind, actor):
    items = [{"category": "note", "key": f"note_{i}", "content": f"note {i}"} for i in range(70)]
    results = services.memory_upsert_many(mind=mind, actor=actor, items=items)
    assert jobs() == {r.memory.pk for r in results}
    assert outbox.embed_pending() == 70  # two batches of at most BATCH_SIZE
    assert MemoryVector.objects.filter(mind=mind).count() == 70 and not jobs()


def test_an_edit_of_the_text_after_embedding_re_embeds(mind, actor):
    memory = remember(mind, "pet_dog", "Has a border collie")
    outbox.embed_pending()
    old_hash = vector_of(memory).text_hash

    services.memory_update(memory=memory, actor=actor, content="Has a black cat")

    # The old vector is gone with the write: search never uses a vector of an old text.
    assert not MemoryVector.objects.filter(memory_id=memory.pk).exists()
    assert jobs() == {memory.pk}
    outbox.embed_pending()
    memory.refresh_from_db()
    assert vector_of(memory).text_hash == text_hash(embedding_text(memory)) != old_hash
    assert not jobs()


@pytest.mark.parametrize("change", [{"key": "pet_cat"}, {"tags": ["animals"]}])
def test_a_new_key_or_new_tags_re_embed(mind, actor, change):
    memory = remember(mind, "pet_dog", "Has a border collie")
    outbox.embed_pending()
    services.memory_update(memory=memory, actor=actor, **change)
    assert jobs() == {memory.pk}
    assert not MemoryVector.objects.filter(memory_id=memory.pk).exists()


def test_an_edit_outside_the_text_keeps_the_vector(mind, actor):
    memory = remember(mind, "pet_dog", "Has a border collie")
    outbox.embed_pending()
    services.memory_update(memory=memory, actor=actor, priority="high", confidence=0.9)
    assert not jobs()
    assert MemoryVector.objects.filter(memory_id=memory.pk).exists()


def test_a_delete_removes_vector_and_job(mind, actor):
    embedded = remember(mind, "one", "first")
    outbox.embed_pending()
    queued = remember(mind, "two", "second")
    services.memory_delete(memory=embedded, actor=actor)
    services.memory_delete(memory=queued, actor=actor)
    assert not MemoryVector.objects.exists()
    assert not jobs()


def test_jobs_of_memories_deleted_with_their_mind_are_dropped(mind, actor):
    remember(mind, "one", "first")
    Memory.objects.filter(mind=mind).delete()  # as a mind's deletion does: no service call
    assert len(jobs()) == 1
    assert outbox.embed_pending() == 0
    assert not jobs() and not MemoryVector.objects.exists()


def test_a_job_queued_again_while_embedding_stays_for_the_next_batch(mind, actor):
    memory = remember(mind, "pet_dog", "Has a border collie")
    real = get_embedder()

    class EditsMeanwhile:
        model = real.model
        dimensions = real.dimensions
        edited = False

        def embed_documents(self, texts):
            if not self.edited:  # the memory changes while its old text is being embedded
                self.edited = True
                services.memory_update(memory=memory, actor=actor, content="Has a black cat")
            return real.embed_documents(texts)

        def embed_query(self, text):
            return real.embed_query(text)

    embedder = EditsMeanwhile()
    first = outbox.embed_batch(embedder)
    assert (first.taken, first.stored, first.requeued) == (1, 0, 1)
    assert jobs() == {memory.pk} and not MemoryVector.objects.exists()

    outbox.embed_pending(embedder=embedder)
    memory.refresh_from_db()
    assert vector_of(memory).text_hash == text_hash(embedding_text(memory))
    assert not jobs()


def test_embeddings_off_queues_nothing(mind, actor, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    memory = remember(mind, "pet_dog", "Has a border collie")
    services.memory_update(memory=memory, actor=actor, content="Has a cat")
    assert not jobs()
    assert outbox.embed_pending() == 0


def test_embeddings_off_still_drops_the_vector_of_a_changed_text(mind, actor, settings):
    # Turned on again, the worker's start queues what has no vector: none may be stale.
    memory = remember(mind, "pet_dog", "Has a border collie")
    outbox.embed_pending()
    settings.SYNAPSE_EMBEDDINGS = "off"
    services.memory_update(memory=memory, actor=actor, content="Has a cat")
    assert not MemoryVector.objects.exists()


def test_queue_missing_queues_memories_without_a_vector_of_the_model(mind, stranger_mind, actor):
    embedded = remember(mind, "one", "first")
    outbox.embed_pending()
    MemoryVector.objects.filter(memory_id=embedded.pk).update(model="an-older-model")
    missing = remember(mind, "two", "second")
    EmbeddingJob.objects.all().delete()  # as if the jobs had been lost
    elsewhere = remember(stranger_mind.mind, "three", "third")
    EmbeddingJob.objects.filter(memory_id=elsewhere.pk).delete()

    model = get_embedder().model
    assert outbox.queue_missing(model=model, mind_id=mind.pk) == 2
    assert jobs() == {embedded.pk, missing.pk}
    assert outbox.queue_missing(model=model) == 1  # the others are queued already
    assert outbox.queue_missing(model=model) == 0
    outbox.embed_pending()
    assert set(MemoryVector.objects.values_list("model", flat=True)) == {model}
    assert MemoryVector.objects.count() == 3


def test_the_commit_of_a_write_wakes_the_worker(mind, actor, django_capture_on_commit_callbacks):
    # Tests run huey's tasks at once (tests/conftest.py): the wake-up embeds on the spot.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        memory = remember(mind, "pet_dog", "Has a border collie")
    assert callbacks
    assert vector_of(memory).text_hash == text_hash(embedding_text(memory))
    assert not jobs()


def test_a_write_that_queues_nothing_wakes_no_one(mind, actor, django_capture_on_commit_callbacks):
    memory = remember(mind, "pet_dog", "Has a border collie")
    with django_capture_on_commit_callbacks() as callbacks:
        services.memory_update(memory=memory, actor=actor, priority="high")
    assert not callbacks
