"""MCP search while the embeddings API fails or is slow: the REST API's behaviour, as tool
results (tests/api/test_memory_search_unavailable.py holds the breaker's cases)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from memories.embeddings.breaker import FAILURES
from memories.search import KEYWORD_ONLY, MEANING_UNAVAILABLE
from tests.factories import embed, remember
from tests.fake_embeddings_api import (
    KEY,
    UPSTREAM_KEY,
    UPSTREAM_URL,
    embeddings_api_fixture,  # noqa: F401
)

pytestmark = pytest.mark.django_db

PETS = "does he have any pets"


@pytest.fixture
def facts(mind, embeddings_api):
    embed(remember(mind, "fact_dog", "Has a border collie named Pixel."))
    embeddings_api.calls = 0


def post(key: str, body) -> dict | list:
    response = Client(HTTP_AUTHORIZATION=f"Bearer {key}").post(
        "/mcp", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def search(arguments: dict, request_id: int = 1) -> dict:
    params = {"name": "search", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.mark.parametrize("failure", ["slow", "fail"])
def test_search_answers_by_keyword_and_says_so_query(owner_mind, facts, embeddings_api, failure):
    embeddings_api.mode = failure
    result = post(owner_mind.key, search({"q": "pixel"}))["result"]
    assert result["isError"] is False
    found = result["structuredContent"]
    assert [(r["key"], r["match"]) for r in found["results"]] == [("fact_dog", "keyword")]
    assert (found["mode"], found["warnings"]) == ("keyword", [KEYWORD_ONLY])
    assert KEYWORD_ONLY in result["content"][0]["text"]


@pytest.mark.parametrize("failure", ["slow", "fail"])
def test_semantic_search_is_a_tool_error_that_names_nothing_of_the_api_query(
    owner_mind, facts, embeddings_api, failure
):
    embeddings_api.mode = failure
    answer = post(owner_mind.key, search({"q": PETS, "mode": "semantic"}))
    assert answer["result"] == {
        "content": [{"type": "text", "text": MEANING_UNAVAILABLE}],
        "isError": True,
    }
    text = json.dumps(answer)
    for secret in (embeddings_api.base_url, "127.0.0.1", UPSTREAM_URL, UPSTREAM_KEY, KEY):
        assert secret not in text


def test_a_batch_of_searches_against_a_slow_api_answers_every_one_query(
    owner_mind, facts, embeddings_api
):
    embeddings_api.mode = "slow"
    batch = [
        search({"q": "pixel"}, 1),
        search({"q": PETS, "mode": "semantic"}, 2),
        search({"q": "border collie"}, 3),
        search({"q": "pixel"}, 4),
        search({"q": "pixel", "mode": "keyword"}, 5),
    ]
    answers = post(owner_mind.key, batch)
    assert [a["id"] for a in answers] == [1, 2, 3, 4, 5]
    for answer in (answers[0], answers[2], answers[3]):
        assert answer["result"]["structuredContent"]["warnings"] == [KEYWORD_ONLY]
    assert answers[1]["result"]["isError"] is True
    assert answers[4]["result"]["structuredContent"]["warnings"] == []
    # The third failure opened the breaker: the fourth search did not wait on the API.
    assert embeddings_api.calls == FAILURES


def test_bad_arguments_are_refused_while_the_api_is_down_query(owner_mind, facts, embeddings_api):
    embeddings_api.mode = "fail"
    result = post(owner_mind.key, search({"q": "pixel", "mode": "fuzzy"}))["result"]
    assert result["isError"] is True and "mode" in result["content"][0]["text"]
    assert embeddings_api.calls == 0


def test_the_fallback_searches_only_the_keys_mind_query(
    owner_mind, stranger_mind, facts, embeddings_api
):
    embeddings_api.mode = "fail"
    theirs = post(stranger_mind.key, search({"q": "pixel"}))["result"]["structuredContent"]
    assert theirs["results"] == [] and theirs["total"] == 0
    mine = post(owner_mind.key, search({"q": "pixel"}))["result"]["structuredContent"]
    assert [r["key"] for r in mine["results"]] == ["fact_dog"]
