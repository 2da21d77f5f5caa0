import pytest

from memories.actors import Actor
from memories.services import memory_delete, memory_verify
from tests.dashboard.conftest import agent_store

pytestmark = pytest.mark.django_db


def test_activity_lists_every_write_with_its_author(web, owner, mind, stranger_mind):
    kept = agent_store(mind, key="kept")
    gone = agent_store(mind, key="gone", content="Soon deleted")
    memory_verify(memory=kept, actor=Actor.for_user(owner))
    memory_delete(memory=gone, actor=Actor.for_user(owner))
    agent_store(stranger_mind.mind, key="theirs")
    response = web.get(f"/dashboard/minds/{mind.pk}/activity/")
    assert response.status_code == 200
    events = list(response.context["page"])
    assert [(e.action, e.key) for e in events] == [
        ("delete", "gone"),
        ("verify", "kept"),
        ("create", "gone"),
        ("create", "kept"),
    ]
    html = response.content.decode()
    assert "theirs" not in html
    assert "(deleted)" in html and "Soon deleted" in html
    assert f'href="/dashboard/minds/{mind.pk}/memories/{kept.pk}/"' in html
    assert owner.email in html and "mk_testagent" in html


def test_activity_filters_by_action(web, mind):
    agent_store(mind, key="a")
    agent_store(mind, key="a", content="changed")
    only = web.get(f"/dashboard/minds/{mind.pk}/activity/", {"action": "update"})
    assert [e.action for e in only.context["page"]] == ["update"]
    bogus = web.get(f"/dashboard/minds/{mind.pk}/activity/", {"action": "drop table"})
    assert len(bogus.context["page"].object_list) == 2
