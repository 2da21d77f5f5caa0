"""A person's calls on one memory find its mind: no ?mind= needed, 404 when they cannot
reach it, 403 when their level there is too low (../shared/API.md section 9.5)."""

from __future__ import annotations

import pytest

from memories.models import MemoryEvent
from tests.conftest import bearer_client, jwt_for
from tests.factories import mind_make, remember, share_make, user_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_minds(owner, mind):
    """The owner with a second mind; the memory lives in the first."""
    mind_make(owner, name="Second")
    return remember(mind, "fact_one", "Lives in Berlin")


def test_a_person_with_two_minds_reads_and_verifies_by_id(human, two_minds):
    memory = two_minds
    assert human.get(f"/memory/{memory.pk}").json()["content"] == "Lives in Berlin"
    verified = human.post(f"/memory/{memory.pk}/verify")
    assert verified.status_code == 200 and verified.json()["verified"] is True
    assert human.post(f"/memory/{memory.pk}/unverify").json()["verified"] is False
    assert human.get(f"/memory/{memory.pk}/related").status_code == 200
    assert human.patch(f"/memory/{memory.pk}", {"content": "Berlin"}, "json").status_code == 200
    assert human.post(f"/memory/{memory.pk}/supersede", {"by": None}, "json").status_code == 200
    assert human.delete(f"/memory/{memory.pk}").json() == {"deleted": True, "id": memory.pk}


def test_lists_with_two_minds_still_ask_for_the_mind(human, two_minds):
    response = human.get("/memory")
    assert response.status_code == 400
    assert "several" in response.json()["detail"]


def test_a_person_with_no_mind_gets_404_for_anothers_memory(other_human, mind):
    memory = remember(mind, "fact_one", "secret")
    for response in (
        other_human.get(f"/memory/{memory.pk}"),
        other_human.post(f"/memory/{memory.pk}/verify"),
        other_human.post(f"/memory/{memory.pk}/unverify"),
        other_human.get(f"/memory/{memory.pk}/related"),
        other_human.put(f"/memory/{memory.pk}", {"content": "x"}, "json"),
        other_human.delete(f"/memory/{memory.pk}"),
        other_human.post(f"/memory/{memory.pk}/supersede", {"by": None}, "json"),
    ):
        assert response.status_code == 404, response.content
        assert "secret" not in response.content.decode()


def test_a_missing_id_is_404_too(human):
    assert human.get("/memory/mem_doesnotexist").status_code == 404


def test_a_shared_writer_verifies_by_id_and_the_audit_names_them(mind, owner):
    mind_make(owner, name="Second")
    writer = user_make("writer@example.com")
    own_mind, _ = mind_make(writer, name="Writer's own")  # they reach two minds
    share_make(mind, writer, acl="write")
    memory = remember(mind, "fact_one", "Lives in Berlin")
    client = bearer_client(jwt_for(writer))
    assert client.post(f"/memory/{memory.pk}/verify").status_code == 200
    event = MemoryEvent.objects.filter(memory_id=memory.pk, action="verify").get()
    assert (event.actor_type, event.actor) == ("user", "writer@example.com")
    assert own_mind.pk != memory.mind_id


def test_a_shared_reader_reads_by_id_but_may_not_verify(mind):
    reader = user_make("reader@example.com")
    share_make(mind, reader, acl="read")
    memory = remember(mind, "fact_one", "Lives in Berlin")
    client = bearer_client(jwt_for(reader))
    assert client.get(f"/memory/{memory.pk}").status_code == 200
    refused = client.post(f"/memory/{memory.pk}/verify")
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    assert client.delete(f"/memory/{memory.pk}").status_code == 403


def test_naming_another_mind_still_scopes_to_it(human, owner, mind):
    second, _ = mind_make(owner, name="Second")
    memory = remember(mind, "fact_one", "x")
    assert human.get(f"/memory/{memory.pk}?mind={second.pk}").status_code == 404
    assert human.get(f"/memory/{memory.pk}?mind={mind.pk}").status_code == 200


def test_a_single_shared_mind_is_the_default_for_lists(mind):
    reader = user_make("reader@example.com")
    share_make(mind, reader, acl="read")
    remember(mind, "fact_one", "x")
    client = bearer_client(jwt_for(reader))
    assert client.get("/memory").json()["total"] == 1
