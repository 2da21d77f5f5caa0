"""The embedding queue under a text the embedder refuses and under one mind's flood: the
refused job is found alone and put off, then parked (kept, counted, shown), the other jobs of
its batch get their vectors; and a batch serves the minds that have jobs in turn
(memories/embeddings/outbox.py)."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from memories import services, tasks
from memories.actors import Actor
from memories.embeddings import EmbeddingsError, get_embedder, outbox
from memories.embeddings.remote import RemoteEmbedder
from memories.models import EmbeddingJob, MemoryVector
from tests.factories import remember
from tests.fake_embedder import FakeEmbedder
from tests.fake_embeddings_api import send_json

POISON = "😀" * 2000


class Refuses(FakeEmbedder):
    """The FakeEmbedder, refusing every text with an emoji, as a server refuses an input too
    long for it; `down` refuses everything, the probe included. Counts its calls."""

    def __init__(self) -> None:
        self.down = False
        self.calls: list[int] = []

    def embed_documents(self, texts):
        self.calls.append(len(texts))
        if self.down:
            raise EmbeddingsError("The embeddings API at http://10.0.0.9/v1 could not be reached")
        if any("😀" in text for text in texts):
            raise EmbeddingsError(
                "The embeddings API at http://10.0.0.9/v1 answered 413 Payload Too Large: too long",
                reason="answered 413 Payload Too Large: too long",
            )
        return super().embed_documents(texts)


@pytest.fixture
def refuses():
    return Refuses()


def has_vector(memory) -> bool:
    return MemoryVector.objects.filter(memory_id=memory.pk).exists()


def job(memory) -> EmbeddingJob:
    return EmbeddingJob.objects.get(memory_id=memory.pk)


def sync(mind, count, *, prefix="flood"):
    items = [
        {"category": "note", "key": f"{prefix}_{i}", "content": f"{prefix} note {i}"}
        for i in range(count)
    ]
    return services.memory_upsert_many(mind=mind, actor=Actor.system(), items=items)


# --- A text the embedder refuses --------------------------------------------------------------


def test_a_refused_text_does_not_keep_the_rest_of_its_batch_waiting(mind, stranger_mind, refuses):
    poison = remember(mind, "emoji", POISON)  # the oldest job: the head of the queue
    good = [remember(mind, f"good_{i}", f"good memory {i}") for i in range(5)]
    other = remember(stranger_mind.mind, "other", "the other mind's memory")

    batch = outbox.embed_batch(refuses)

    assert (batch.taken, batch.stored, batch.refused, batch.parked) == (7, 6, 1, 0)
    assert all(has_vector(m) for m in [*good, other]) and not has_vector(poison)
    refused = job(poison)
    assert refused.attempts == 1 and refused.due_at > timezone.now()
    assert refused.last_error == "answered 413 Payload Too Large: too long"
    # Halved until alone, never one call per text, and nothing taken again in a hot loop.
    assert len(refuses.calls) < 2 * 7
    assert outbox.embed_batch(refuses).taken == 0


def test_a_refused_job_is_put_off_longer_each_time_then_parked(mind, agent, refuses):
    poison = remember(mind, "emoji", POISON)
    now = timezone.now()
    delays = []
    for attempt in range(1, outbox.MAX_ATTEMPTS + 1):
        assert outbox.embed_batch(refuses, now=now).refused == 1
        refused = job(poison)
        assert refused.attempts == attempt
        if refused.due_at is None:
            break
        delays.append(refused.due_at - now)
        assert outbox.embed_batch(refuses, now=refused.due_at - timedelta(seconds=1)).taken == 0
        now = refused.due_at
    assert delays == [outbox.RETRY_DELAY * 2**n for n in range(outbox.MAX_ATTEMPTS - 1)]

    parked = job(poison)  # kept, with why, and taken by no batch
    assert parked.parked and parked.attempts == outbox.MAX_ATTEMPTS
    assert "http" not in parked.last_error and "413" in parked.last_error
    assert outbox.embed_batch(refuses, now=now + timedelta(days=30)).taken == 0
    stats = agent.get("/memory/stats").json()
    assert (stats["pending_embedding"], stats["parked_embedding"]) == (0, 1)


def test_parked_jobs_are_counted_for_their_own_mind_only(mind, stranger_mind, stranger_agent):
    poison = remember(mind, "emoji", POISON)
    EmbeddingJob.objects.filter(memory_id=poison.pk).update(due_at=None, attempts=5)
    remember(stranger_mind.mind, "other", "queued")
    stats = stranger_agent.get("/memory/stats").json()
    assert (stats["pending_embedding"], stats["parked_embedding"]) == (1, 0)


def test_an_edit_of_a_parked_memory_queues_it_afresh(mind, refuses):
    poison = remember(mind, "emoji", POISON)
    EmbeddingJob.objects.filter(memory_id=poison.pk).update(
        due_at=None, attempts=5, last_error="answered 413"
    )
    services.memory_update(memory=poison, actor=Actor.system(), content="No emoji any more")
    fresh = job(poison)
    assert (fresh.parked, fresh.attempts, fresh.last_error) == (False, 0, "")
    assert outbox.embed_batch(refuses).stored == 1 and has_vector(poison)


def test_a_worker_start_and_retry_parked_give_parked_jobs_another_round(
    mind, stranger_mind, monkeypatch
):
    # The test's transaction must stay open: the start hook closes connections in a worker.
    monkeypatch.setattr(tasks, "close_old_connections", lambda: None)
    first = remember(mind, "a", "first")
    second = remember(stranger_mind.mind, "b", "second")
    EmbeddingJob.objects.update(due_at=None, attempts=5)

    assert outbox.retry_parked(mind_id=mind.pk) == 1
    assert not job(first).parked and job(second).parked
    EmbeddingJob.objects.update(due_at=None, attempts=5)
    tasks.queue_missing_at_start()  # a worker start: retried, then embedded
    assert has_vector(first) and has_vector(second)
    assert not EmbeddingJob.objects.exists()


def test_an_embedder_that_answers_nothing_leaves_the_jobs_as_they_were(mind, refuses):
    memories = [remember(mind, f"k{i}", f"memory {i}") for i in range(4)]
    refuses.down = True
    with pytest.raises(EmbeddingsError):
        outbox.embed_batch(refuses)
    # Not counted against the jobs: the probe failed too, so nothing is halved or put off.
    assert refuses.calls == [4, 1]
    assert all(job(m).attempts == 0 and not job(m).parked for m in memories)
    refuses.down = False
    assert outbox.embed_pending(embedder=refuses) == 4


# --- An embeddings API that refuses long inputs (413), on 127.0.0.1 -------------------------


class TokenLimitedServer:
    """POST /v1/embeddings as a text-embeddings server answers it: 413 for an input over
    `max_tokens`, counted as a byte-level tokenizer's worst case (a token per UTF-8 byte,
    and two special tokens)."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.inputs: list[str] = []
        fake = FakeEmbedder()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
                server.inputs += texts
                longest = max(len(t.encode("utf-8")) + 2 for t in texts)
                if longest > server.max_tokens:
                    status, payload = (
                        413,
                        {
                            "error": f"Input validation error: `inputs` must have less than "
                            f"{server.max_tokens} tokens. Given: {longest}",
                            "error_type": "Validation",
                        },
                    )
                else:
                    vectors = fake.embed_documents(texts)
                    vectors[:, 0] += 1.0  # never zero, words or none
                    data = [
                        {"index": i, "embedding": [float(x) for x in v]}
                        for i, v in enumerate(vectors)
                    ]
                    status, payload = 200, {"data": data}
                send_json(self, status, payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_port}/v1"


