"""GET /mind/export (JSON, CSV; streamed) and POST /mind/import (a JSON export)."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.export import CSV_COLUMNS
from memories.models import Memory, MemoryEvent
from minds.services import mind_create
from tests.api.memory_helpers import assert_invalid
from tests.conftest import bearer_client, jwt_for
from tests.factories import PERSON, remember

TRICKY = 'He said "hi, there",\nthen left;\r\n\ttabs, "quotes" and ünïcödé — 🧠'
FIELDS = ("category", "key", "content", "tags", "priority", "confidence", "expires_at")


def export(client, output="json", **params):
    response = client.get("/mind/export", {"format": output, **params})
    assert response.status_code == 200, response.content
    assert response.streaming
    return b"".join(response.streaming_content).decode()


@pytest.fixture
def stocked(mind):
    now = timezone.now()
    return [
        remember(
            mind,
            "user_name",
            "Olive",
            category="identity",
            priority="critical",
            actor=PERSON,
            tags=["person"],
        ),
        remember(mind, "tricky", TRICKY, tags=["quotes, commas", "edge"], confidence=0.3),
        remember(mind, "soon", "goes", category="context", expires_at=now + timedelta(days=1)),
        remember(mind, "gone", "went", category="context", expires_at=now - timedelta(days=1)),
        remember(mind, "tool_note", "from a tool", category="note", source="tool", priority="low"),
    ]


def test_json_export_holds_every_memory_and_marks_expired(agent, mind, stocked):
    body = json.loads(export(agent))
    assert body["mind"]["id"] == mind.pk and body["mind"]["name"] == mind.name
    assert body["exported_at"].endswith("Z")
    assert body["total"] == 5
    by_key = {m["key"]: m for m in body["memories"]}
    assert set(by_key) == {"user_name", "tricky", "soon", "gone", "tool_note"}
    assert by_key["gone"]["expired"] is True and by_key["soon"]["expired"] is False
    assert by_key["tricky"]["content"] == TRICKY
    assert by_key["user_name"]["verified"] is True


def test_export_of_an_empty_mind(agent):
    body = json.loads(export(agent))
    assert body["memories"] == [] and body["total"] == 0
    rows = list(csv.reader(io.StringIO(export(agent, "csv"))))
    assert rows == [list(CSV_COLUMNS)]


def test_csv_export_parses_with_the_csv_module(agent, stocked):
    response = agent.get("/mind/export?format=csv")
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == 5
    by_key = {row["key"]: row for row in rows}
    assert by_key["tricky"]["content"] == TRICKY
    assert by_key["tricky"]["tags"] == "quotes, commas, edge"
    assert by_key["gone"]["expired"] == "true" and by_key["soon"]["expired"] == "false"
    assert by_key["user_name"]["verified"] == "true"
    assert by_key["user_name"]["priority"] == "critical"
    assert by_key["tool_note"]["source"] == "tool"
    assert by_key["soon"]["verified_by"] == ""


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_cells_that_a_spreadsheet_would_run_are_text(agent, mind, start):
    formula = f'{start}HYPERLINK("http://example.invalid","x")'
    remember(mind, "formula", formula, tags=[f"{start}cmd", "plain"])
    rows = list(csv.DictReader(io.StringIO(export(agent, "csv"), newline="")))
    (row,) = rows
    assert row["content"] == "'" + formula
    if start.strip():  # a tag is trimmed when stored, so only these reach the CSV
        assert row["tags"] == f"'{start}cmd, plain"
    assert row["key"] == "formula" and row["category"] == "fact"
    # the JSON export stays exact
    (memory,) = json.loads(export(agent))["memories"]
    assert memory["content"] == formula


def test_export_streams_with_a_fixed_number_of_queries(agent, mind):
    for i in range(1200):  # more than one chunk of the iterator
        remember(mind, f"k{i:04d}")
    with CaptureQueriesContext(connection) as ctx:
        body = json.loads(export(agent))
    assert body["total"] == 1200
    assert [m["key"] for m in body["memories"]][:2] == ["k0000", "k0001"]
    assert len(ctx.captured_queries) <= 5


@pytest.mark.parametrize("accept", ["text/csv", "text/csv; charset=utf-8", "text/*, */*;q=0.1"])
def test_csv_export_honours_an_accept_of_text_csv(agent, stocked, accept):
    response = agent.get("/mind/export?format=csv", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert agent.get("/mind/export", HTTP_ACCEPT="image/png").status_code == 406


def test_bad_format_names_format(agent):
    body = assert_invalid(agent.get("/mind/export?format=xml"), "format")
    assert "json, csv" in body["fields"]["format"][0]


def _fresh_mind(owner, name="Restored"):
    mind, key = mind_create(owner=owner, name=name)
    return mind, bearer_client(key)


def test_person_import_of_an_export_reproduces_the_mind(human, owner, stocked, mind):
    dump = json.loads(export(human))
    restored, _ = _fresh_mind(owner)
    response = human.post(f"/mind/import?mind={restored.pk}", dump, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["created"] == 5 and response.json()["errors"] == []
    again = json.loads(export(human, mind=restored.pk))
    assert again["total"] == 5

    def comparable(memories, *extra):
        return sorted(tuple(str(m[f]) for f in (*FIELDS, *extra)) for m in memories)

    kept = ("source", "verified", "verified_by", "verified_at", "expired")
    assert comparable(again["memories"], *kept) == comparable(dump["memories"], *kept)
    assert {m["id"] for m in again["memories"]}.isdisjoint(m["id"] for m in dump["memories"])
    assert MemoryEvent.objects.filter(mind=restored, action="create").count() == 5


def test_person_import_keeps_only_their_own_verification(human, owner, mind):
    record = {"category": "fact", "content": "x", "source": "user", "verified": True}
    records = [
        {**record, "key": "mine", "verified_by": owner.email.upper()},
        {**record, "key": "unnamed"},
        {**record, "key": "theirs", "verified_by": "alice@example.com"},
    ]
    response = human.post(f"/mind/import?mind={mind.pk}", {"memories": records}, format="json")
    assert response.status_code == 200, response.content
    stored = {m.key: m for m in Memory.objects.filter(mind=mind)}
    assert stored["mine"].verified and stored["mine"].verified_by == owner.email
    assert stored["unnamed"].verified and stored["unnamed"].verified_by == owner.email
    assert not stored["theirs"].verified and stored["theirs"].verified_by == ""
    (item,) = [i for i in response.json()["results"] if i.get("key") == "theirs"]
    assert "alice@example.com" in " ".join(item["warnings"])


@pytest.mark.parametrize(
    "field, value",
    [("verified_by", "\ud800"), ("verified_by", 7), ("verified_at", "2999-01-01T00:00:00Z")],
)
def test_person_import_refuses_bad_provenance(human, mind, field, value):
    record = {"category": "fact", "key": "k", "content": "x", "verified": True, field: value}
    raw = json.dumps({"memories": [record]})  # ASCII-escaped: a lone surrogate as JSON sends it
    response = human.post(f"/mind/import?mind={mind.pk}", raw, content_type="application/json")
    assert response.status_code == 200, response.content
    (error,) = response.json()["errors"]
    assert field in error["fields"]
    assert not Memory.objects.filter(mind=mind).exists()


def test_agent_import_stores_agent_unverified(agent, owner, stocked):
    dump = json.loads(export(agent))
    restored, restored_agent = _fresh_mind(owner)
    body = restored_agent.post("/mind/import", dump, format="json").json()
    assert body["created"] == 5
    memories = Memory.objects.filter(mind=restored)
    assert not any(m.verified for m in memories)
    assert {m.key: m.source for m in memories}["user_name"] == "agent"
    assert {m.key: m.source for m in memories}["tool_note"] == "tool"
    assert {(m.key, m.content, m.priority) for m in memories} == {
        (m.key, m.content, m.priority) for m in stocked
    }


def test_import_is_an_upsert_and_reports_bad_items(agent, mind):
    remember(mind, "k", "old")
    body = agent.post(
        "/mind/import",
        {"memories": [{"category": "fact", "key": "k", "content": "new"}, {"category": "?"}]},
        format="json",
    ).json()
    assert body["updated"] == 1 and body["errors"][0]["index"] == 1
    assert_invalid(agent.post("/mind/import", {"mind": {}}, format="json"), "memories")


def test_import_reports_a_confidence_too_big_for_a_float_as_a_bad_item(agent, mind):
    item = {"category": "fact", "key": "k", "content": "x", "confidence": 10**400}
    response = agent.post("/mind/import", {"memories": [item]}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["errors"][0]["index"] == 0 and "confidence" in body["errors"][0]["fields"]
    assert not Memory.objects.filter(mind=mind).exists()


def test_export_and_import_isolation(agent, mind, stocked, stranger_agent, other_human, owner):
    theirs = json.loads(export(stranger_agent))
    assert theirs["total"] == 0 and theirs["mind"]["id"] != mind.pk
    assert other_human.get(f"/mind/export?mind={mind.pk}").status_code == 404
    dump = json.loads(export(agent))
    assert other_human.post(f"/mind/import?mind={mind.pk}", dump, format="json").status_code == 404
    # Importing someone's export into the stranger's mind writes only there.
    before = Memory.objects.filter(mind=mind).count()
    stranger_agent.post("/mind/import", dump, format="json")
    assert Memory.objects.filter(mind=mind).count() == before
    human = bearer_client(jwt_for(owner))
    assert json.loads(export(human))["total"] == before
