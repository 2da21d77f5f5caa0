"""The embedding outbox: which memories need a vector, and the work that gives them one.

A write that creates a memory or changes its embedded text (text.py) records an
EmbeddingJob row in its own transaction (`queue`) and deletes the memory's old vector there
too, so a vector, when there is one, is always of the memory's current text. The background
worker (memories/tasks.py, on huey) runs `embed_pending`: it reads a batch of jobs, embeds
their texts in one call outside any transaction, then in one transaction stores the vectors
and deletes exactly the jobs it handled, those whose `queued_at` is still the one it read.
A job written again meanwhile (the memory changed while it was being embedded) stays for the
next batch; a crash at any moment leaves the jobs, so the work is done again, never lost.

A batch serves the minds that have jobs due in turn (`_fair_jobs`): one mind's thousands of
jobs never keep another's one waiting more than a batch. When the embedding call fails and
the embedder still answers a probe, the batch is halved until each text it refuses is alone;
the others get their vectors at once. A refused job is due again later (RETRY_DELAY, doubled
each time) and after MAX_ATTEMPTS is parked: kept, with its last error, but taken by no batch
until its memory is written again or `retry_parked` (worker start, `manage.py embed`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from memories import rows
from memories.embeddings import Embedder, EmbeddingsError, get_embedder
from memories.embeddings.text import embedding_text, text_hash
from memories.embeddings.vectors import Vectors
from memories.models import EmbeddingJob, Memory, MemoryVector

# A job the embedder refuses on its own is due again after RETRY_DELAY, then twice that …;
# after MAX_ATTEMPTS refusals it is parked.
RETRY_DELAY = timedelta(seconds=30)
MAX_ATTEMPTS = 5
# Embedded when a batch fails, to tell a refused text from an embedder that answers nothing.
PROBE_TEXT = "ok"
ERROR_CHARS = 200

logger = logging.getLogger(__name__)

# Jobs per batch at most: one embedding call and one short transaction each.
BATCH_SIZE = 64
# A batch's vectors are stored together once it is embedded, so a batch is cut to what the
# embedder does in about this long at its last pace (per model, in characters per second): a
# mind's new memory waits behind another mind's flood for a batch or two, not for 64 long texts.
BATCH_SECONDS = 0.5
# What a text costs the embedder, in characters: its length up to about what a model reads,
# and a little for any text.
TEXT_COST_CAP = 1500
TEXT_COST_BASE = 50
_pace: dict[str, float] = {}
_turn: dict[str, str] = {}  # the mind that went first in this process's last batch

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
    # A job queued again starts afresh: due now, no attempts (a parked one included).
    rows.upsert(
        EmbeddingJob,
        [
            {
                "memory_id": m.pk,
                "mind_id": m.mind_id,
                "queued_at": now,
                "due_at": now,
                "attempts": 0,
                "last_error": "",
            }
            for m in memories
        ],
        conflict="memory_id",
        replace=["queued_at", "due_at", "attempts", "last_error"],
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
        f"INSERT INTO {job} (memory_id, mind_id, queued_at, due_at, attempts, last_error) "
        f"SELECT m.id, m.mind_id, %s, %s, 0, '' FROM {memory} m "
        f"LEFT JOIN {vector} v ON v.memory_id = m.id AND v.model = %s "
        "WHERE v.memory_id IS NULL" + (" AND m.mind_id = %s" if mind_id else "") + " "
        "ON CONFLICT (memory_id) DO NOTHING"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [queued_at, queued_at, model, *([mind_id] if mind_id else [])])
        count = max(int(cursor.rowcount), 0)
    if count and _wakers:
        transaction.on_commit(_wake)
    return count


def pending_count(*, mind_id: str | None = None) -> int:
    """Jobs queued and not parked (of one mind, when given)."""
    return _jobs(mind_id).filter(due_at__isnull=False).count()


def parked_count(*, mind_id: str | None = None) -> int:
    """Jobs parked after MAX_ATTEMPTS refusals (of one mind, when given)."""
    return _jobs(mind_id).filter(due_at__isnull=True).count()


def retry_parked(*, mind_id: str | None = None, now: datetime | None = None) -> int:
    """Give every parked job (of one mind, when given) MAX_ATTEMPTS more: due now, attempts
    counted afresh; its last error stays until it is stored or refused again. The number."""
    parked = _jobs(mind_id).filter(due_at__isnull=True)
    count = parked.update(due_at=now or timezone.now(), attempts=0)
    if count and _wakers:
        transaction.on_commit(_wake)
    return count


def job_counts(*, mind_id: str) -> dict[str, int]:
    """The mind's jobs queued (`pending_embedding`) and parked (`parked_embedding`): one
    query, on the index by mind."""
    counts = _jobs(mind_id).aggregate(
        pending=Count("pk", filter=Q(due_at__isnull=False)),
        parked=Count("pk", filter=Q(due_at__isnull=True)),
    )
    return {"pending_embedding": counts["pending"], "parked_embedding": counts["parked"]}


def _jobs(mind_id: str | None) -> QuerySet[EmbeddingJob]:
    jobs = EmbeddingJob.objects.all()
    return jobs.filter(mind_id=mind_id) if mind_id else jobs


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
    always of its memory's current text), those queued for one (`pending_embedding`) and
    those the embedder refused MAX_ATTEMPTS times (`parked_embedding`)."""
    model = current_model()
    embedded = 0
    if model is not None:
        embedded = MemoryVector.objects.filter(mind_id=mind_id, model=model).count()
    return {"embedded": embedded, **job_counts(mind_id=mind_id)}