@pytest.fixture
def tei(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = TokenLimitedServer(max_tokens=512)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.mark.parametrize("text", [POISON, "!" * 2048, "数据" * 1000, "word " * 2000])
def test_a_text_in_any_script_is_cut_to_what_a_512_token_api_takes(tei, text):
    client = RemoteEmbedder(base_url=tei.base_url, model="e5")
    assert client.embed_documents([text]).shape == (1, 512)
    sent = tei.inputs[-1]
    assert text.startswith(sent) and len(sent.encode("utf-8")) <= 512 - 8
    assert len(sent.encode("utf-8")) > 512 - 8 - 4  # no more cut than one character's bytes


def test_a_413_from_the_api_parks_one_job_and_the_other_mind_gets_its_vector(
    tei, mind, stranger_mind, agent
):
    # The operator told Synapse the API takes more than it does: long texts are refused.
    with override_settings(
        SYNAPSE_EMBEDDINGS=tei.base_url,
        SYNAPSE_EMBEDDINGS_MODEL="e5",
        SYNAPSE_EMBEDDINGS_MAX_TOKENS=2048,
    ):
        embedder = get_embedder()
        poison = remember(mind, "emoji", POISON)
        other = remember(stranger_mind.mind, "other", "the other mind's memory")
        now = timezone.now()
        first = outbox.embed_batch(embedder, now=now)
        assert (first.stored, first.refused) == (1, 1) and has_vector(other)
        assert job(poison).last_error.startswith("answered 413 ")
        assert "must have less than 512 tokens" in job(poison).last_error
        assert tei.base_url not in job(poison).last_error
        for _ in range(outbox.MAX_ATTEMPTS - 1):
            now += timedelta(days=1)
            assert outbox.embed_batch(embedder, now=now).refused == 1
        assert job(poison).parked
        assert agent.get("/memory/stats").json()["parked_embedding"] == 1


# --- Minds in turn ----------------------------------------------------------------------------


def test_a_flooding_mind_does_not_keep_a_quiet_mind_waiting_beyond_one_batch(mind, stranger_mind):
    flood = sync(mind, 1000)  # queued first: the oldest 1,000 jobs
    quiet = remember(stranger_mind.mind, "quiet", "one memory")
    embedder = FakeEmbedder()

    batch = outbox.embed_batch(embedder)

    assert has_vector(quiet)
    assert batch.stored == outbox.BATCH_SIZE  # the flood fills the rest of the batch
    embedded = set(MemoryVector.objects.filter(mind=mind).values_list("memory_id", flat=True))
    # Each mind's own jobs oldest first (a sync's jobs share their time: then by id).
    assert embedded == set(sorted(r.memory.pk for r in flood)[: outbox.BATCH_SIZE - 1])


def test_oldest_first_is_what_kept_the_quiet_mind_waiting(mind, stranger_mind):
    sync(mind, 200)
    quiet = remember(stranger_mind.mind, "quiet", "one memory")
    outbox.embed_batch(FakeEmbedder(), fair=False)
    assert not has_vector(quiet)


def test_many_minds_each_get_a_turn(owner):
    from tests.factories import mind_make

    minds = [mind_make(owner, name=f"m{i}")[0] for i in range(5)]
    for i, m in enumerate(minds):
        sync(m, 3 + i * 20, prefix=f"m{i}")
    batch = outbox.embed_batch(FakeEmbedder(), batch_size=10)
    per_mind = {m.pk: MemoryVector.objects.filter(mind=m).count() for m in minds}
    assert batch.stored == 10 and sorted(per_mind.values()) == [2, 2, 2, 2, 2]


def test_a_due_job_of_a_mind_with_a_put_off_one_still_gets_its_turn(mind, stranger_mind):
    later = remember(mind, "later", "put off")
    EmbeddingJob.objects.filter(memory_id=later.pk).update(
        due_at=timezone.now() + timedelta(hours=1), attempts=1
    )
    now_due = remember(mind, "now", "due now")
    other = remember(stranger_mind.mind, "other", "due now too")
    assert outbox.embed_batch(FakeEmbedder()).stored == 2
    assert has_vector(now_due) and has_vector(other) and not has_vector(later)


@pytest.mark.sqlite_only
def test_the_turns_read_the_index_on_sqlite(mind):
    sql = _turn_queries(mind)
    with connection.cursor() as cursor:
        for statement, params in sql:
            cursor.execute("EXPLAIN QUERY PLAN " + statement, params)
            plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
            assert "embedding_job_turn_idx" in plan, plan
            assert "SCAN memories_embeddingjob" not in plan.replace("USING COVERING", ""), plan


@pytest.mark.postgres_only
def test_the_turns_read_the_index_on_postgres(mind):
    sql = _turn_queries(mind)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # an empty test table: ask for the shape
        try:
            for statement, params in sql:
                cursor.execute("EXPLAIN " + statement, params)
                plan = " | ".join(row[0] for row in cursor.fetchall())
                assert "embedding_job_turn_idx" in plan and "Seq Scan" not in plan, plan
        finally:
            cursor.execute("RESET enable_seqscan")


def _turn_queries(mind):
    """The statements `_fair_jobs` runs, captured from one batch."""
    from django.test.utils import CaptureQueriesContext

    sync(mind, 5)
    with CaptureQueriesContext(connection) as ctx:
        outbox._fair_jobs(outbox.BATCH_SIZE, timezone.now())
    assert len(ctx.captured_queries) == 2
    # Captured with the parameters inlined; run them as captured.
    return [(q["sql"], None) for q in ctx.captured_queries]


def test_a_batch_is_cut_to_its_budget_and_the_rest_waits_untouched(mind, stranger_mind):
    sync(mind, 3)
    quiet = remember(stranger_mind.mind, "quiet", "one memory")
    first = outbox.embed_batch(FakeEmbedder(), budget=1)  # one text at least
    assert (first.taken, first.stored) == (1, 1)
    second = outbox.embed_batch(FakeEmbedder(), budget=1)
    assert (second.taken, second.stored) == (1, 1) and has_vector(quiet)  # the next turn
    assert EmbeddingJob.objects.filter(attempts=0).count() == 2
    assert outbox.embed_pending(embedder=FakeEmbedder()) == 2
