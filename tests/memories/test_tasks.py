"""The background tasks (memories/tasks.py): waking the worker, and what a worker's start does."""

from __future__ import annotations

import os
import threading

from huey.contrib.djhuey import HUEY

from memories import tasks
from memories.models import EmbeddingJob, MemoryVector
from tests.factories import remember


def test_wake_enqueues_embed_pending_from_the_waker_thread(monkeypatch):
    monkeypatch.setattr(HUEY, "_immediate", False)
    enqueued = threading.Event()
    monkeypatch.setattr(tasks, "embed_pending", enqueued.set)
    monkeypatch.setattr(tasks._waker, "_pid", None)
    tasks.wake()
    assert enqueued.wait(timeout=30)
    assert tasks._waker._pid == os.getpid()


def test_a_worker_start_queues_and_embeds_memories_without_a_vector(mind, monkeypatch):
    # The test's transaction must stay open: the start hook closes connections in a worker.
    monkeypatch.setattr(tasks, "close_old_connections", lambda: None)
    memory = remember(mind, "a", "first")
    EmbeddingJob.objects.all().delete()  # as after a model change, or a restore
    tasks.queue_missing_at_start()
    assert MemoryVector.objects.filter(memory_id=memory.pk).exists()
    assert not EmbeddingJob.objects.exists()
