"""/minds/{id}/share, /minds/{id}/shares, /minds/{id}/shares/{share_id}, /minds/shared
(../shared/API.md section 9.5)."""

from __future__ import annotations

import pytest

from accounts.models import User
from minds.models import Share
from tests.conftest import bearer_client, jwt_for
from tests.factories import PASSWORD, share_make, user_make

pytestmark = pytest.mark.django_db

FIELDS = {"id", "mind_id", "user_email", "acl", "status", "created_at"}


def share(client, mind, email="friend@example.com", acl="write"):
    return client.post(f"/minds/{mind.pk}/share", {"user_email": email, "acl": acl}, "json")


def test_share_answers_the_clients_shape(human, mind):
    response = share(human, mind, email=" Friend@Example.COM ")
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == FIELDS
    assert body["id"].startswith("sh_")
    assert (body["mind_id"], body["user_email"], body["acl"], body["status"]) == (
        mind.pk,
        "friend@example.com",
        "write",
        "pending",
    )


def test_share_answers_the_same_with_or_without_an_account(human, mind):
    user_make("known@example.com")
    known = share(human, mind, email="known@example.com").json()
    unknown = share(human, mind, email="unknown@example.com").json()
    for body in (known, unknown):
        del body["id"], body["user_email"], body["created_at"]
    assert known == unknown == {"mind_id": mind.pk, "acl": "write", "status": "pending"}
    listed = {
        s["user_email"]: s["status"] for s in human.get(f"/minds/{mind.pk}/shares").json()["shares"]
    }
    assert listed == {"known@example.com": "pending", "unknown@example.com": "pending"}


def test_acl_defaults_to_read(human, mind):
    response = human.post(f"/minds/{mind.pk}/share", {"user_email": "a@example.com"}, "json")
    assert response.json()["acl"] == "read"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "user_email"),
        ({"user_email": "not an address"}, "user_email"),
        ({"user_email": 7}, "user_email"),
        ({"user_email": "a@example.com", "acl": "owner"}, "acl"),
        ({"user_email": "a@example.com", "acl": None}, "acl"),
        ({"user_email": "owner@example.com"}, "user_email"),
        ({"user_email": "OWNER@example.com"}, "user_email"),
    ],
)
def test_bad_share_bodies_are_400_naming_the_field(human, mind, body, field):
    response = human.post(f"/minds/{mind.pk}/share", body, "json")
    assert response.status_code == 400, response.content
    assert list(response.json()["fields"]) == [field]


def test_a_list_body_is_400(human, mind):
    response = human.post(f"/minds/{mind.pk}/share", [1], "json")
    assert response.status_code == 400


def test_sharing_twice_with_one_address_is_409(human, mind):
    assert share(human, mind).status_code == 201
    assert share(human, mind, email="FRIEND@example.com").status_code == 409


def test_an_admin_cannot_share_with_themselves(mind):
    admin = user_make("admin@example.com")
    share_make(mind, admin, acl="admin")
    response = share(bearer_client(jwt_for(admin)), mind, email="admin@example.com")
    assert response.status_code == 400


def test_list_update_and_revoke(human, mind):
    created = share(human, mind).json()
    listed = human.get(f"/minds/{mind.pk}/shares").json()
    assert listed == {"shares": [created], "total": 1}

    url = f"/minds/{mind.pk}/shares/{created['id']}"
    updated = human.put(url, {"acl": "admin"}, "json")
    assert updated.status_code == 200
    assert updated.json() == {**created, "acl": "admin"}
    assert human.put(url, {"acl": "root"}, "json").status_code == 400
    assert human.put(url, {}, "json").status_code == 400

    assert human.delete(url).json() == {"deleted": True, "id": created["id"]}
    assert human.delete(url).status_code == 404
    assert human.get(f"/minds/{mind.pk}/shares/").json() == {"shares": [], "total": 0}


