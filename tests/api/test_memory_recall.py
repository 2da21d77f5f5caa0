"""GET /memory/recall over HTTP: formats, parameters, who sees what."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Priority
from minds.services import mind_create
from tests.api.memory_helpers import body_of, json_of, text_of
from tests.factories import many_memories, memory_row


@pytest.fixture
def memories(mind):
    memory_row(
        mind, "user_name", "Olive", category="identity", priority=Priority.CRITICAL,
        verified=True, tags=["person"],
    )  # fmt: skip
    memory_row(mind, "editor", "Uses Neovim", category="preference", tags=["Tools".lower()])
    memory_row(mind, "old_plan", "Gone", expires_at=timezone.now() - timedelta(minutes=1))
    for i in range(30):
        memory_row(mind, f"trivia_{i:02d}", "some low priority trivia " * 5, priority=Priority.LOW)


def test_agent_recalls_plain_text(agent, memories):
    response = agent.get("/memory/recall")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    body = text_of(response)
    assert body.startswith(
        "Mind: Olive's Mind\n"
        "Memories: 32 total (1 verified, 31 unverified)\n"
        "\n"
        "[001] identity (CRITICAL) [verified]\n"
        "  user_name\n"
        "  Olive\n"
        "  Tags: person\n"
        "\n"
        "[002] preference (NORMAL) [unverified]\n"
        "  editor\n"
        "  Uses Neovim\n"
        "  Tags: tools\n"
    )
    assert "old_plan" not in body
    assert "[032] fact (LOW) [unverified]" in body


def test_trailing_slash_works_too(agent, memories):
    assert agent.get("/memory/recall/").status_code == 200


def test_budget_cuts_low_priority_and_says_so(agent, memories):
    body = text_of(agent.get("/memory/recall?budget=150"))

    assert len(body) <= 150 * 4
    assert "user_name" in body and "editor" in body
    assert "low-priority memories left out: trivia_" in body
    assert body.endswith("(use search or raise the budget)\n")


def test_filters(agent, memories):
    body = text_of(agent.get("/memory/recall?tag=TOOLS"))
    assert "Memories: 1 total (0 verified, 1 unverified)" in body
    assert "editor" in body and "user_name" not in body

    body = text_of(agent.get("/memory/recall?category=identity"))
    assert "Memories: 1 total (1 verified, 0 unverified)" in body


def test_include_expired(agent, memories):
    body = text_of(agent.get("/memory/recall?include_expired=true"))
    assert "Memories: 33 total" in body
    assert "[expired]\n  old_plan\n" in body


def test_json_format(agent, memories, mind):
    response = agent.get("/memory/recall?format=json&budget=150")

    assert response.status_code == 200
    data = response.json()
    assert data["mind"] == {"id": mind.id, "name": "Olive's Mind"}
    assert (data["total"], data["verified"], data["unverified"]) == (32, 1, 31)
    assert [m["key"] for m in data["memories"]][:2] == ["user_name", "editor"]
    assert data["memories"][0]["priority"] == "critical"
    assert data["memories"][0]["id"].startswith("mem_")
    [low] = data["omitted"]
    assert low["priority"] == "low"
    assert low["count"] == 32 - len(data["memories"])
    assert len(low["keys"]) == 10

    text = text_of(agent.get("/memory/recall?budget=150"))
    for memory in data["memories"]:
        assert f"\n  {memory['key']}\n" in text


@pytest.mark.parametrize(
    "query, field",
    [
        ("budget=0", "budget"),
        ("budget=-5", "budget"),
        ("budget=lots", "budget"),
        ("budget=1.5", "budget"),
        ("format=xml", "format"),
        ("category=secrets", "category"),
        ("include_expired=maybe", "include_expired"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(agent, query, field):
    response = agent.get(f"/memory/recall?{query}")

    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid"
    assert field in body["fields"]
    assert field in body["detail"]


def test_stranger_agent_sees_only_its_own_mind(stranger_agent, stranger_mind, memories):
    memory_row(stranger_mind.mind, "stranger_fact", "mine")

    body = text_of(stranger_agent.get("/memory/recall"))

    assert body.startswith("Mind: Stranger's Mind\nMemories: 1 total")
    assert "stranger_fact" in body
    assert "user_name" not in body and "Olive" not in body
    data = json_of(stranger_agent.get("/memory/recall?format=json"))
    assert [m["key"] for m in data["memories"]] == ["stranger_fact"]


def test_mind_key_naming_another_mind_is_refused(stranger_agent, mind, memories):
    response = stranger_agent.get(f"/memory/recall?mind={mind.id}")
    assert response.status_code == 400
    assert "user_name" not in text_of(response)


def test_human_with_one_mind_recalls_it(human, memories):
    response = human.get("/memory/recall")
    assert response.status_code == 200
    assert "user_name" in text_of(response)


def test_human_with_several_minds_names_one(human, owner, mind, memories):
    second, _ = mind_create(owner=owner, name="Second")
    memory_row(second, "second_fact")

    assert human.get("/memory/recall").status_code == 400
    body = text_of(human.get(f"/memory/recall?mind={second.id}"))
    assert "second_fact" in body and "user_name" not in body
    other = text_of(human.get("/memory/recall", HTTP_X_MIND_ID=mind.id))
    assert "user_name" in other and "second_fact" not in other


def test_human_cannot_recall_someone_elses_mind(human, stranger_mind):
    response = human.get(f"/memory/recall?mind={stranger_mind.mind.id}")
    assert response.status_code == 404


def test_anonymous_gets_401(anon, memories):
    response = anon.get("/memory/recall")
    assert response.status_code == 401
    assert response.json()["error"] == "not_authenticated"


def test_bad_key_gets_401(anon, memories):
    anon.credentials(HTTP_AUTHORIZATION="Bearer mk_" + "x" * 43)
    assert anon.get("/memory/recall").status_code == 401


@pytest.mark.parametrize("query", ["", "?budget=100", "?format=json&budget=100"])
def test_recall_is_a_fixed_number_of_queries(agent, mind, query, django_assert_max_num_queries):
    many_memories(
        mind, 400, key=lambda i: f"k_{i}", content=lambda i: "text " * 40, priority=lambda i: i % 4
    )
    # key lookup + recall (at most two counts, the stream, three key lookups)
    with django_assert_max_num_queries(7):
        response = agent.get(f"/memory/recall{query}")
        body_of(response)  # a whole recall reads its rows as it is sent
    assert response.status_code == 200


@pytest.mark.parametrize(
    "accept",
    ["text/plain", "text/plain; charset=utf-8", "text/markdown, text/plain;q=0.9", "text/*", "*/*"],
)
def test_recall_honours_an_accept_that_admits_plain_text(agent, accept):
    response = agent.get("/memory/recall", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    as_json = agent.get("/memory/recall?format=json", HTTP_ACCEPT="application/json")
    assert as_json.status_code == 200 and as_json["Content-Type"] == "application/json"


def test_recall_refuses_an_accept_it_cannot_answer(agent):
    response = agent.get("/memory/recall", HTTP_ACCEPT="image/png")
    assert response.status_code == 406
    assert response.json()["error"] == "not_acceptable"
    bad = agent.get("/memory/recall?budget=0", HTTP_ACCEPT="text/plain")
    assert bad.status_code == 400 and bad.json()["fields"]["budget"]


def test_a_whole_recall_is_streamed_and_a_budgeted_one_is_not(agent, memories):
    whole = agent.get("/memory/recall")
    assert whole.streaming and whole["Content-Type"] == "text/plain; charset=utf-8"
    assert text_of(whole).count("\n[0") == 32
    as_json = agent.get("/memory/recall?format=json")
    assert as_json.streaming and len(json_of(as_json)["memories"]) == 32
    assert not agent.get("/memory/recall?budget=100").streaming


def test_a_budget_over_the_most_is_400_before_anything_is_read(agent, memories):
    response = agent.get("/memory/recall?budget=1000001")
    assert response.status_code == 400 and not response.streaming
    assert "At most 1,000,000 tokens" in response.json()["fields"]["budget"][0]
    assert agent.get("/memory/recall?budget=1000000").status_code == 200
