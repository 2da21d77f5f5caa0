"""The header's Admin link is for staff only; a memory's history and the mind's activity
name an agent by its mind, not by its key's prefix (the audit rows keep the prefix)."""

from __future__ import annotations

import pytest
from django.test import Client

from memories.models import MemoryEvent
from tests.dashboard.conftest import agent_store, shown

pytestmark = pytest.mark.django_db

ADMIN_LINK = 'href="/admin/">Admin</a>'


@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/accounts/signup/"])
def test_an_anonymous_visitor_sees_no_admin_link(client, path):
    html = client.get(path, HTTP_ACCEPT="text/html").content.decode()
    assert "Log in" in html and ADMIN_LINK not in html


def test_a_person_who_is_not_staff_sees_no_admin_link(web, mind):
    for path in ("/", "/dashboard/", f"/dashboard/minds/{mind.pk}/settings/"):
        assert ADMIN_LINK not in web.get(path, HTTP_ACCEPT="text/html").content.decode(), path


def test_staff_see_the_admin_link(django_user_model):
    staff = django_user_model.objects.create_user(
        email="staff@example.com", password="x", is_staff=True
    )
    browser = Client()
    browser.force_login(staff)
    assert ADMIN_LINK in browser.get("/dashboard/").content.decode()


def test_the_history_names_the_agent_by_its_mind(web, mind):
    memory = agent_store(mind, key="preference_editor")
    html = web.get(f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/").content.decode()
    assert "by <strong>agent of “Olive&#x27;s Mind”</strong>" in html
    assert "(agent, key mk_testagent)" in html
    assert "<strong>mk_testagent</strong>" not in html
    # The stored row is as it was: the display changed, not the audit trail.
    event = MemoryEvent.objects.get(memory_id=memory.pk)
    assert (event.actor, event.actor_type) == ("mk_testagent", "agent")


def test_the_activity_names_the_agent_by_its_mind_and_the_reader_as_you(web, mind, owner):
    memory = agent_store(mind, key="preference_editor")
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    web.post(url + "verify/", shown(web, url))
    html = web.get(f"/dashboard/minds/{mind.pk}/activity/").content.decode()
    assert '"By">agent of “Olive&#x27;s Mind” <span class="muted">(agent, key mk_testagent)' in html
    assert f'"By">you <span class="muted">({owner.email})' in html


def test_another_persons_history_stays_hidden(other_web, mind):
    memory = agent_store(mind, key="preference_editor")
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    assert other_web.get(url).status_code == 404
    assert other_web.get(f"/dashboard/minds/{mind.pk}/activity/").status_code == 404
