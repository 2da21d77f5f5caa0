"""GET /memory/search and /memory/semantic-search while the embeddings API fails or is slow.

The API is a real server on 127.0.0.1 (tests/fake_embeddings_api.py). Hybrid answers by
keyword at once and says so; semantic is a 503 that names nothing of the API; after a few
failures in a row the API is not asked at all until its cool-off has passed.
"""

from __future__ import annotations

import logging

import pytest

from memories.embeddings.breaker import COOL_OFF, FAILURES
from memories.search import KEYWORD_ONLY, MEANING_UNAVAILABLE
from tests.factories import embed, remember
from tests.fake_embeddings_api import (
    KEY,
    UPSTREAM_KEY,
    UPSTREAM_URL,
    clock_fixture,  # noqa: F401
    embeddings_api_fixture,  # noqa: F401
    fresh_process,
)

pytestmark = pytest.mark.django_db

URL = "/memory/search"
SEMANTIC_URL = "/memory/semantic-search"
PETS = "does he have any pets"  # shares no word with the dog's memory


@pytest.fixture
def facts(mind, embeddings_api):
    stored = [
        remember(mind, "fact_dog", "Has a border collie named Pixel."),
        remember(mind, "fact_boss", "Reports to Priya Raman."),
    ]
    embed(*stored)  # through the API, answering
    embeddings_api.calls = 0
    return stored


def search(agent, **params):
    response = agent.get(URL, params)
    assert response.status_code == 200, response.content
    return response.json()


def assert_says_nothing_of_the_api(response, api) -> None:
    text = response.content.decode()
    for secret in (api.base_url, "127.0.0.1", UPSTREAM_URL, UPSTREAM_KEY, KEY, "overloaded"):
        assert secret not in text


def test_while_the_api_answers_hybrid_finds_by_meaning_query(agent, facts, embeddings_api):
    body = search(agent, q=PETS)
    assert (body["mode"], body["warnings"]) == ("hybrid", [])
    assert [(r["key"], r["match"]) for r in body["results"]] == [("fact_dog", "meaning")]
    assert embeddings_api.calls == 1


@pytest.mark.parametrize("failure", ["slow", "fail"])
def test_hybrid_falls_back_to_keywords_at_once_and_says_so_query(
    agent, facts, embeddings_api, failure
):
    embeddings_api.mode = failure
    for _ in range(FAILURES + 3):
        body = search(agent, q="pixel")
        assert [(r["key"], r["match"]) for r in body["results"]] == [("fact_dog", "keyword")]
        assert (body["mode"], body["warnings"]) == ("keyword", [KEYWORD_ONLY])
    # The breaker opened after FAILURES failures in a row: the later searches did not ask.
    assert embeddings_api.calls == FAILURES


def test_a_fresh_worker_does_not_wait_on_a_slow_api_for_the_vectors_length_query(
    agent, facts, embeddings_api
):
    embeddings_api.mode = "slow"
    fresh_process()
    body = search(agent, q="pixel")
    assert (body["mode"], body["warnings"]) == ("keyword", [KEYWORD_ONLY])
    assert embeddings_api.calls == 1


@pytest.mark.parametrize("url", [URL, SEMANTIC_URL])
@pytest.mark.parametrize("failure", ["slow", "fail"])
def test_semantic_is_a_503_that_names_nothing_of_the_api_query(
    agent, facts, embeddings_api, caplog, url, failure
):
    embeddings_api.mode = failure
    params = {"q": PETS, "mode": "semantic"} if url == URL else {"q": PETS}
    with caplog.at_level(logging.WARNING, logger="memories.search"):
        response = agent.get(url, params)
    assert response.status_code == 503
    assert response.json() == {"error": "unavailable", "detail": MEANING_UNAVAILABLE}
    assert "Retry-After" not in response  # one failure: the breaker does not know yet
    assert_says_nothing_of_the_api(response, embeddings_api)
    # The operator's log has what went wrong, and where.
    logged = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert embeddings_api.base_url in logged
    assert ("model overloaded" if failure == "fail" else "SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT") in (
        logged
    )


def test_an_open_breaker_answers_semantic_with_retry_after_query(
    agent, facts, embeddings_api, clock
):
    embeddings_api.mode = "fail"
    for _ in range(FAILURES):
        assert agent.get(SEMANTIC_URL, {"q": PETS}).status_code == 503
    clock.now += 10
    response = agent.get(URL, {"q": PETS, "mode": "semantic"})
    assert response.status_code == 503
    assert response["Retry-After"] == str(COOL_OFF - 10)
    assert response.json() == {
        "error": "unavailable",
        "detail": MEANING_UNAVAILABLE,
        "retry_after": COOL_OFF - 10,
    }
    assert embeddings_api.calls == FAILURES


def test_after_the_cool_off_one_search_tries_again_and_a_success_closes_query(
    agent, facts, embeddings_api, clock
):
    embeddings_api.mode = "fail"
    for _ in range(FAILURES):
        search(agent, q=PETS)
    clock.now += COOL_OFF + 1
    search(agent, q=PETS)  # the try fails: open again, for another cool-off
    assert embeddings_api.calls == FAILURES + 1
    assert search(agent, q=PETS)["warnings"] == [KEYWORD_ONLY]
    assert embeddings_api.calls == FAILURES + 1
    clock.now += COOL_OFF + 1
    embeddings_api.mode = "answer"
    for _ in range(2):  # the try succeeds: closed, every search asks again
        body = search(agent, q=PETS)
        assert (body["mode"], body["warnings"]) == ("hybrid", [])
        assert [r["key"] for r in body["results"]] == ["fact_dog"]
    assert embeddings_api.calls == FAILURES + 3


def test_keyword_search_never_asks_the_api_query(agent, facts, embeddings_api):
    embeddings_api.mode = "slow"
    body = search(agent, q="pixel", mode="keyword")
    assert (body["mode"], body["warnings"]) == ("keyword", [])
    assert embeddings_api.calls == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"q": ""}, "q"),
        ({"q": "pixel", "mode": "meaning"}, "mode"),
        ({"q": "x", "limit": 0}, "limit"),
    ],
)
def test_bad_input_is_a_400_while_the_api_is_down_query(
    agent, facts, embeddings_api, params, field
):
    embeddings_api.mode = "fail"
    response = agent.get(URL, params)
    assert response.status_code == 400
    assert list(response.json()["fields"]) == [field]
    assert embeddings_api.calls == 0


def test_the_fallback_searches_only_the_callers_mind_query(
    agent, stranger_agent, facts, stranger_mind, embeddings_api
):
    embed(remember(stranger_mind.mind, "fact_cat", "Has a cat named Pixel too."))
    embeddings_api.mode = "fail"
    mine = search(agent, q="pixel")
    theirs = search(stranger_agent, q="pixel")
    assert mine["warnings"] == theirs["warnings"] == [KEYWORD_ONLY]
    assert [r["key"] for r in mine["results"]] == ["fact_dog"]
    assert [r["key"] for r in theirs["results"]] == ["fact_cat"]
