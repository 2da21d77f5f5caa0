"""Idempotency-Key on POST /memory: replay, conflict, scope, expiry, concurrency."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from api.models import IdempotencyRecord
from memories.models import Memory, MemoryEvent
from minds.services import mind_create
from tests.conftest import bearer_client, jwt_for

BODY = {"category": "project", "key": "project_synapse", "content": "Building Synapse"}


def post(client, body=BODY, key="key-1", **extra):
    return client.post("/memory", body, format="json", HTTP_IDEMPOTENCY_KEY=key, **extra)


def test_replay_returns_the_first_answer_byte_for_byte_without_writing(agent):
    first = post(agent)
    second = post(agent)
    assert first.status_code == second.status_code == 201
    assert first.content == second.content
    assert second["Idempotent-Replayed"] == "true"
    assert Memory.objects.count() == 1
    assert MemoryEvent.objects.count() == 1


def test_replay_does_not_reapply_after_a_later_change(agent):
    first = post(agent)
    agent.put(f"/memory/{first.json()['id']}", {"content": "Changed since"}, format="json")
    replay = post(agent)
    assert replay.content == first.content
    assert Memory.objects.get().content == "Changed since"


def test_same_key_with_a_different_body_is_409(agent):
    post(agent)
    response = post(agent, {**BODY, "content": "Something else"})
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "idempotency_key_reused"
    assert "detail" in body
    assert Memory.objects.get().content == BODY["content"]


def test_a_new_key_applies_again(agent):
    assert post(agent, key="a").status_code == 201
    assert post(agent, key="b").status_code == 200


def test_key_longer_than_255_is_400(agent):
    response = post(agent, key="x" * 256)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["fields"]
    assert Memory.objects.count() == 0
    assert post(agent, key="x" * 255).status_code == 201


def test_blank_key_is_400(agent):
    assert post(agent, key="   ").status_code == 400


def test_failed_requests_are_not_recorded(agent):
    bad = post(agent, {**BODY, "category": "nope"})
    assert bad.status_code == 400
    assert IdempotencyRecord.objects.count() == 0
    fixed = post(agent, BODY)
    assert fixed.status_code == 201


def test_keys_are_scoped_per_credential(agent, stranger_agent):
    mine = post(agent)
    theirs = post(stranger_agent)
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]
    assert Memory.objects.count() == 2


def test_human_keys_are_scoped_per_mind(human, owner, agent):
    second, _ = mind_create(owner=owner, name="Second")
    first_mind = owner.minds.order_by("created_at").first()
    a = human.post(f"/memory?mind={first_mind.id}", BODY, format="json", HTTP_IDEMPOTENCY_KEY="k")
    b = human.post(f"/memory?mind={second.id}", BODY, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert a.status_code == b.status_code == 201
    assert a.json()["mind_id"] != b.json()["mind_id"]
    # the agent of the first mind is another credential: its key space is its own
    assert post(agent, key="k").status_code == 200


def test_records_expire_after_24_hours(agent):
    post(agent)
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))
    again = post(agent, {**BODY, "content": "A new day"})
    assert again.status_code == 200
    assert again.json()["content"] == "A new day"
    assert IdempotencyRecord.objects.count() == 1


def test_status_200_answers_replay_as_200(agent):
    agent.post("/memory", BODY, format="json")
    first = post(agent)
    assert first.status_code == 200
    assert post(agent).status_code == 200


def test_requests_without_a_key_are_not_recorded(agent):
    agent.post("/memory", BODY, format="json")
    assert IdempotencyRecord.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_write_once(owner, owner_mind):
    responses = []
    failures: list[BaseException] = []
    barrier = threading.Barrier(6)
    token = jwt_for(owner)

    def send(i: int) -> None:
        try:
            # half through the Mind Key, half through the owner's JWT: two credentials
            client = bearer_client(owner_mind.key if i % 2 else token)
            barrier.wait()
            responses.append((i % 2, post(client, key="shared")))
        except BaseException as exc:
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    for credential in (0, 1):
        bodies = {r.content for c, r in responses if c == credential}
        assert len(bodies) == 1  # every request of one credential got the same answer
    assert IdempotencyRecord.objects.count() == 2
    assert Memory.objects.count() == 1
    assert MemoryEvent.objects.filter(action="create").count() == 1


def test_losing_the_record_insert_rolls_back_the_write_and_replays(agent, monkeypatch):
    """The path PostgreSQL takes when two requests pass the lookup at once."""
    from api import idempotency

    first = post(agent)
    real_find = idempotency._find
    calls = {"n": 0}

    def blind_first_lookup(**kw):
        calls["n"] += 1
        return None if calls["n"] == 1 else real_find(**kw)

    monkeypatch.setattr(idempotency, "_find", blind_first_lookup)
    Memory.objects.update(content="changed meanwhile")  # so a second apply would write
    replay = post(agent, {**BODY})
    assert replay.content == first.content
    assert Memory.objects.get().content == "changed meanwhile"  # the re-apply was rolled back
    assert MemoryEvent.objects.count() == 1
    conflict = post(agent, {**BODY, "content": "other"})
    assert conflict.status_code == 409