def test_a_share_of_another_mind_is_404(human, mind, stranger_mind):
    theirs = share_make(stranger_mind.mind, "x@example.com")
    url = f"/minds/{mind.pk}/shares/{theirs.pk}"
    assert human.put(url, {"acl": "admin"}, "json").status_code == 404
    assert human.delete(url).status_code == 404
    assert Share.objects.filter(pk=theirs.pk, acl="read").exists()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/minds/{mind}/share", {"user_email": "x@example.com"}),
        ("get", "/minds/{mind}/shares", None),
        ("put", "/minds/{mind}/shares/{share}", {"acl": "admin"}),
        ("delete", "/minds/{mind}/shares/{share}", None),
        ("get", "/minds/shared", None),
    ],
)
def test_people_only_strangers_404_and_non_admins_403(
    agent, other_human, other_user, mind, method, path, body
):
    existing = share_make(mind, "invited@example.com")
    url = path.format(mind=mind.pk, share=existing.pk)

    def call(client):
        return getattr(client, method)(url, body, "json") if body else getattr(client, method)(url)

    assert call(agent).status_code == 403  # a Mind Key
    if "{mind}" not in path:
        return
    assert call(other_human).status_code == 404  # a stranger to the mind
    share_make(mind, other_user, acl="write")
    denied = call(other_human)  # sees the mind, lacks admin
    assert denied.status_code == 403 and denied.json()["error"] == "forbidden"
    Share.objects.filter(user=other_user).update(acl="admin")
    assert call(other_human).status_code in (200, 201)


def test_pending_share_becomes_active_when_the_person_signs_up(human, mind, anon):
    created = share(human, mind, email="newcomer@example.com", acl="read").json()
    register = {"email": "Newcomer@example.com", "password": PASSWORD}
    assert anon.post("/register", register, "json").status_code == 202
    listed = human.get(f"/minds/{mind.pk}/shares").json()["shares"]
    assert [(s["id"], s["status"]) for s in listed] == [(created["id"], "active")]

    tokens = anon.post("/login", register, "json").json()
    newcomer = bearer_client(tokens["access"])
    shared = newcomer.get("/minds/shared").json()
    assert shared["total"] == 1
    assert shared["minds"][0]["id"] == mind.pk
    assert shared["minds"][0]["acl"] == "read"
    assert shared["minds"][0]["owner_email"] == "owner@example.com"
    assert newcomer.get(f"/memory?mind={mind.pk}").status_code == 200
    assert (
        newcomer.post(
            f"/memory?mind={mind.pk}", {"category": "fact", "content": "x"}, "json"
        ).status_code
        == 403
    )


def test_pending_share_of_an_existing_account_activates_when_they_sign_in(human, mind, anon):
    user_make("known@example.com")
    share(human, mind, email="known@example.com")
    known = {"email": "known@example.com", "password": PASSWORD}
    # Before they sign in, the share grants nothing.
    person = bearer_client(jwt_for(User.objects.get(email="known@example.com")))
    assert person.get(f"/memory?mind={mind.pk}").status_code == 404
    assert anon.post("/login", known, "json").status_code == 200
    assert person.get(f"/memory?mind={mind.pk}").status_code == 200
    assert human.get(f"/minds/{mind.pk}/shares").json()["shares"][0]["status"] == "active"


def test_shared_lists_only_others_minds_with_level_and_owner(
    other_human, other_user, mind, stranger_mind
):
    share_make(mind, other_user, acl="admin")
    body = other_human.get("/minds/shared").json()
    assert body["total"] == 1
    (entry,) = body["minds"]
    assert entry["id"] == mind.pk and entry["acl"] == "admin"
    assert entry["owner_email"] == "owner@example.com"
    assert "memory_count" in entry and "mind_key" not in entry
    # Their own minds are not "shared with" them.
    assert (
        bearer_client(jwt_for(stranger_mind.mind.owner)).get("/minds/shared").json()["total"] == 0
    )


def test_an_admin_may_rename_and_rotate_but_not_delete(other_human, other_user, mind):
    share_make(mind, other_user, acl="admin")
    assert other_human.patch(f"/minds/{mind.pk}", {"name": "Renamed"}, "json").status_code == 200
    assert other_human.post(f"/minds/{mind.pk}/rotate-key").status_code == 200
    assert other_human.delete(f"/minds/{mind.pk}").status_code == 403
    assert other_human.get(f"/minds/{mind.pk}").json()["name"] == "Renamed"


def test_a_reader_sees_the_mind_but_cannot_rename_it(other_human, other_user, mind):
    share_make(mind, other_user, acl="read")
    assert other_human.get(f"/minds/{mind.pk}").status_code == 200
    assert other_human.patch(f"/minds/{mind.pk}", {"name": "x"}, "json").status_code == 403
    assert other_human.post(f"/minds/{mind.pk}/revoke-key").status_code == 403
