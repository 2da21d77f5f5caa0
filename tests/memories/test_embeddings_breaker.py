"""The circuit breaker in front of the embeddings API's questions (memories/embeddings/
breaker.py): its states, shared through the cache by every worker. What a search answers
meanwhile: tests/api/test_memory_search_unavailable.py."""

from __future__ import annotations

import pytest

from memories.embeddings.breaker import COOL_OFF, FAILURES, Breaker, BreakerOpen
from tests.fake_embeddings_api import clock_fixture  # noqa: F401

API = "http://127.0.0.1:11434/v1 nomic-embed-text"


def worker() -> Breaker:
    """One worker's breaker for the API (each process builds its own)."""
    return Breaker(API, probe_seconds=3)


def fail(breaker: Breaker, times: int) -> None:
    for _ in range(times):
        breaker.before()
        breaker.failed()


def test_it_opens_after_failures_in_a_row_for_every_worker_query(clock):
    fail(worker(), FAILURES - 1)
    worker().before()  # not yet
    fail(worker(), 1)
    for breaker in (worker(), worker()):
        with pytest.raises(BreakerOpen) as refused:
            breaker.before()
        assert refused.value.retry_after == COOL_OFF
    clock.now += 10
    with pytest.raises(BreakerOpen) as refused:
        worker().before()
    assert refused.value.retry_after == COOL_OFF - 10


def test_a_success_between_failures_starts_the_count_again_query(clock):
    first = worker()
    fail(first, FAILURES - 1)
    seen = first.before()
    first.succeeded(seen)
    fail(worker(), FAILURES - 1)
    worker().before()  # still closed


def test_after_the_cool_off_one_request_at_a_time_tries_query(clock):
    fail(worker(), FAILURES)
    clock.now += COOL_OFF
    trying, other = worker(), worker()
    seen = trying.before()
    with pytest.raises(BreakerOpen) as refused:
        other.before()  # waits for the try's answer instead of trying too
    assert refused.value.retry_after == 3
    trying.succeeded(seen)
    other.before()
    worker().before()


def test_a_failed_try_opens_it_for_another_cool_off_query(clock):
    fail(worker(), FAILURES)
    clock.now += COOL_OFF
    fail(worker(), 1)
    with pytest.raises(BreakerOpen) as refused:
        worker().before()
    assert refused.value.retry_after == COOL_OFF


def test_each_api_and_model_has_its_own_breaker_query(clock):
    fail(worker(), FAILURES)
    Breaker("http://127.0.0.1:11434/v1 all-minilm", probe_seconds=3).before()
