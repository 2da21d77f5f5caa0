"""memory_search past the fusion depth: every keyword match is a result, pages cover them
once each, and a chosen order lists the same results (the search's own, not a subset)."""

from __future__ import annotations

import pytest

from memories.search import memory_search, memory_search_ids, memory_search_scored, semantic
from memories.selectors import memory_matching_ids
from tests.factories import embed, many_memories
from tests.fake_embedder import fake_embedder  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_embedder")]

URL = "/memory/search"
# More keyword matches than the two fused lists together can hold.
MATCHES = 2 * semantic.FUSION_DEPTH + 30
QUESTION = "postgres pets"


@pytest.fixture
def big_mind(mind):
    """MATCHES memories with "postgres", 3 about a dog (found by meaning only), 40 neither."""
    found = many_memories(
        mind, MATCHES, content=lambda i: f"Postgres note {i}.", key=lambda i: f"pg_{i:04d}"
    )
    dogs = many_memories(
        mind, 3, content=lambda i: f"Has a border collie, number {i}.", key=lambda i: f"dog_{i}"
    )
    many_memories(mind, 40, content=lambda i: f"Lunch order {i}.", key=lambda i: f"lunch_{i}")
    embed(*found, *dogs)
    return mind


def keys_of(page) -> list[str]:
    return [hit.memory.key for hit in page.hits]


def test_hybrid_counts_every_keyword_match_and_the_meaning_only_ones(agent, big_mind):
    keyword = agent.get(URL, {"q": QUESTION, "mode": "keyword", "limit": 1}).json()
    assert keyword["total"] == MATCHES
    hybrid = agent.get(URL, {"q": QUESTION, "mode": "hybrid", "limit": 100}).json()
    assert hybrid["total"] == MATCHES + 3


def test_hybrid_pages_cover_the_total_once_each_best_first(agent, big_mind):
    seen, ids, scores, matches = [], [], [], {}
    for offset in range(0, MATCHES + 3 + 100, 100):
        body = agent.get(URL, {"q": QUESTION, "limit": 100, "offset": offset}).json()
        assert body["total"] == MATCHES + 3
        for result in body["results"]:
            seen.append(result["key"])
            ids.append(result["id"])
            scores.append(result["score"])
            matches[result["key"]] = result["match"]
    assert len(seen) == len(set(seen)) == MATCHES + 3
    assert scores == sorted(scores, reverse=True)
    assert {matches[f"dog_{i}"] for i in range(3)} == {"meaning"}
    assert {matches[k] for k in seen if k.startswith("pg_")} <= {"keyword", "both"}
    assert ids == memory_search_ids(mind=big_mind, q=QUESTION)
    assert ids == memory_matching_ids(mind=big_mind, q=QUESTION)


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_a_chosen_order_lists_the_same_results_in_that_order(big_mind, mode):
    best = memory_search(mind=big_mind, q=QUESTION, mode=mode, limit=1000)
    by_key = []
    for offset in range(0, best.total, 50):
        page = memory_search(
            mind=big_mind, q=QUESTION, mode=mode, sort="key", limit=50, offset=offset
        )
        assert page.total == best.total
        by_key += keys_of(page)
    assert by_key == sorted(keys_of(best))
    if mode != "keyword":
        assert {"dog_0", "dog_1", "dog_2"} <= set(by_key)
        hits = memory_search(mind=big_mind, q=QUESTION, mode=mode, sort="key", limit=3)
        assert [(hit.memory.key, hit.match) for hit in hits.hits] == [
            ("dog_0", "meaning"),
            ("dog_1", "meaning"),
            ("dog_2", "meaning"),
        ]


def test_few_keyword_matches_page_as_before(mind):
    dogs = many_memories(mind, 3, content=lambda i: f"Has a border collie, number {i}.")
    pg = many_memories(mind, 5, content=lambda i: f"Postgres note {i}.", key=lambda i: f"pg{i}")
    embed(*dogs, *pg)
    whole = memory_search(mind=mind, q=QUESTION, limit=100)
    assert whole.total == len(whole.hits) == 8
    halves = memory_search(mind=mind, q=QUESTION, limit=4).hits
    halves += memory_search(mind=mind, q=QUESTION, limit=4, offset=4).hits
    assert keys_of(whole) == [hit.memory.key for hit in halves]


@pytest.mark.parametrize("embeddings", ["on", "off"])
@pytest.mark.parametrize("limit", [1, 20, 100])
def test_scored_ids_are_the_default_searchs_ids_and_scores(big_mind, settings, embeddings, limit):
    if embeddings == "off":
        settings.SYNAPSE_EMBEDDINGS = "off"
    page = memory_search(mind=big_mind, q=QUESTION, limit=limit)
    scored = memory_search_scored(mind=big_mind, q=QUESTION, limit=limit)
    assert scored.scored == [(hit.memory.pk, hit.score) for hit in page.hits]
    assert (scored.mode, scored.warnings) == (page.mode, page.warnings)
    assert scored.mode == ("hybrid" if embeddings == "on" else "keyword")
