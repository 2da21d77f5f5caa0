"""A NUL character in a request finds nothing (or is refused by name), never a 500.

PostgreSQL cannot hold NUL in text at all (SQLite can), so a NUL that reached a query was a
500 there only. No record holds one, so a lookup by one finds nothing: the answer SQLite
gives. The PostgreSQL pass of `make test` runs this file too.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from memories.models import Memory
from tests.api.memory_helpers import json_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(mind):
    return Memory.objects.create(mind=mind, category="note", key="note_x", content="quokka")


@pytest.mark.parametrize(
    "path",
    [
        "/memory?tag=a%00b",
        "/memory/by-tag?tag=%00",
        "/memory/search?q=x%00y",
        "/memory/search?q=quokka&tag=%00",
        "/memory/audit?memory=mem_%00",
        "/memory/mem_x%00y",
        "/memory/recall?budget=1%00",
        "/memory/expiring?within=1d%00",
        "/memory/diff?since=%00",
        "/memory/related/mem_%00",
        "/memory?mind=m_%00",
        "/memory?x%00=1",
    ],
)
def test_nul_in_the_url_is_never_a_500(agent, human, stored, path):
    for client in (agent, human):
        response = client.get(path)
        assert response.status_code in (200, 400, 404), (path, response.content)
        if response.status_code == 400:
            assert response.json()["error"] == "invalid"


def test_nul_in_the_mind_header_is_never_a_500(human, stored):
    response = human.get("/memory", HTTP_X_MIND_ID="m_\x00")
    assert response.status_code == 404


@pytest.mark.parametrize(
    "path", ["/memory?tag=a%00b", "/memory/by-tag?tag=%00", "/memory/audit?memory=mem_%00"]
)
def test_a_value_with_nul_matches_nothing(agent, stored, path):
    response = agent.get(path)
    assert response.status_code == 200
    assert json_of(response)["total"] == 0  # the audit page is streamed


def test_nul_in_stored_fields_is_refused_by_field(agent):
    for field, value in [("content", "a\x00b"), ("key", "note_\x00"), ("tags", ["a\x00"])]:
        body = {"category": "note", "key": "note_ok", "content": "fine", field: value}
        response = agent.post("/memory", body, format="json")
        assert response.status_code == 400, (field, response.content)
        assert field in response.json()["fields"]
    assert Memory.objects.count() == 0


def test_nul_in_dashboard_search_is_never_a_500(owner, mind, stored):
    client = Client()
    client.force_login(owner)
    response = client.get(f"/dashboard/minds/{mind.pk}/memories/", {"q": "x\x00", "tag": "\x00"})
    assert response.status_code in (200, 400)


def test_nul_in_mcp_arguments_is_a_tool_error_not_a_500(owner_mind, stored):
    def call(name, arguments):
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        return Client().post(
            "/mcp",
            data=json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {owner_mind.key}",
        )

    for name, arguments in [
        ("search", {"query": "quokka", "tag": "\x00"}),
        ("memories_by_tag", {"tag": "a\x00"}),
        ("remember", {"category": "note", "key": "note_y", "content": "a\x00b"}),
        ("forget", {"category": "note", "key": "note_\x00"}),
        ("list_memories", {"tag": "\x00"}),
    ]:
        response = call(name, arguments)
        assert response.status_code == 200, (name, response.content)
        assert response.json()["result"]["isError"] is True, (name, response.content)
