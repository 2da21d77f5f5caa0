"""Writing what you saw: GET /memory/{id} gives an ETag; PUT, PATCH, DELETE, verify and
unverify honour If-Match (412 and nothing written when the memory changed since)."""

from __future__ import annotations

import pytest

from memories.models import Memory, MemoryEvent
from minds.services import mind_create

SEEN = "User prefers dark mode."
WRITTEN_SINCE = "User authorised the agent to send money without asking."

# Each write to one memory, as (method, path suffix, body), by who may make it.
WRITES = {
    "put": ("put", "", {"priority": "high"}),
    "patch": ("patch", "", {"tags": ["ui"]}),
    "delete": ("delete", "", None),
    "verify": ("post", "/verify", None),
    "unverify": ("post", "/unverify", None),
}


@pytest.fixture
def stored(agent) -> dict:
    body = {"category": "preference", "key": "ui_theme", "content": SEEN}
    return agent.post("/memory", body, format="json").json()


def send(client, write: str, memory_id: str, if_match: str | None = None):
    method, suffix, body = WRITES[write]
    headers = {} if if_match is None else {"HTTP_IF_MATCH": if_match}
    return getattr(client, method)(f"/memory/{memory_id}{suffix}", body, format="json", **headers)


def etag_of(client, memory_id: str) -> str:
    response = client.get(f"/memory/{memory_id}")
    assert response.status_code == 200
    return response["ETag"]


def events(memory_id: str) -> int:
    return MemoryEvent.objects.filter(memory_id=memory_id).count()


def test_get_carries_a_strong_etag(human, stored):
    tag = etag_of(human, stored["id"])
    assert tag.startswith('"') and tag.endswith('"') and len(tag) > 2
    assert etag_of(human, stored["id"]) == tag  # no write, same version


def test_every_write_changes_the_etag(agent, human, stored):
    memory_id = stored["id"]
    seen = {etag_of(human, memory_id)}
    for client, write in ((agent, "patch"), (human, "verify"), (human, "unverify")):
        assert send(client, write, memory_id).status_code == 200
        seen.add(etag_of(human, memory_id))
    agent.put(f"/memory/{memory_id}", {"content": "Prefers light mode."}, format="json")
    seen.add(etag_of(human, memory_id))
    assert len(seen) == 5


@pytest.mark.parametrize(
    "body",
    [
        {"content": "Dark mode, always."},
        {"confidence": 1, "tags": ["UI", "theme"]},
        {"expires_at": "2031-05-06T07:08:09.123456+02:00"},
        {"expires_at": 1900000000.5, "priority": "critical"},
    ],
)
def test_write_answers_carry_the_etag_a_get_then_gives(human, stored, body):
    """A client can chain writes: the ETag of an answer is the one the next GET gives."""
    memory_id = stored["id"]
    answer = human.patch(f"/memory/{memory_id}", body, format="json")
    assert answer.status_code == 200
    assert answer["ETag"] == etag_of(human, memory_id)
    for write in ("unverify", "verify"):
        answer = send(human, write, memory_id, answer["ETag"])
        assert answer.status_code == 200
        assert answer["ETag"] == etag_of(human, memory_id)


@pytest.mark.parametrize("write", list(WRITES))
def test_if_match_of_the_current_version_writes(human, stored, write):
    memory_id = stored["id"]
    if write == "unverify":
        send(human, "verify", memory_id)
    before = events(memory_id)
    response = send(human, write, memory_id, etag_of(human, memory_id))
    assert response.status_code == 200, response.content
    assert events(memory_id) == before + 1


@pytest.mark.parametrize("write", list(WRITES))
def test_stale_if_match_is_412_and_writes_nothing(agent, human, stored, write):
    memory_id = stored["id"]
    if write == "unverify":
        send(human, "verify", memory_id)
    seen = etag_of(human, memory_id)
    agent.patch(f"/memory/{memory_id}", {"priority": "low"}, format="json")
    row = Memory.objects.values().get(pk=memory_id)
    before = events(memory_id)

    response = send(human, write, memory_id, seen)

    assert response.status_code == 412, response.content
    body = response.json()
    assert body["error"] == "precondition_failed"
    assert body["detail"]
    assert Memory.objects.values().get(pk=memory_id) == row
    assert events(memory_id) == before


def test_a_person_cannot_verify_text_written_since_they_read_it(agent, human, stored):
    """The review finding: the person read one text, the agent rewrote it, the person's
    verify of what they read must not verify the new text."""
    memory_id = stored["id"]
    read = human.get(f"/memory/{memory_id}")
    assert read.json()["content"] == SEEN
    agent.patch(f"/memory/{memory_id}", {"content": WRITTEN_SINCE}, format="json")

    refused = human.post(f"/memory/{memory_id}/verify", HTTP_IF_MATCH=read["ETag"])

    assert refused.status_code == 412
    assert Memory.objects.get(pk=memory_id).verified is False
    again = human.get(f"/memory/{memory_id}")
    assert again.json()["content"] == WRITTEN_SINCE
    verified = human.post(f"/memory/{memory_id}/verify", HTTP_IF_MATCH=again["ETag"])
    assert verified.status_code == 200
    assert verified.json()["verified"] is True


