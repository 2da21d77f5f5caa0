"""The embedding outbox: which memories need a vector, and the work that gives them one.

A write that creates a memory or changes its embedded text (text.py) records an
EmbeddingJob row in its own transaction (`queue`) and deletes the memory's old vector there
too, so a vector, when there is one, is always of the memory's current text. The background
worker (memories/tasks.py, on huey) runs `embed_pending`: it reads a batch of jobs, embeds
their texts in one call outside any transaction, then in one transaction stores the vectors
and deletes exactly the jobs it handled, those whose `queued_at` is still the one it read.
A job written again meanwhile (the memory changed while it was being embedded) stays for the
next batch; a crash at any moment leaves the jobs, so the work is done again, never lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from memories import rows
from memories.embeddings import Embedder, EmbeddingsError, get_embedder
from memories.embeddings.text import embedding_text, text_hash
from memories.embeddings.vectors import Vectors
from memories.models import EmbeddingJob, Memory, MemoryVector

logger = logging.getLogger(__name__)

# Jobs per batch: one embedding call and one short transaction each.
BATCH_SIZE = 64

# Called after the commit of a write that queued jobs: wakes the worker (memories/apps.py).
_wakers: list[Callable[[], None]] = []


def on_queued(waker: Callable[[], None]) -> None:
    """Call `waker` after each commit that queued embedding jobs."""
    if waker not in _wakers:
        _wakers.append(waker)


def enabled() -> bool:
    return str(settings.SYNAPSE_EMBEDDINGS) != "off"


def written(*, created: Sequence[Memory], changed: Sequence[Memory]) -> None:
    """In a write's transaction: queue the memories created and those whose embedded text
    `changed` (when embeddings are on), and delete the vectors of the changed ones."""
    if enabled():
        queue([*created, *changed])
    if changed:
        # After the jobs' upsert: a worker storing one of these holds its job row, so this
        # waits for it and then deletes what it stored (the same order as the worker's).
        MemoryVector.objects.filter(memory_id__in=[m.pk for m in changed]).delete()


def queue(memories: Sequence[Memory]) -> None:
    """Record, in the caller's transaction, that these memories need a (new) vector: one
    statement. A memory already queued keeps one job, stamped anew."""
    if not memories:
        return
    now = timezone.now()
    rows.upsert(
        EmbeddingJob,
        [{"memory_id": m.pk, "mind_id": m.mind_id, "queued_at": now} for m in memories],
        conflict="memory_id",
        replace=["queued_at"],
    )
    if _wakers:
        transaction.on_commit(_wake)


def _wake() -> None:
    for waker in _wakers:
        try:
            waker()
        except Exception:  # the write is committed: its jobs wait for the next run
            logger.exception("Could not wake the embedding worker")


def queue_missing(*, model: str, mind_id: str | None = None) -> int:
    """Queue every memory (of one mind, when given) with no vector of `model`: at worker
    start, so a new model re-embeds in the background. One INSERT ... SELECT; jobs already
    queued stay as they are. Returns the number queued."""
    quote = connection.ops.quote_name
    job, memory, vector = (quote(m._meta.db_table) for m in (EmbeddingJob, Memory, MemoryVector))
    queued_at = EmbeddingJob._meta.get_field("queued_at").get_db_prep_save(
        timezone.now(), connection
    )
    # SQLite needs the WHERE to tell the upsert's ON CONFLICT from a join's ON.
    sql = (
        f"INSERT INTO {job} (memory_id, mind_id, queued_at) "
        f"SELECT m.id, m.mind_id, %s FROM {memory} m "
        f"LEFT JOIN {vector} v ON v.memory_id = m.id AND v.model = %s "
        "WHERE v.memory_id IS NULL" + (" AND m.mind_id = %s" if mind_id else "") + " "
        "ON CONFLICT (memory_id) DO NOTHING"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [queued_at, model, *([mind_id] if mind_id else [])])
        count = max(int(cursor.rowcount), 0)
    if count and _wakers:
        transaction.on_commit(_wake)
    return count


def pending_count(*, mind_id: str | None = None) -> int:
    """Jobs queued (of one mind, when given)."""
    jobs = EmbeddingJob.objects.all()
    return (jobs.filter(mind_id=mind_id) if mind_id else jobs).count()


def current_model() -> str | None:
    """The name vectors are stored under now; None when embeddings are off or the model
    cannot load (the log says why)."""
    try:
        embedder = get_embedder()
    except EmbeddingsError:
        logger.exception("The embedding model cannot load")
        return None
    return None if embedder is None else embedder.model


def embedding_counts(*, mind_id: str) -> dict[str, int]:
    """The mind's memories with a vector of the current model (`embedded`: a vector is
    always of its memory's current text) and those queued for one (`pending_embedding`)."""
    model = current_model()
    embedded = 0
    if model is not None:
        embedded = MemoryVector.objects.filter(mind_id=mind_id, model=model).count()
    return {
        "embedded": embedded,
        "pending_embedding": EmbeddingJob.objects.filter(mind_id=mind_id).count(),
    }


