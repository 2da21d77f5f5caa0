"""Who may see which dashboard page: signed-in owners only; everyone else gets 302 or 404."""

import pytest
from django.test import Client

from tests.dashboard.conftest import agent_store

pytestmark = pytest.mark.django_db

MIND_PAGES = ["", "key/", "settings/", "delete/", "memories/", "review/", "activity/", "webhooks/"]
MEMORY_PAGES = ["", "edit/", "delete/"]
MIND_POSTS = ["rotate-key/", "revoke-key/", "settings/", "delete/", "review/verify/", "webhooks/"]
MEMORY_POSTS = ["verify/", "unverify/", "edit/", "delete/"]


def test_pages_need_login(client, mind):
    memory = agent_store(mind)
    urls = ["/dashboard/", "/dashboard/minds/new/"]
    urls += [f"/dashboard/minds/{mind.pk}/{page}" for page in MIND_PAGES]
    urls += [f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/{page}" for page in MEMORY_PAGES]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"/accounts/login/?next={url}", url


def test_dashboard_without_slash_redirects(client):
    assert client.get("/dashboard")["Location"] == "/dashboard/"


def test_mind_key_cannot_open_the_dashboard(owner_mind):
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {owner_mind.key}")
    assert agent.get("/dashboard/").status_code == 302
    response = agent.post(f"/dashboard/minds/{owner_mind.mind.pk}/rotate-key/")
    assert response.status_code in (302, 403)
    old_hash = owner_mind.mind.key_hash
    owner_mind.mind.refresh_from_db()
    assert owner_mind.mind.key_hash == old_hash


def test_other_users_mind_is_404_on_every_page(other_web, mind):
    memory = agent_store(mind)
    for page in MIND_PAGES:
        assert other_web.get(f"/dashboard/minds/{mind.pk}/{page}").status_code == 404, page
    for page in MEMORY_PAGES:
        url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/{page}"
        assert other_web.get(url).status_code == 404, page


def test_other_users_posts_are_404_and_change_nothing(other_web, mind):
    memory = agent_store(mind)
    key_hash = mind.key_hash
    for action in MIND_POSTS:
        url = f"/dashboard/minds/{mind.pk}/{action}"
        response = other_web.post(url, {"name": "Mine", "memory": [memory.pk]})
        assert response.status_code == 404, action
    for action in MEMORY_POSTS:
        url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/{action}"
        response = other_web.post(url, {"content": "hijacked"})
        assert response.status_code == 404, action
    mind.refresh_from_db()
    memory.refresh_from_db()
    assert (mind.name, mind.key_hash) == ("Olive's Mind", key_hash)
    assert (memory.content, memory.verified) == ("The sky is blue", False)


def test_a_memory_of_another_mind_is_404_under_my_mind(web, mind, stranger_mind):
    theirs = agent_store(stranger_mind.mind)
    for page in MEMORY_PAGES:
        url = f"/dashboard/minds/{mind.pk}/memories/{theirs.pk}/{page}"
        assert web.get(url).status_code == 404, page
    response = web.post(f"/dashboard/minds/{mind.pk}/memories/{theirs.pk}/verify/")
    assert response.status_code == 404
    theirs.refresh_from_db()
    assert not theirs.verified


def test_404_pages_are_html_not_json(other_web, mind):
    response = other_web.get(f"/dashboard/minds/{mind.pk}/", HTTP_ACCEPT="*/*")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