@dataclass
class Batch:
    """What one `embed_batch` did: jobs taken, vectors stored, jobs of deleted memories
    dropped, jobs left for later because their memory changed while it was embedded, jobs
    refused by the embedder (and of those, parked)."""

    taken: int = 0
    stored: int = 0
    dropped: int = 0
    requeued: int = 0
    # Jobs whose text the embedder refused alone: due again later, or parked.
    refused: int = 0
    parked: int = 0
    cost: int = 0  # of the texts embedded (`_cost`)


def embed_pending(
    *,
    embedder: Embedder | None = None,
    batch_size: int = BATCH_SIZE,
    mind_id: str | None = None,
    progress: Callable[[Batch], None] | None = None,
    fair: bool = True,
    now: datetime | None = None,
) -> int:
    """Embed the jobs due, batch after batch, minds in turn (oldest first when not `fair`),
    until no job is due (of one mind, when given). Batches of at most `batch_size`, each
    about BATCH_SECONDS of the embedder's time. Returns the number of vectors stored.
    Nothing when embeddings are off. Raises the embedder's error when it answers nothing:
    the jobs stay as they were, for the next run."""
    embedder = embedder or get_embedder()
    if embedder is None:
        return 0
    stored = 0
    started = time.monotonic()
    while True:
        pace = _pace.get(embedder.model)
        began = time.monotonic()
        batch = embed_batch(
            embedder,
            batch_size=batch_size,
            mind_id=mind_id,
            fair=fair,
            now=now,
            budget=pace * BATCH_SECONDS if pace else TEXT_COST_CAP,
        )
        if batch.stored:
            _pace[embedder.model] = batch.cost / max(time.monotonic() - began, 1e-3)
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
    embedder: Embedder,
    *,
    batch_size: int = BATCH_SIZE,
    mind_id: str | None = None,
    fair: bool = True,
    now: datetime | None = None,
    budget: float | None = None,
) -> Batch:
    """One batch of the jobs due: read, embed (outside any transaction), store. A text the
    embedder refuses is found alone (the rest stored) and its job put off, or parked. With a
    `budget` (characters, `_cost`), only the first texts within it are embedded (one at
    least); the other jobs read stay as they are."""
    now = now or timezone.now()
    if mind_id or not fair:
        jobs = list(
            _jobs(mind_id).filter(due_at__lte=now).order_by("due_at", "memory_id")[:batch_size]
        )
    else:
        jobs = _fair_jobs(batch_size, now)
    if not jobs:
        return Batch()
    read = {job.memory_id: job for job in jobs}
    found = Memory.objects.filter(pk__in=list(read)).only("id", "mind_id", "key", "content", "tags")
    by_id = {memory.pk: memory for memory in found}
    items: list[tuple[Memory, str]] = []
    cost = 0
    taken: dict[str, EmbeddingJob] = {}
    for job in jobs:
        memory = by_id.get(job.memory_id)
        if memory is not None:
            text = embedding_text(memory)
            if items and budget is not None and cost + _cost(text) > budget:
                break  # this job and those after it stay as they are, for the next batch
            items.append((memory, text))
            cost += _cost(text)
        taken[job.memory_id] = job  # a job whose memory is gone is dropped
    read = taken
    embedding = _Embedding(embedder)
    try:
        embedding.run(items)
    except Exception:
        # The embedder answers nothing (not even the probe): what it answered before is
        # stored, the other jobs stay as they are for the next run.
        if embedding.done:
            done = {memory.pk: read[memory.pk].queued_at for memory, _, _ in embedding.done}
            _store_logged(embedder.model, done, embedding.done)
        raise
    handled = {pk: job.queued_at for pk, job in read.items() if pk not in embedding.refused}
    batch = _store_logged(embedder.model, handled, embedding.done)
    batch.taken = len(read)
    batch.cost = cost
    batch.refused = len(embedding.refused)
    batch.parked = _put_off(read, embedding.refused, now)
    return batch


