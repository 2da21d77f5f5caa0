import pytest
from django.test import override_settings

from minds.models import Mind, hash_mind_key
from tests.conftest import bearer_client

pytestmark = pytest.mark.django_db


def test_create_mind_shows_key_once(human, owner):
    response = human.post("/minds", {"name": "Work assistant", "description": "Job"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("m_")
    assert body["name"] == "Work assistant"
    assert body["mind_key"].startswith("mk_") and len(body["mind_key"]) >= 3 + 32
    assert body["key_prefix"] == body["mind_key"][:11]
    mind = Mind.objects.get(pk=body["id"])
    assert mind.owner == owner
    # Stored only as a hash; never shown again.
    assert body["mind_key"] not in (mind.key_hash, mind.key_prefix)
    assert mind.key_hash == hash_mind_key(body["mind_key"])
    assert "mind_key" not in human.get(f"/minds/{mind.id}").json()
    assert all("mind_key" not in m for m in human.get("/minds").json()["minds"])


def test_mind_ids_and_keys_are_random(human):
    first = human.post("/minds", {"name": "A"}, format="json").json()
    second = human.post("/minds", {"name": "B"}, format="json").json()
    assert first["id"] != second["id"]
    assert first["mind_key"] != second["mind_key"]


def test_list_shows_only_own_minds_with_counts(human, mind, stranger_mind):
    response = human.get("/minds")
    assert response.status_code == 200
    body = response.json()
    assert body["total"] == 1
    assert [m["id"] for m in body["minds"]] == [mind.id]
    assert body["minds"][0]["memory_count"] == 0


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": "   "}, {"name": "x" * 101}])
def test_create_needs_a_name(human, body):
    response = human.post("/minds", body, format="json")
    assert response.status_code == 400
    assert "name" in response.json()["fields"]


def test_get_patch_delete_own_mind(human, mind):
    assert human.get(f"/minds/{mind.id}").json()["name"] == "Olive's Mind"
    response = human.patch(f"/minds/{mind.id}", {"name": "Renamed"}, format="json")
    assert response.status_code == 200
    assert response.json()["name"] == "Renamed"
    response = human.delete(f"/minds/{mind.id}")
    assert response.json() == {"deleted": True, "id": mind.id}
    assert not Mind.objects.filter(pk=mind.id).exists()


def test_patch_cannot_change_id_or_key(human, mind):
    old_hash = mind.key_hash
    human.patch(f"/minds/{mind.id}", {"id": "m_hijack", "key_hash": "x"}, format="json")
    mind.refresh_from_db()
    assert mind.key_hash == old_hash
    assert not Mind.objects.filter(pk="m_hijack").exists()


@pytest.mark.parametrize("verb", ["get", "patch", "delete"])
def test_other_user_gets_404_and_changes_nothing(other_human, mind, verb):
    response = getattr(other_human, verb)(f"/minds/{mind.id}", {"name": "Mine now"}, format="json")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    mind.refresh_from_db()
    assert mind.name == "Olive's Mind"


def test_other_user_cannot_rotate(other_human, owner_mind, agent):
    response = other_human.post(f"/minds/{owner_mind.mind.id}/rotate-key")
    assert response.status_code == 404
    assert agent.get("/minds").status_code == 403  # the old key still works (as an agent)


def test_unknown_mind_is_404(human):
    assert human.get("/minds/m_doesnotexist").status_code == 404


def test_rotate_key_invalidates_old_key_at_once(human, owner_mind):
    old = bearer_client(owner_mind.key)
    response = human.post(f"/minds/{owner_mind.mind.id}/rotate-key")
    assert response.status_code == 200
    new_key = response.json()["mind_key"]
    assert new_key != owner_mind.key
    assert old.get("/health").status_code == 200
    assert old.get("/minds").status_code == 401
    assert bearer_client(new_key).get("/minds").status_code == 403  # valid, but not a human


def test_revoke_key_leaves_no_working_key(human, owner_mind):
    response = human.post(f"/minds/{owner_mind.mind.id}/revoke-key")
    assert response.status_code == 200
    assert response.json()["key_active"] is False
    assert bearer_client(owner_mind.key).get("/minds").status_code == 401


def test_agents_cannot_manage_minds(agent, mind):
    response = agent.get("/minds")
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert agent.post("/minds", {"name": "x"}, format="json").status_code == 403


def test_anonymous_gets_401_with_www_authenticate(anon):
    response = anon.get("/minds")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"] == "not_authenticated"


def test_put_is_not_allowed(human, mind):
    response = human.put(f"/minds/{mind.id}", {"name": "x"}, format="json")
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"


@override_settings(SYNAPSE_MAX_MINDS_PER_USER=2)
def test_creating_a_mind_past_the_cap_is_409_naming_it(human, owner, mind, other_human):
    assert human.post("/minds", {"name": "Second"}, format="json").status_code == 201
    response = human.post("/minds", {"name": "Third"}, format="json")
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "quota_exceeded"
    assert "SYNAPSE_MAX_MINDS_PER_USER" in body["detail"]
    assert Mind.objects.filter(owner=owner).count() == 2
    assert other_human.post("/minds", {"name": "Theirs"}, format="json").status_code == 201