@dataclass
class Batch:
    """What one `embed_batch` did: jobs taken, vectors stored, jobs of deleted memories
    dropped, jobs left for later because their memory changed while it was embedded."""

    taken: int = 0
    stored: int = 0
    dropped: int = 0
    requeued: int = 0


def embed_pending(
    *,
    embedder: Embedder | None = None,
    batch_size: int = BATCH_SIZE,
    mind_id: str | None = None,
    progress: Callable[[Batch], None] | None = None,
) -> int:
    """Embed queued memories, oldest first, batch after batch until no job is left (of one
    mind, when given). Returns the number of vectors stored. Nothing when embeddings are off.
    """
    embedder = embedder or get_embedder()
    if embedder is None:
        return 0
    stored = 0
    started = time.monotonic()
    while True:
        batch = embed_batch(embedder, batch_size=batch_size, mind_id=mind_id)
        if not batch.taken:
            if stored:
                logger.info(
                    "Embedded %d memories with %s in %.2fs",
                    stored,
                    embedder.model,
                    time.monotonic() - started,
                )
            return stored
        stored += batch.stored
        if progress is not None:
            progress(batch)


def embed_batch(
    embedder: Embedder, *, batch_size: int = BATCH_SIZE, mind_id: str | None = None
) -> Batch:
    """One batch of the oldest jobs: read, embed (outside any transaction), store."""
    jobs = EmbeddingJob.objects.order_by("queued_at", "memory_id")
    if mind_id:
        jobs = jobs.filter(mind_id=mind_id)
    read = dict(jobs.values_list("memory_id", "queued_at")[:batch_size])
    if not read:
        return Batch()
    memories = list(
        Memory.objects.filter(pk__in=list(read)).only("id", "mind_id", "key", "content", "tags")
    )
    texts = [embedding_text(m) for m in memories]
    vectors = embedder.embed_documents(texts) if texts else None
    try:
        return _store(embedder.model, read, memories, texts, vectors)
    except IntegrityError:
        # A memory deleted with its whole mind meanwhile: the next batch drops its job.
        logger.info("Embedding batch raced with a deletion; it is taken again")
        return Batch(taken=len(read), requeued=len(read))


def _store(
    model: str,
    read: dict[str, datetime],
    memories: list[Memory],
    texts: list[str],
    vectors: Vectors | None,
) -> Batch:
    with transaction.atomic():
        # Locked (PostgreSQL; SQLite's write transaction serialises anyway): a write that
        # re-queues one of these waits for this commit, then deletes the vector stored here.
        current = dict(
            EmbeddingJob.objects.select_for_update()
            .filter(memory_id__in=list(read))
            .values_list("memory_id", "queued_at")
        )
        handled = {pk for pk, queued_at in current.items() if read[pk] == queued_at}
        now = timezone.now()
        vector_rows = [
            {
                "memory_id": memory.pk,
                "mind_id": memory.mind_id,
                "model": model,
                "text_hash": text_hash(text),
                "vector": vector.astype("float32").tobytes(),
                "embedded_at": now,
            }
            for memory, text, vector in zip(
                memories, texts, [] if vectors is None else vectors, strict=True
            )
            if memory.pk in handled
        ]
        rows.upsert(
            MemoryVector,
            vector_rows,
            conflict="memory",
            replace=["mind", "model", "text_hash", "vector", "embedded_at"],
        )
        _delete_jobs({pk: read[pk] for pk in handled})
    return Batch(
        taken=len(read),
        stored=len(vector_rows),
        dropped=len(handled) - len(vector_rows),
        requeued=len(read) - len(handled),
    )


def _delete_jobs(jobs: dict[str, datetime]) -> None:
    if not jobs:
        return
    match = Q()
    for memory_id, queued_at in jobs.items():
        match |= Q(memory_id=memory_id, queued_at=queued_at)
    EmbeddingJob.objects.filter(match).delete()


def forget(memory_ids: Sequence[str]) -> None:
    """Drop the jobs of memories being deleted, in the deleting transaction."""
    if memory_ids:
        EmbeddingJob.objects.filter(memory_id__in=list(memory_ids)).delete()
