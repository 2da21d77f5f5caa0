"""GET /memory/recall?about=…: a recall for a topic over HTTP, as text and JSON, with the
other parameters, bad input, other minds, and search by meaning failing."""

from __future__ import annotations

import pytest

from memories.models import Priority
from memories.search import KEYWORD_ONLY, MAX_QUERY_CHARS
from tests.api.memory_helpers import assert_invalid, assert_isolated, json_of, text_of
from tests.factories import embed, memory_row
from tests.fake_embedder import fake_embedder  # noqa: F401
from tests.fake_embeddings_api import embeddings_api_fixture  # noqa: F401
from tests.memories.test_recall import shown_keys

URL = "/memory/recall"
PETS = "does she have any animals"  # shares no word with the dog's memory


@pytest.fixture
def memories(mind):
    stored = [
        memory_row(
            mind, "user_name", "Olive", category="identity", priority=Priority.CRITICAL,
            verified=True,
        ),
        memory_row(mind, "fact_dog", "Has a border collie, Pixel. Pixel is four.", tags=["home"]),
        memory_row(
            mind, "pet_food", "Salmon kibble twice a day; the vet chose it for Pixel's coat.",
            priority=Priority.LOW,
        ),
        memory_row(
            mind, "project_deploy", "Deployed with Docker Compose.", category="project",
            priority=Priority.HIGH, tags=["work"],
        ),
        memory_row(mind, "editor", "Uses Neovim.", category="preference", tags=["work"]),
    ]  # fmt: skip
    return {memory.key: memory for memory in stored}


def recall(client, **params):
    response = client.get(URL, params)
    assert response.status_code == 200, response.content
    return response


@pytest.mark.usefixtures("fake_embedder")
def test_critical_first_then_what_the_topic_is_about_by_meaning(agent, memories):
    embed(*memories.values())

    response = recall(agent, about=PETS)

    assert response["Content-Type"] == "text/plain; charset=utf-8"
    body = text_of(response)
    assert body.startswith(
        "Mind: Olive's Mind\n"
        "Memories: 5 total (1 verified, 4 unverified)\n"
        f"About: {PETS}\n"
        "\n"
        "[001] identity (CRITICAL) [verified]\n"
        "  user_name\n"
    )
    assert shown_keys(body)[:2] == ["user_name", "fact_dog"]
    assert "project_deploy" not in shown_keys(body)
    assert body.endswith(" (use search or recall without about)\n")

    data = json_of(recall(agent, about=PETS, format="json"))
    assert (data["about"], data["mode"], data["warnings"]) == (PETS, "hybrid", [])
    assert [m["key"] for m in data["memories"]] == shown_keys(body)
    assert data["other_topics"]["count"] == 5 - len(data["memories"])


@pytest.mark.usefixtures("fake_embedder")
def test_the_relevant_ones_go_best_first(agent, memories):
    embed(*memories.values())
    data = json_of(recall(agent, about="pixel", format="json"))
    assert [m["key"] for m in data["memories"]] == ["user_name", "fact_dog", "pet_food"]
    assert data["other_topics"] == {"count": 2, "keys": ["project_deploy", "editor"]}


@pytest.mark.usefixtures("fake_embedder")
def test_about_combines_with_budget_format_category_and_tag(agent, memories):
    embed(*memories.values())

    short = text_of(recall(agent, about="pixel", budget=100))
    assert len(short) <= 100 * 4
    assert shown_keys(short) == ["user_name"]
    assert (
        "… 1 normal-priority memory left out: fact_dog (use search or raise the budget)\n" in short
    )
    assert "low-priority memory left out: pet_food" in short

    data = json_of(recall(agent, about="pixel", budget=100, format="json"))
    assert data["budget"] == 100
    assert [(o["priority"], o["keys"]) for o in data["omitted"]] == [
        ("normal", ["fact_dog"]),
        ("low", ["pet_food"]),
    ]

    tagged = json_of(recall(agent, about="docker neovim", tag="WORK", format="json"))
    assert tagged["total"] == 2
    assert {m["key"] for m in tagged["memories"]} == {"project_deploy", "editor"}
    assert tagged["other_topics"]["count"] == 0
    project = json_of(recall(agent, about="docker neovim", category="project", format="json"))
    assert [m["key"] for m in project["memories"]] == ["project_deploy"]


def test_without_about_the_recall_is_as_before(agent, memories, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    whole = recall(agent)
    assert whole.streaming
    body = text_of(whole)
    assert "About:" not in body and len(shown_keys(body)) == 5
    data = json_of(recall(agent, format="json", budget=1000))
    assert "about" not in data and "other_topics" not in data


@pytest.mark.parametrize(
    "about, says",
    [
        ("   ", "Give the topic"),
        ("x" * (MAX_QUERY_CHARS + 1), f"at most {MAX_QUERY_CHARS} characters"),
        ("-pixel", "not only what to leave out"),
    ],
)
def test_an_about_with_nothing_to_search_for_is_400_naming_it(agent, memories, about, says):
    response = agent.get(URL, {"about": about, "budget": 100})
    body = assert_invalid(response, "about")
    assert says in body["fields"]["about"][0]
    assert body["detail"].startswith("about: ")
    assert_invalid(agent.get(URL, {"about": about, "format": "json"}), "about")


def test_an_empty_about_is_no_about_like_every_empty_parameter(agent, memories):
    assert text_of(agent.get(URL, {"about": ""})) == text_of(agent.get(URL))


def test_a_bad_budget_is_still_named_with_about(agent, memories):
    assert_invalid(agent.get(URL, {"about": "pixel", "budget": "0"}), "budget")


@pytest.mark.usefixtures("fake_embedder")
def test_another_minds_memories_never_appear(
    agent, stranger_agent, stranger_mind, other_human, memories, mind
):
    theirs = memory_row(stranger_mind.mind, "stranger_dog", "Has two border collies, Pixel too.")
    embed(*memories.values(), theirs)

    for about in ("pixel", PETS):
        ours = json_of(recall(agent, about=about, format="json"))
        assert "stranger_dog" not in {m["key"] for m in ours["memories"]}
        assert "stranger_dog" not in ours["other_topics"]["keys"]
        body = json_of(recall(stranger_agent, about=about, format="json"))
        assert [m["key"] for m in body["memories"]] == ["stranger_dog"]
        assert body["total"] == 1
    assert_isolated(
        f"{URL}?about=pixel", mind=mind, stranger_agent=stranger_agent, other_human=other_human
    )


def test_while_the_embeddings_api_fails_it_ranks_by_keyword_and_says_so(
    agent, memories, embeddings_api
):
    embed(*memories.values())  # through the API, answering
    embeddings_api.mode = "fail"

    body = text_of(recall(agent, about="pixel"))
    assert f"About: pixel\nWarning: {KEYWORD_ONLY}\n\n[001]" in body
    assert shown_keys(body) == ["user_name", "fact_dog", "pet_food"]
    assert embeddings_api.base_url not in body

    data = json_of(recall(agent, about=PETS, format="json"))
    assert (data["mode"], data["warnings"]) == ("keyword", [KEYWORD_ONLY])
    assert [m["key"] for m in data["memories"]] == ["user_name"]  # no word in common


def test_control_characters_in_about_are_spaces_never_a_500(agent, memories, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    body = text_of(recall(agent, about="pixel\x00collie"))
    assert "About: pixel collie\n\n" in body
    assert shown_keys(body) == ["user_name", "fact_dog", "pet_food"]
    assert_invalid(agent.get(f"{URL}?about=%00"), "about")