def _cost(text: str) -> int:
    return min(len(text), TEXT_COST_CAP) + TEXT_COST_BASE


def _fair_jobs(batch_size: int, now: datetime) -> list[EmbeddingJob]:
    """Up to `batch_size` jobs due, the minds that have some in turn: the first job of each
    mind, then the second of each …, among the `batch_size` minds whose oldest job due is
    oldest, starting after the mind that went first last time; each mind's jobs in due order.

    Two statements that read the (mind_id, due_at, memory_id) index only where they use it,
    however many jobs wait: the minds, found by skipping from one mind to the next (a
    recursive CTE, one index seek per mind), with each mind's oldest job due; then each
    chosen mind's first jobs due, as many as it could get if the others had one each.
    """
    quote = connection.ops.quote_name
    table = quote(EmbeddingJob._meta.db_table)
    due = EmbeddingJob._meta.get_field("due_at").get_db_prep_value(now, connection)
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH RECURSIVE minds (mind_id) AS ("
            f" SELECT MIN(mind_id) FROM {table} WHERE due_at IS NOT NULL"
            " UNION ALL"
            f" SELECT (SELECT MIN(j.mind_id) FROM {table} j"
            "   WHERE j.due_at IS NOT NULL AND j.mind_id > m.mind_id)"
            " FROM minds m WHERE m.mind_id IS NOT NULL"
            ") SELECT mind_id FROM ("
            f" SELECT m.mind_id, (SELECT MIN(j.due_at) FROM {table} j"
            "   WHERE j.mind_id = m.mind_id AND j.due_at IS NOT NULL) AS head"
            " FROM minds m WHERE m.mind_id IS NOT NULL"
            ") heads WHERE head <= %s ORDER BY head, mind_id LIMIT %s",
            [due, batch_size],
        )
        chosen = sorted(row[0] for row in cursor.fetchall())
    if not chosen:
        return []
    # The turn goes round: the mind after the one that went first last time goes first, so
    # a batch cut short by its budget still reaches every mind in its turn.
    last = _turn.get("first", "")
    minds = [m for m in chosen if m > last] + [m for m in chosen if m <= last]
    _turn["first"] = minds[0]
    share = batch_size - len(minds) + 1
    columns = ", ".join(quote(f.column) for f in EmbeddingJob._meta.concrete_fields)
    each = (
        f"SELECT * FROM (SELECT {columns} FROM {table} WHERE mind_id = %s AND due_at <= %s"
        " ORDER BY due_at, memory_id LIMIT %s) {}"
    )
    sql = " UNION ALL ".join(each.format(f"t{n}") for n in range(len(minds)))
    by_mind: dict[str, list[EmbeddingJob]] = {mind: [] for mind in minds}
    for job in EmbeddingJob.objects.raw(sql, [p for m in minds for p in (m, due, share)]):
        by_mind[job.mind_id].append(job)
    turns = [sorted(jobs, key=lambda j: (j.due_at, j.memory_id)) for jobs in by_mind.values()]
    taken: list[EmbeddingJob] = []
    for rank in range(share):
        taken += [jobs[rank] for jobs in turns if rank < len(jobs)]
        if len(taken) >= batch_size:
            break
    return taken[:batch_size]


