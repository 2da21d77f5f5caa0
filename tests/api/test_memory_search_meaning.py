"""GET /memory/search by meaning (mode=semantic|hybrid) and GET /memory/semantic-search.

Vectors are stored here directly, the way the background worker stores them (the text of
memories/embeddings/text.py, the process's model), so these tests do not depend on it.
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from memories.models import Memory, MemoryVector
from memories.search import pgvector, semantic
from tests.api.test_memory_search import remember
from tests.factories import embed

URL = "/memory/search"
SEMANTIC_URL = "/memory/semantic-search"

FACTS = {
    "fact_manager": ("fact", "Reports to Priya Raman, engineering manager of the platform group."),
    "fact_dog": ("fact", "Has a border collie named Pixel."),
    "preference_editor": ("preference", "Uses Neovim with the LazyVim distribution."),
    "project_deploy": ("project", "Synapse is deployed with Docker Compose on a Hetzner VPS."),
    "note_coffee": ("note", "Drinks flat white, no sugar."),
}
BOSS = "who is his boss"  # shares no word with fact_manager
PETS = "does he have any animals"  # shares no word with fact_dog


@pytest.fixture
def facts(mind) -> dict[str, Memory]:
    stored = {
        key: remember(mind, key, content, category=category)
        for key, (category, content) in FACTS.items()
    }
    embed(*stored.values())
    return stored


def results(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return response.json()["results"]


def keys(response) -> list[str]:
    return [r["key"] for r in results(response)]


# --- Happy path ------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [BOSS, PETS])
def test_a_question_in_other_words_is_found_by_meaning_not_by_keyword(agent, facts, q):
    expected = "fact_manager" if q == BOSS else "fact_dog"
    assert keys(agent.get(URL, {"q": q, "mode": "semantic"}))[0] == expected
    assert keys(agent.get(URL, {"q": q, "mode": "hybrid"}))[0] == expected
    assert expected not in keys(agent.get(URL, {"q": q, "mode": "keyword"}))


def test_hybrid_is_the_default_while_embeddings_are_on(agent, facts):
    [first, *_] = results(agent.get(URL, {"q": BOSS}))
    assert (first["key"], first["match"]) == ("fact_manager", "meaning")


def test_each_result_says_why_it_was_found(agent, facts):
    by_key = {r["key"]: r for r in results(agent.get(URL, {"q": "neovim editor"}))}
    assert by_key["preference_editor"]["match"] == "both"
    assert all(r["match"] in ("keyword", "meaning", "both") for r in by_key.values())
    semantic_hits = results(agent.get(URL, {"q": PETS, "mode": "semantic"}))
    assert {r["match"] for r in semantic_hits} == {"meaning"}
    assert all(isinstance(r["score"], float) for r in semantic_hits)
    keyword_hits = results(agent.get(URL, {"q": "neovim", "mode": "keyword"}))
    assert [(r["key"], r["match"]) for r in keyword_hits] == [("preference_editor", "keyword")]


def test_scores_are_best_first_and_a_meaning_hit_has_a_snippet(agent, facts):
    for mode in ("semantic", "hybrid"):
        found = results(agent.get(URL, {"q": PETS, "mode": mode}))
        scores = [r["score"] for r in found]
        assert scores == sorted(scores, reverse=True)
        dog = next(r for r in found if r["key"] == "fact_dog")
        assert dog["snippet"] == "Has a border collie named Pixel."


def test_unrelated_memories_do_not_fill_the_results(agent, facts):
    found = keys(agent.get(URL, {"q": PETS, "mode": "semantic"}))
    assert found[0] == "fact_dog" and len(found) < len(FACTS)


# --- Hard constraints and filters ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_quoted_phrase_must_appear_in_every_mode(agent, facts, mode):
    assert keys(agent.get(URL, {"q": f'{PETS} "border collie"', "mode": mode})) == ["fact_dog"]
    assert keys(agent.get(URL, {"q": f'{PETS} "collie border"', "mode": mode})) == []


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_an_exclusion_holds_in_every_mode(agent, facts, mode):
    assert "fact_dog" in keys(agent.get(URL, {"q": PETS, "mode": mode}))
    for excluded in ("-pixel", "-collies", '-"border collie"'):
        found = keys(agent.get(URL, {"q": f"{PETS} {excluded}", "mode": mode}))
        assert "fact_dog" not in found, excluded
    found = keys(agent.get(URL, {"q": f"{BOSS} -pixel", "mode": mode}))
    assert found[0] == "fact_manager"


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_filters_hold_in_every_mode(agent, mind, facts, mode):
    tagged = remember(mind, "note_pets", "Feeds the dog twice a day.", tags=["home"])
    embed(tagged)
    found = keys(agent.get(URL, {"q": PETS, "mode": mode, "category": "note"}))
    assert "fact_dog" not in found and "note_pets" in found
    assert keys(agent.get(URL, {"q": PETS, "mode": mode, "tag": "home"})) == ["note_pets"]
    assert keys(agent.get(URL, {"q": PETS, "mode": mode, "tag": "nope"})) == []


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_expired_memories_are_left_out_unless_asked(agent, mind, facts, mode):
    Memory.objects.filter(pk=facts["fact_dog"].pk).update(expires_at="2000-01-01T00:00:00Z")
    assert "fact_dog" not in keys(agent.get(URL, {"q": PETS, "mode": mode}))
    found = keys(agent.get(URL, {"q": PETS, "mode": mode, "include_expired": "true"}))
    assert "fact_dog" in found


# --- Totals and pages ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["semantic", "hybrid", "keyword"])
def test_pages_cover_the_total_once_each(agent, mind, facts, mode):
    for i in range(6):
        embed(remember(mind, f"note_pet_{i}", f"Pet number {i} is a cat called Tom {i}."))
    whole = agent.get(URL, {"q": "pets animals cat", "mode": mode, "limit": 100}).json()
    total = whole["total"]
    assert total == len(whole["results"]) >= 6
    paged = []
    for offset in range(0, total + 2, 2):
        page = agent.get(URL, {"q": "pets animals cat", "mode": mode, "limit": 2, "offset": offset})
        assert page.json()["total"] == total
        paged += keys(page)
    assert paged == [r["key"] for r in whole["results"]]


# --- Isolation -------------------------------------------------------------------------------


def test_another_minds_vectors_never_come_back(agent, stranger_agent, stranger_mind, facts):
    theirs = remember(stranger_mind.mind, "fact_cat", "Has a cat named Whiskers.")
    embed(theirs)
    for mode in ("semantic", "hybrid"):
        # Each mind asked in turn: the per-process matrices are per mind.
        for _ in range(2):
            mine = results(agent.get(URL, {"q": PETS, "mode": mode}))
            assert {r["mind_id"] for r in mine} == {facts["fact_dog"].mind_id}
            assert "fact_cat" not in [r["key"] for r in mine]
            found = results(stranger_agent.get(URL, {"q": PETS, "mode": mode}))
            assert [r["key"] for r in found] == ["fact_cat"]
    mine = results(agent.get(SEMANTIC_URL, {"q": PETS, "threshold": 0}))
    assert "fact_cat" not in [r["key"] for r in mine]
    assert [r["key"] for r in results(stranger_agent.get(SEMANTIC_URL, {"q": PETS}))] == [
        "fact_cat"
    ]


def test_a_vector_filed_under_another_mind_is_not_returned(agent, mind, facts, stranger_mind):
    # Even a vector row naming this mind for another mind's memory stays out: results are
    # the mind's memories, looked up by the mind.
    theirs = remember(stranger_mind.mind, "fact_cat", "Has a cat named Whiskers.")
    embed(theirs)
    MemoryVector.objects.filter(memory=theirs).update(mind_id=mind.pk)
    semantic.forget_cached()
    for mode in ("semantic", "hybrid"):
        assert "fact_cat" not in keys(agent.get(URL, {"q": PETS, "mode": mode}))


# --- Missing and stale vectors ---------------------------------------------------------------


def test_a_memory_without_a_vector_is_found_by_keyword_only(agent, mind, facts):
    remember(mind, "fact_cat", "Has a cat named Whiskers, a rescue.")  # not embedded yet
    found = {r["key"]: r for r in results(agent.get(URL, {"q": "whiskers the cat"}))}
    assert found["fact_cat"]["match"] == "keyword"
    assert "fact_cat" not in keys(agent.get(URL, {"q": "whiskers", "mode": "semantic"}))


def test_a_vector_of_another_model_counts_as_missing(agent, mind, facts):
    MemoryVector.objects.filter(memory=facts["fact_dog"]).update(model="an-older-model")
    assert "fact_dog" not in keys(agent.get(URL, {"q": PETS, "mode": "semantic"}))
    found = {r["key"]: r for r in results(agent.get(URL, {"q": "pixel", "mode": "hybrid"}))}
    assert found["fact_dog"]["match"] == "keyword"


def test_new_and_changed_vectors_are_seen_at_once(agent, mind, facts):
    assert keys(agent.get(URL, {"q": PETS, "mode": "semantic"}))[0] == "fact_dog"
    cat = remember(mind, "fact_cat", "Has a cat named Whiskers.")
    embed(cat)
    assert "fact_cat" in keys(agent.get(URL, {"q": PETS, "mode": "semantic"}))
    MemoryVector.objects.filter(memory=cat).delete()
    assert "fact_cat" not in keys(agent.get(URL, {"q": PETS, "mode": "semantic"}))


# --- Bad input and embeddings off ------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "params", "field"),
    [
        (URL, {"q": PETS, "mode": "foo"}, "mode"),
        (URL, {"q": PETS, "offset": "-1"}, "offset"),
        (URL, {"q": "", "mode": "semantic"}, "q"),
        (URL, {"q": "-pixel", "mode": "hybrid"}, "q"),
        (SEMANTIC_URL, {"q": PETS, "limit": "0"}, "limit"),
        (SEMANTIC_URL, {"q": PETS, "limit": "101"}, "limit"),
        (SEMANTIC_URL, {"q": PETS, "threshold": "2"}, "threshold"),
        (SEMANTIC_URL, {"q": PETS, "threshold": "-0.1"}, "threshold"),
        (SEMANTIC_URL, {"q": PETS, "threshold": "nan"}, "threshold"),
        (SEMANTIC_URL, {"q": PETS, "threshold": "high"}, "threshold"),
        (SEMANTIC_URL, {}, "q"),
    ],
)
def test_bad_input_is_400_naming_the_parameter(agent, facts, url, params, field):
    response = agent.get(url, params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid"
    assert list(body["fields"]) == [field]


@override_settings(SYNAPSE_EMBEDDINGS="off")
def test_embeddings_off_semantic_is_503_and_hybrid_is_keyword(agent, facts):
    body = agent.get(URL, {"q": "pixel", "mode": "hybrid"}).json()
    assert (body["mode"], body["warnings"]) == ("keyword", [])
    for url, params in ((URL, {"q": PETS, "mode": "semantic"}), (SEMANTIC_URL, {"q": PETS})):
        response = agent.get(url, params)
        assert response.status_code == 503
        body = response.json()
        assert body["error"] == "unavailable"
        assert "SYNAPSE_EMBEDDINGS" in body["detail"]
    for params in ({"q": "pixel"}, {"q": "pixel", "mode": "hybrid"}):
        found = results(agent.get(URL, params))
        assert [(r["key"], r["match"]) for r in found] == [("fact_dog", "keyword")]
    assert keys(agent.get(URL, {"q": PETS})) == []


def test_an_embedder_that_fails_is_503_for_meaning_and_keyword_for_hybrid(
    agent, facts, monkeypatch
):
    from memories.embeddings import EmbeddingsError, get_embedder

    def failing(text):
        raise EmbeddingsError("The embeddings API at http://127.0.0.1:9 did not answer.")

    monkeypatch.setattr(get_embedder(), "embed_query", failing)
    for url, params in ((URL, {"q": PETS, "mode": "semantic"}), (SEMANTIC_URL, {"q": PETS})):
        response = agent.get(url, params)
        assert response.status_code == 503
        assert response.json() == {
            "error": "unavailable",
            "detail": "Search by meaning is unavailable right now; try keyword search.",
        }
    body = agent.get(URL, {"q": "pixel"}).json()
    assert [(r["key"], r["match"]) for r in body["results"]] == [("fact_dog", "keyword")]
    assert body["mode"] == "keyword"
    assert body["warnings"] == [
        "Search by meaning is unavailable right now; these results are by keyword alone."
    ]


# --- GET /memory/semantic-search -------------------------------------------------------------


def test_semantic_search_answer(agent, facts):
    body = agent.get(SEMANTIC_URL, {"q": PETS, "threshold": 0}).json()
    assert set(body) == {"query", "results", "total"}
    assert body["query"] == PETS
    first = body["results"][0]
    assert first["key"] == "fact_dog" and first["id"] == facts["fact_dog"].id
    similarities = [r["similarity"] for r in body["results"]]
    assert similarities == sorted(similarities, reverse=True)
    assert all(0 <= s <= 1 for s in similarities)
    assert body["total"] == len(body["results"]) == len(FACTS)  # threshold 0: all 5, limit 10


def test_semantic_search_threshold_and_limit(agent, facts):
    everything = agent.get(SEMANTIC_URL, {"q": PETS, "threshold": 0}).json()["results"]
    cut = (everything[1]["similarity"] + everything[2]["similarity"]) / 2
    body = agent.get(SEMANTIC_URL, {"q": PETS, "threshold": cut}).json()
    assert [r["key"] for r in body["results"]] == [r["key"] for r in everything[:2]]
    assert body["total"] == 2
    body = agent.get(SEMANTIC_URL, {"q": PETS, "threshold": 0, "limit": 1}).json()
    assert len(body["results"]) == 1 and body["total"] == len(FACTS)
    assert agent.get(SEMANTIC_URL, {"q": PETS, "threshold": 1}).json()["results"] == []


def test_semantic_search_honours_phrases_and_exclusions(agent, facts):
    found = keys(agent.get(SEMANTIC_URL, {"q": f"{PETS} -pixel", "threshold": 0}))
    assert "fact_dog" not in found and found
    assert keys(agent.get(SEMANTIC_URL, {"q": f'{PETS} "neovim"', "threshold": 0})) == [
        "preference_editor"
    ]


def test_semantic_search_needs_credentials(anon, facts):
    assert anon.get(SEMANTIC_URL, {"q": PETS}).status_code == 401


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_public_client_semantic_search(live_server, owner_mind):
    from synapse_memory import Synapse

    stored = [
        remember(owner_mind.mind, key, content, category=c) for key, (c, content) in FACTS.items()
    ]
    embed(*stored)
    client = Synapse(base_url=live_server.url, mind_key=owner_mind.key)
    answer = client.memory.semantic_search("does he have any animals", limit=3, threshold=0.1)
    assert answer["results"][0]["key"] == "fact_dog"
    assert 0 < answer["results"][0]["similarity"] <= 1
    assert len(answer["results"]) <= 3
    found = client.memory.search("does he have any animals", limit=3)
    assert found["results"][0]["key"] == "fact_dog"


def test_query_count_by_meaning(agent, mind, facts, django_assert_max_num_queries):
    # Mind Key, the vectors' change marker, the vectors (only when they changed), the filters
    # and phrases over the closest, the keyword ranking, the page's memories, the snippets of
    # those found by keyword; with memories found by meaning alone beside keyword matches of a
    # question of several words, whether one memory holds them all (API.md §9.1).
    # With pgvector: the count and the nearest, every time, in place of the marker.
    semantic.forget_cached()
    in_database = 1 if pgvector.in_use() else 0
    with django_assert_max_num_queries(7):
        found = results(agent.get(URL, {"q": f"neovim {PETS}", "category": "preference"}))
        assert [r["key"] for r in found] == ["preference_editor"]
    with django_assert_max_num_queries(7 + in_database):
        found = keys(agent.get(URL, {"q": f"neovim {PETS}"}))
        assert {"fact_dog", "preference_editor"} <= set(found[:2])
    with django_assert_max_num_queries(5):
        assert keys(agent.get(SEMANTIC_URL, {"q": PETS}))[0] == "fact_dog"


def test_a_keyword_match_has_the_snippet_of_keyword_search(agent, facts):
    question = f"lazyvim {PETS}"
    [keyword] = results(agent.get(URL, {"q": question, "mode": "keyword"}))
    hybrid = {r["key"]: r for r in results(agent.get(URL, {"q": question, "mode": "hybrid"}))}
    assert hybrid["preference_editor"]["snippet"] == keyword["snippet"]
    assert "«LazyVim»" in keyword["snippet"]
    assert hybrid["fact_dog"]["snippet"] == "Has a border collie named Pixel."


# --- A word only one memory holds (API.md §9.1) ------------------------------------------


@pytest.fixture
def look_alikes(mind) -> list[Memory]:
    """Templated notes, near-identical in meaning, each with a word of its own."""
    notes = [remember(mind, f"note_{i}", f"crash test tok{i}x{i % 7}x{i % 5}q") for i in range(60)]
    embed(*notes)
    return notes


@pytest.mark.parametrize("i", [0, 17, 42, 59])
def test_a_word_one_embedded_memory_holds_answers_that_memory_alone(agent, look_alikes, i):
    answer = agent.get(URL, {"q": f"tok{i}x{i % 7}x{i % 5}q"}).json()
    assert [r["key"] for r in answer["results"]] == [f"note_{i}"]
    assert answer["total"] == 1
    assert answer["results"][0]["match"] == "both"


def test_a_memory_stored_a_moment_ago_is_found_first_for_its_own_word(agent, look_alikes):
    body = {"category": "note", "key": "fresh", "content": "crash test tok9x9x9q"}
    assert agent.post("/memory", body, format="json").status_code == 201
    assert not MemoryVector.objects.filter(memory__key="fresh").exists()  # not embedded yet

    answer = agent.get(URL, {"q": "tok9x9x9q"}).json()
    assert [r["key"] for r in answer["results"]] == ["fresh"]
    assert answer["total"] == 1
    assert answer["results"][0]["match"] == "keyword"


def test_every_word_of_a_question_held_leaves_out_look_alikes(agent, mind, look_alikes):
    remember(mind, "plain", "crash report for tok5x5x5q")
    answer = agent.get(URL, {"q": "report tok5x5x5q"}).json()
    assert [r["key"] for r in answer["results"]] == ["plain"]
    assert answer["total"] == 1


def test_what_holds_the_words_ranks_above_whatever_is_found_by_meaning(agent, mind, facts):
    gaming = remember(mind, "note_gaming", "Beat the final boss of Elden Ring last weekend.")
    embed(gaming)
    for q in ("boss", "final boss", "engineering manager"):
        kinds = [r["match"] for r in results(agent.get(URL, {"q": q}))]
        assert kinds[0] != "meaning", q
        assert kinds == sorted(kinds, key=lambda kind: kind == "meaning"), (q, kinds)


def test_words_no_memory_holds_all_of_still_bring_memories_found_by_meaning(agent, facts):
    # "boss" and "platform" are held by no one memory together: meaning still answers.
    assert "meaning" in {r["match"] for r in results(agent.get(URL, {"q": "boss platform"}))}


def test_a_word_held_in_another_mind_only_does_not_narrow_this_one(
    agent, look_alikes, stranger_mind
):
    remember(stranger_mind.mind, "theirs", "crash test tok99x99x99q")
    answer = agent.get(URL, {"q": "tok99x99x99q"}).json()
    assert answer["results"], "found by meaning in this mind"
    assert {r["match"] for r in answer["results"]} == {"meaning"}
    assert "theirs" not in {r["key"] for r in answer["results"]}
