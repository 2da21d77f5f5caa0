"""minds.access: who sees a mind and what they may do to it, at every level, on a
representative call of each level (read, write, admin, owner-only)."""

from __future__ import annotations

import json

import pytest

from minds.access import Level, LevelTooLow, MindNotFound, mind_for_person, mind_reach
from minds.models import Mind, Share
from tests.conftest import bearer_client, jwt_for
from tests.factories import share_make, user_make

pytestmark = pytest.mark.django_db

ROLES = ("owner", "admin", "write", "read", "revoked", "pending", "stranger")
LEVEL_OF_ROLE = {"owner": Level.OWNER, "admin": Level.ADMIN, "write": Level.WRITE}
LEVEL_OF_ROLE["read"] = Level.READ


def person_as(role: str, mind: Mind):
    """A person standing in `role` towards `mind`."""
    if role == "owner":
        return mind.owner
    person = user_make(f"{role}@example.com")
    if role in ("admin", "write", "read"):
        share_make(mind, person, acl=role)
    elif role == "revoked":
        share_make(mind, person, acl="admin").delete()
    elif role == "pending":  # invited by address, not signed in since: nothing yet
        share_make(mind, person.email, acl="admin")
    return person


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("need", list(Level))
def test_mind_reach_by_role_and_level(mind, role, need):
    person = person_as(role, mind)
    have = LEVEL_OF_ROLE.get(role)
    if have is None:
        with pytest.raises(MindNotFound):
            mind_reach(user=person, mind_id=mind.pk, need=need)
        assert mind_for_person(user=person, mind_id=mind.pk, need=need) is None
    elif have < need:
        with pytest.raises(LevelTooLow):
            mind_reach(user=person, mind_id=mind.pk, need=need)
    else:
        assert mind_reach(user=person, mind_id=mind.pk, need=need) == (mind, have)


def test_mind_for_person_defaults_to_the_owner(mind):
    admin = user_make("admin@example.com")
    share_make(mind, admin, acl="admin")
    assert mind_for_person(user=mind.owner, mind_id=mind.pk) == mind
    assert mind_for_person(user=admin, mind_id=mind.pk) is None
    assert mind_for_person(user=admin, mind_id=mind.pk, need=Level.ADMIN) == mind


# One call of each level through the API: (method, path, body, level it needs).
CALLS = {
    "read": ("GET", "/memory?mind={mind}", None, Level.READ),
    "write": ("POST", "/memory?mind={mind}", {"category": "fact", "content": "x"}, Level.WRITE),
    "admin": ("GET", "/webhooks?mind={mind}", None, Level.ADMIN),
    "shares": ("GET", "/minds/{mind}/shares", None, Level.ADMIN),
    "owner": ("DELETE", "/minds/{mind}", None, Level.OWNER),
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("call", CALLS)
def test_api_call_by_role(mind, role, call):
    method, path, body, need = CALLS[call]
    client = bearer_client(jwt_for(person_as(role, mind)))
    response = client.generic(
        method,
        path.format(mind=mind.pk),
        data=json.dumps(body) if body else "",
        content_type="application/json",
    )
    have = LEVEL_OF_ROLE.get(role)
    if have is None:
        assert response.status_code == 404, response.content
    elif have < need:
        assert response.status_code == 403, response.content
        assert response.json()["error"] == "forbidden"
    else:
        assert response.status_code in (200, 201), response.content


def test_a_revoked_share_stops_working_at_the_next_request(mind):
    reader = user_make("reader@example.com")
    share = share_make(mind, reader)
    client = bearer_client(jwt_for(reader))
    assert client.get(f"/memory?mind={mind.pk}").status_code == 200
    share.delete()
    assert client.get(f"/memory?mind={mind.pk}").status_code == 404


def test_a_lowered_share_holds_at_the_next_request(mind):
    person = user_make("writer@example.com")
    share = share_make(mind, person, acl="write")
    client = bearer_client(jwt_for(person))
    store = {"category": "fact", "content": "x"}
    assert client.post(f"/memory?mind={mind.pk}", store, format="json").status_code == 201
    Share.objects.filter(pk=share.pk).update(acl="read")
    assert client.post(f"/memory?mind={mind.pk}", store, format="json").status_code == 403