class _Embedding:
    """One batch's texts embedded: all in one call; when it fails and the embedder still
    answers a probe, each half again, so every text it takes gets its vector (`done`) and
    each it refuses is found alone (`refused`: the memory id and why)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.done: list[tuple[Memory, str, Vectors]] = []
        self.refused: dict[str, str] = {}
        self._answers = False

    def run(self, items: list[tuple[Memory, str]]) -> None:
        if not items:
            return
        try:
            vectors = self.embedder.embed_documents([text for _, text in items])
        except Exception as exc:
            self._probe(exc)
            if len(items) == 1:
                memory = items[0][0]
                logger.warning("The embedder refused memory %s: %s", memory.pk, exc)
                self.refused[memory.pk] = _reason(exc)
                return
            middle = len(items) // 2
            self.run(items[:middle])
            self.run(items[middle:])
            return
        self.done += [(m, text, v) for (m, text), v in zip(items, vectors, strict=True)]

    def _probe(self, failure: Exception) -> None:
        """Raise `failure` again unless the embedder answers a short text (asked once)."""
        if self._answers:
            return
        try:
            self.embedder.embed_documents([PROBE_TEXT])
        except Exception:
            raise failure from None
        self._answers = True


def _reason(error: Exception) -> str:
    """The error in a line for EmbeddingJob.last_error: no URL (EmbeddingsError.reason)."""
    text = (
        error.reason if isinstance(error, EmbeddingsError) else f"{type(error).__name__}: {error}"
    )
    text = " ".join(text.split())
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def _put_off(read: dict[str, EmbeddingJob], refused: dict[str, str], now: datetime) -> int:
    """Count a refusal on each of these jobs: due again after a delay that doubles, or
    parked after MAX_ATTEMPTS. A job queued again meanwhile is left fresh. The parked."""
    parked = 0
    for memory_id, reason in refused.items():
        job = read[memory_id]
        attempts = job.attempts + 1
        due = None if attempts >= MAX_ATTEMPTS else now + RETRY_DELAY * 2 ** (attempts - 1)
        updated = EmbeddingJob.objects.filter(memory_id=memory_id, queued_at=job.queued_at).update(
            attempts=attempts, due_at=due, last_error=reason
        )
        if updated and due is None:
            parked += 1
            logger.warning(
                "Embedding job of memory %s parked after %d attempts", memory_id, attempts
            )
    return parked


def _store_logged(
    model: str, read: dict[str, datetime], done: list[tuple[Memory, str, Vectors]]
) -> Batch:
    """_store; a batch that raced with the deletion of a whole mind is taken again."""
    try:
        return _store(model, read, done)
    except IntegrityError:
        # A memory deleted with its whole mind meanwhile: the next batch drops its job.
        logger.info("Embedding batch raced with a deletion; it is taken again")
        return Batch(requeued=len(read))


def _store(model: str, read: dict[str, datetime], done: list[tuple[Memory, str, Vectors]]) -> Batch:
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
            for memory, text, vector in done
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
