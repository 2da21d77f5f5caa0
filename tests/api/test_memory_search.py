"""GET /memory/search: ranked, scoped, filtered, and safe for any input."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from django.utils import timezone

from memories.models import Memory
from memories.search.query import MAX_QUERY_CHARS
from tests import factories

URL = "/memory/search"


# Notes stored by the system unless a test says otherwise.
remember = partial(factories.remember, actor=factories.SYSTEM, category="note")


def keys(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["key"] for r in response.json()["results"]]


@pytest.fixture
def memories(mind):
    return {
        "editor": remember(
            mind,
            "preference_editor",
            "Uses Neovim with the LazyVim distribution for all coding.",
            category="preference",
            tags=["tools", "editor"],
        ),
        "name": remember(
            mind, "identity_name", "Michael Schäfer, goes by Mike.", category="identity"
        ),
        "deploy": remember(
            mind,
            "project_synapse_deploy",
            "Synapse is deployed with Docker Compose on a Hetzner VPS.",
            category="project",
            tags=["docker", "hosting"],
        ),
        "mistake": remember(
            mind,
            "mistake_force_push",
            "Force-pushed to main once and lost a colleague's commits; always use a branch.",
            category="mistake",
            tags=["git"],
        ),
        "coffee": remember(
            mind, "note_coffee", "Drinks flat white, no sugar.", tags=["café"], category="note"
        ),
    }


def test_answer_shape(agent, memories):
    response = agent.get(URL, {"q": "editor"})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"query", "results", "total", "mode", "warnings"}
    assert body["query"] == "editor"
    assert (body["mode"], body["warnings"]) == ("hybrid", [])
    assert body["total"] == 1
    [hit] = body["results"]
    assert hit["id"] == memories["editor"].id
    assert hit["mind_id"] == memories["editor"].mind_id
    assert hit["priority"] == "normal"
    assert hit["tags"] == ["tools", "editor"]
    assert hit["created_at"].endswith("Z")
    assert isinstance(hit["score"], float) and hit["score"] > 0
    # Only the key and a tag matched: the snippet is the content, not the key again.
    assert hit["snippet"] == "Uses Neovim with the LazyVim distribution for all coding."


def test_accents_are_ignored(agent, memories):
    assert keys(agent.get(URL, {"q": "schafer"})) == ["identity_name"]
    assert keys(agent.get(URL, {"q": "SCHÄFER"})) == ["identity_name"]


def test_accented_tag_is_searchable_without_accent(agent, memories):
    assert keys(agent.get(URL, {"q": "cafe"})) == ["note_coffee"]


def test_stemming(agent, memories):
    assert keys(agent.get(URL, {"q": "deploying"})) == ["project_synapse_deploy"]


def test_key_parts_match(agent, memories):
    assert keys(agent.get(URL, {"q": "push"})) == ["mistake_force_push"]


def test_natural_question_finds_best_first(agent, memories):
    found = keys(agent.get(URL, {"q": "Which code editor does the user prefer?"}))
    assert found[0] == "preference_editor"


def test_any_word_may_match(agent, memories):
    found = keys(agent.get(URL, {"q": "docker neovim"}))
    assert set(found) == {"preference_editor", "project_synapse_deploy"}


def test_phrase(agent, memories):
    assert keys(agent.get(URL, {"q": '"docker compose"'})) == ["project_synapse_deploy"]
    assert keys(agent.get(URL, {"q": '"compose docker"'})) == []


def test_prefix(agent, memories):
    assert keys(agent.get(URL, {"q": "lazyv*"})) == ["preference_editor"]


def test_exclusion(agent, memories):
    found = keys(agent.get(URL, {"q": "docker neovim -lazyvim"}))
    assert found == ["project_synapse_deploy"]


def test_snippet_is_the_content_when_only_the_key_matched(agent, mind):
    # The key is in the result already: the snippet says what the memory holds.
    remember(mind, "fact_favourite_colour", "Deep green.", category="fact")
    [hit] = agent.get(URL, {"q": "colour"}).json()["results"]
    assert hit["snippet"] == "Deep green."


def test_total_counts_every_match_not_the_page(agent, mind):
    for i in range(5):
        remember(mind, f"note_kafka_{i}", f"Kafka topic number {i}.")
    body = agent.get(URL, {"q": "kafka", "limit": 2}).json()
    assert len(body["results"]) == 2
    assert body["total"] == 5


def test_ranked_by_score(agent, mind):
    remember(mind, "note_one", "redis mentioned once among many other words here and there")
    remember(mind, "note_redis", "redis redis: redis cache", tags=["redis"])
    body = agent.get(URL, {"q": "redis"}).json()
    assert [r["key"] for r in body["results"]] == ["note_redis", "note_one"]
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_tag_filter(agent, memories):
    assert keys(agent.get(URL, {"q": "docker neovim", "tag": "tools"})) == ["preference_editor"]
    assert keys(agent.get(URL, {"q": "docker neovim", "tag": "TOOLS "})) == ["preference_editor"]
    assert keys(agent.get(URL, {"q": "docker neovim", "tag": "nope"})) == []


def test_category_filter(agent, memories):
    found = keys(agent.get(URL, {"q": "docker neovim", "category": "project"}))
    assert found == ["project_synapse_deploy"]


def test_bad_category_is_400(agent, memories):
    response = agent.get(URL, {"q": "docker", "category": "gossip"})
    assert response.status_code == 400
    assert "category" in response.json()["fields"]


def test_expired_left_out_unless_asked(agent, mind):
    past = timezone.now() - timedelta(hours=1)
    future = timezone.now() + timedelta(hours=1)
    remember(mind, "context_old_sprint", "Sprint goal: ship search.", expires_at=past)
    remember(mind, "context_new_sprint", "Sprint goal: ship recall.", expires_at=future)
    assert keys(agent.get(URL, {"q": "sprint"})) == ["context_new_sprint"]
    assert agent.get(URL, {"q": "sprint"}).json()["total"] == 1
    found = keys(agent.get(URL, {"q": "sprint", "include_expired": "true"}))
    assert sorted(found) == ["context_new_sprint", "context_old_sprint"]


def test_bad_include_expired_is_400(agent, memories):
    response = agent.get(URL, {"q": "docker", "include_expired": "maybe"})
    assert response.status_code == 400
    assert "include_expired" in response.json()["fields"]


def test_other_minds_memories_are_never_returned(agent, stranger_agent, memories, stranger_mind):
    remember(stranger_mind.mind, "preference_editor", "Uses Emacs as editor.", category="note")
    assert keys(agent.get(URL, {"q": "editor emacs"})) == ["preference_editor"]
    nothing = agent.get(URL, {"q": "emacs"}).json()
    assert (nothing["query"], nothing["results"], nothing["total"]) == ("emacs", [], 0)
    theirs = stranger_agent.get(URL, {"q": "editor neovim docker schafer"}).json()
    assert [r["mind_id"] for r in theirs["results"]] == [stranger_mind.mind.id]


def test_mind_id_text_does_not_match_everything(agent, mind, memories):
    # The mind's own id is indexed (to scope fast) but never matches a user's words.
    assert keys(agent.get(URL, {"q": mind.id})) == []
    assert keys(agent.get(URL, {"q": mind.id.replace("_", "")})) == []


def test_human_searches_their_mind(human, memories):
    assert keys(human.get(URL, {"q": "neovim"})) == ["preference_editor"]


def test_anonymous_is_401(anon, memories):
    assert anon.get(URL, {"q": "neovim"}).status_code == 401


def test_trailing_slash_works(agent, memories):
    assert keys(agent.get(URL + "/", {"q": "neovim"})) == ["preference_editor"]


@pytest.mark.parametrize("params", [{}, {"q": ""}, {"q": "   "}, {"q": "\t"}])
def test_missing_or_blank_q_is_400_naming_q(agent, memories, params):
    response = agent.get(URL, params)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid"
    assert "q" in body["fields"]
    assert body["detail"].startswith("q:")


@pytest.mark.parametrize(
    ("limit", "status"), [("1", 200), ("100", 200), ("0", 400), ("101", 400), ("ten", 400)]
)
def test_limit_bounds(agent, memories, limit, status):
    response = agent.get(URL, {"q": "docker", "limit": limit})
    assert response.status_code == status
    if status == 400:
        assert "limit" in response.json()["fields"]


HOSTILE = [
    '"unbalanced',
    'neovim "docker',
    "AND(",
    "OR",
    "NOT docker",
    "docker AND",
    "NEAR(neovim docker)",
    "NEAR",
    "*",
    "**",
    "neovim*",
    "-",
    "-docker",
    "content:x",
    "key:preference",
    "{key}: editor",
    "mind_id:x",
    "^neovim",
    "'; DROP TABLE memories_memory; --",
    "1' OR '1'='1",
    "x\x00y",
    "\x00",
    "%00",
    "\\",
    "💥",
    "日本語",
    "x" * 5000,
    "docker " * 700,
    "a " * 500,
    '"' * 7,
    "()",
    "%",
    "_",
]


@pytest.mark.parametrize("q", HOSTILE)
def test_hostile_input_is_200_or_clear_400(agent, memories, q):
    response = agent.get(URL, {"q": q})
    assert response.status_code in (200, 400), response.content
    body = response.json()
    if response.status_code == 400:
        assert body["error"] == "invalid" and "q" in body["fields"]
        assert body["fields"]["q"][0]
    else:
        assert body["query"] == q
        assert isinstance(body["results"], list)
    assert Memory.objects.count() == len(memories)  # and the table is still there


def test_too_long_q_says_so(agent, memories):
    response = agent.get(URL, {"q": "x" * (MAX_QUERY_CHARS + 1)})
    assert response.status_code == 400
    assert str(MAX_QUERY_CHARS) in response.json()["fields"]["q"][0]


def test_unencoded_q_as_the_sdk_sends_it(agent, memories):
    # synapse-memory-sdk builds f"/memory/search?q={q}&limit={limit}" without encoding q;
    # requests then percent-encodes the spaces (and leaves "+" alone, read as a space).
    response = agent.get("/memory/search?q=which%20editor%20does+Mike%20use?&limit=5")
    assert keys(response)[0] == "preference_editor"


def test_query_count(agent, memories, django_assert_max_num_queries):
    # Mind Key lookup + the search itself (one statement: rank, count, page, snippets).
    # By meaning as well (hybrid), see tests/api/test_memory_search_meaning.py.
    with django_assert_max_num_queries(2):
        response = agent.get(
            URL,
            {"q": "docker neovim", "tag": "tools", "category": "preference", "mode": "keyword"},
        )
    assert response.status_code == 200


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_public_client_search(live_server, owner_mind):
    from synapse_memory import Synapse

    remember(owner_mind.mind, "preference_editor", "Uses Neovim daily.", category="preference")
    remember(owner_mind.mind, "fact_city", "Lives in München.", category="fact")
    client = Synapse(base_url=live_server.url, mind_key=owner_mind.key)
    answer = client.memory.search("which editor do I use", limit=5)
    assert [r["key"] for r in answer["results"]] == ["preference_editor"]
    assert client.memory.search("munchen")["results"][0]["key"] == "fact_city"


@pytest.mark.parametrize(
    ("tags", "tag", "found"),
    [
        (["docker-compose"], "docker-compose", True),
        (["docker", "compose"], "docker-compose", False),
        (["c++"], "c++", True),
        (["++"], "++", True),
        (['say "hi"'], 'say "hi"', True),
        (["münchen"], "MÜNCHEN", True),
    ],
)
def test_tag_filter_is_exact(agent, mind, tags, tag, found):
    remember(mind, "note_tagged", "kafka cluster notes", tags=tags)
    assert keys(agent.get(URL, {"q": "kafka", "tag": tag})) == (["note_tagged"] if found else [])


def test_a_phrase_does_not_span_two_fields(agent, mind):
    # The key ends with "docker", the tags and the content begin with "server": on both
    # backends a phrase matches inside one of key, tags or content, never across them.
    remember(mind, "note_docker", "server room notes", tags=["server", "docker"])
    remember(mind, "note_both", "The docker server is up.")
    assert keys(agent.get(URL, {"q": '"docker server"'})) == ["note_both"]
