"""The background tasks (memories/tasks.py): waking the worker, and what a worker's start does."""

from __future__ import annotations

import os
import threading

import pytest
from huey.contrib.djhuey import HUEY

from memories import tasks
from memories.models import EmbeddingJob, MemoryVector
from tests.factories import remember


@pytest.fixture
def sent(monkeypatch):
    """Wakes as a real queue (not tests' immediate mode) would get them, counted."""
    calls = []
    # The flag only: the property's setter would swap the in-memory queue for the real one.
    monkeypatch.setattr(HUEY, "_immediate", False)
    monkeypatch.setattr(tasks, "embed_pending", lambda: calls.append(1))
    monkeypatch.setattr(tasks, "WAKE_INTERVAL", 0)
    monkeypatch.setattr(tasks, "_wanted", threading.Event())
    return calls


def test_a_burst_of_wakes_is_one_enqueue(sent, monkeypatch):
    monkeypatch.setattr(tasks, "_ensure_waker", lambda: None)  # served by hand below
    for _ in range(5):
        tasks.wake()
    assert sent == []  # the writer never enqueues itself
    tasks._serve_wake()
    assert len(sent) == 1 and not tasks._wanted.is_set()
    tasks.wake()  # a write during the interval: one more enqueue after it
    tasks._serve_wake()
    assert len(sent) == 2


def test_the_waker_thread_enqueues(monkeypatch):
    monkeypatch.setattr(HUEY, "_immediate", False)
    monkeypatch.setattr(tasks, "_wanted", threading.Event())
    monkeypatch.setattr(tasks, "_waker_pid", None)
    enqueued = threading.Event()
    monkeypatch.setattr(tasks, "embed_pending", enqueued.set)
    tasks.wake()
    assert enqueued.wait(timeout=30)
    assert tasks._waker_pid == os.getpid()


def test_a_failing_queue_does_not_fail_the_write(sent, monkeypatch, caplog):
    def down():
        raise ConnectionError("queue down")

    monkeypatch.setattr(tasks, "embed_pending", down)
    monkeypatch.setattr(tasks, "_ensure_waker", lambda: None)
    tasks.wake()
    tasks._serve_wake()  # logged, not raised: the write is committed and its jobs wait
    assert "Could not enqueue" in caplog.text


def test_a_worker_start_queues_and_embeds_memories_without_a_vector(mind, monkeypatch):
    # The test's transaction must stay open: the start hook closes connections in a worker.
    monkeypatch.setattr(tasks, "close_old_connections", lambda: None)
    memory = remember(mind, "a", "first")
    EmbeddingJob.objects.all().delete()  # as after a model change, or a restore
    tasks.queue_missing_at_start()
    assert MemoryVector.objects.filter(memory_id=memory.pk).exists()
    assert not EmbeddingJob.objects.exists()