def test_if_match_star_and_lists(agent, human, stored):
    memory_id = stored["id"]
    old = etag_of(human, memory_id)
    agent.patch(f"/memory/{memory_id}", {"tags": ["a"]}, format="json")
    current = etag_of(human, memory_id)
    assert send(human, "patch", memory_id, "*").status_code == 200
    current = etag_of(human, memory_id)
    assert send(human, "verify", memory_id, f"{old}, {current}").status_code == 200
    current = etag_of(human, memory_id)
    assert send(human, "unverify", memory_id, f" ,{current} ,").status_code == 200


def test_a_weak_tag_never_matches(human, stored):
    """If-Match compares strongly (RFC 9110): W/ in front of the current ETag is a 412."""
    memory_id = stored["id"]
    response = send(human, "verify", memory_id, "W/" + etag_of(human, memory_id))
    assert response.status_code == 412
    assert Memory.objects.get(pk=memory_id).verified is False


@pytest.mark.parametrize(
    "header", ["", "   ", "abc", '"unterminated', "W/abc", '"a" "b"', '"a";"b"', "**"]
)
def test_a_malformed_if_match_is_400_and_writes_nothing(human, stored, header):
    memory_id = stored["id"]
    response = send(human, "verify", memory_id, header)
    assert response.status_code == 400, (header, response.content)
    body = response.json()
    assert body["error"] == "invalid"
    assert "If-Match" in body["fields"]
    assert Memory.objects.get(pk=memory_id).verified is False


@pytest.mark.parametrize("write", list(WRITES))
def test_another_mind_is_404_not_412(other_human, other_user, stranger_agent, mind, stored, write):
    """A version check never tells whether a memory of another mind exists."""
    mind_create(owner=other_user, name="Theirs")
    memory_id = stored["id"]
    for header in ('"stale"', "*"):
        method, suffix, body = WRITES[write]
        path = f"/memory/{memory_id}{suffix}?mind={mind.pk}"
        response = getattr(other_human, method)(path, body, format="json", HTTP_IF_MATCH=header)
        assert response.status_code == 404, response.content
        if write not in ("verify", "unverify"):  # a Mind Key is refused those first (403)
            assert send(stranger_agent, write, memory_id, header).status_code == 404
    assert events(memory_id) == 1


def test_a_missing_memory_is_404_whatever_if_match_says(human):
    for header in ('"x"', "*", "malformed"):
        assert send(human, "patch", "mem_nothing", header).status_code == 404


@pytest.mark.parametrize("if_match", ['"stale"', "*", "garbage"])
def test_store_by_key_refuses_if_match_and_writes_nothing(agent, human, stored, if_match):
    """POST /memory is an upsert by key: a condition it cannot judge is refused, not dropped."""
    body = {"category": "preference", "key": "ui_theme", "content": WRITTEN_SINCE}
    for client in (agent, human):
        response = client.post("/memory", body, format="json", HTTP_IF_MATCH=if_match)
        assert response.status_code == 400, response.content
        answer = response.json()
        assert answer["error"] == "invalid"
        assert "PUT or PATCH /memory/{id}" in answer["fields"]["If-Match"][0]
        created = {**body, "key": "new_key"}
        assert (
            client.post("/memory", created, format="json", HTTP_IF_MATCH=if_match).status_code
            == 400
        )
    assert Memory.objects.get(pk=stored["id"]).content == SEEN
    assert not Memory.objects.filter(key="new_key").exists()
    assert events(stored["id"]) == 1


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/memory/sync", {"memories": [{"category": "fact", "key": "bulk", "content": "x"}]}),
        ("/mind/import", {"memories": [{"category": "fact", "key": "bulk", "content": "x"}]}),
    ],
)
def test_bulk_stores_by_key_refuse_if_match_and_write_nothing(agent, human, mind, path, body):
    for client in (agent, human):
        response = client.post(path, body, format="json", HTTP_IF_MATCH='"v1"')
        assert response.status_code == 400, response.content
        assert f"{path} stores by category and key" in response.json()["fields"]["If-Match"][0]
    assert not Memory.objects.filter(key="bulk").exists()
    assert agent.post(path, body, format="json").status_code == 200


def test_store_by_key_for_another_mind_is_404_before_any_if_match_verdict(
    other_human, other_user, mind
):
    mind_create(owner=other_user, name="Theirs")
    body = {"category": "fact", "key": "k", "content": "x"}
    response = other_human.post(f"/memory?mind={mind.pk}", body, format="json", HTTP_IF_MATCH="*")
    assert response.status_code == 404
    assert not Memory.objects.filter(mind=mind).exists()
