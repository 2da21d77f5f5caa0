import re
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from memories.actors import Actor
from memories.models import Memory
from memories.services import memory_upsert
from minds.models import Mind
from tests.conftest import bearer_client
from tests.dashboard.conftest import agent_store, shown
from tests.factories import many_memories

pytestmark = pytest.mark.django_db


def test_list_shows_own_minds_with_counts(web, mind, stranger_mind):
    now = timezone.now()
    agent_store(mind, key="a")
    agent_store(mind, key="b", expires_at=now + timedelta(days=2))
    agent_store(mind, key="c", expires_at=now - timedelta(days=1))  # expired: not to review
    memory_upsert(
        mind=mind, actor=Actor.for_user(mind.owner), category="fact", content="x", key="d"
    )
    agent_store(stranger_mind.mind, key="theirs")
    response = web.get("/dashboard/")
    assert response.status_code == 200
    [row] = response.context["minds"]
    assert row.pk == mind.pk
    assert (row.total, row.expired, row.unverified, row.expiring_soon) == (4, 1, 2, 1)
    html = response.content.decode()
    assert "Olive&#x27;s Mind" in html and "Stranger" not in html
    assert "2 to review" in html
    # As the mind's overview counts them: the live ones, then the expired beside them.
    assert re.search(r'data-label="Memories">3 <span class="muted">\(\+1 expired\)', html)
    overview = web.get(f"/dashboard/minds/{mind.pk}/").content.decode()
    assert re.search(r">3</span> memories <span class=\"muted\">\(\+1 expired\)", overview)


def test_list_writes_large_counts_with_separators(web, mind):
    now = timezone.now()
    many_memories(mind, 1_204)
    many_memories(
        mind, 1_001, key=lambda i: f"old_{i:04d}", expires_at=now - timedelta(days=1), now=now
    )
    html = web.get("/dashboard/").content.decode()
    assert '"Memories">1,204 <span class="muted">(+1,001 expired)' in html
    assert "1,204 to review" in html


def test_empty_list_invites_to_create(other_web):
    html = other_web.get("/dashboard/").content.decode()
    assert "Create your first mind" in html


def test_create_mind_shows_key_once_with_snippets(web, owner):
    token = shown(web, "/dashboard/minds/new/")["form_token"]
    page = web.post(
        "/dashboard/minds/new/", {"name": "Work bot", "description": "Job", "form_token": token}
    )
    mind = Mind.objects.get(name="Work bot")
    assert mind.owner == owner and mind.description == "Job"
    assert page.status_code == 200  # shown on the answer itself, kept nowhere else
    assert page["Cache-Control"] == "no-store"
    key = page.context["raw_key"]
    assert key.startswith("mk_") and Mind.objects.for_key(key) == mind
    html = page.content.decode()
    assert html.count(key) >= 3  # the field and both snippets
    assert f'Synapse("http://testserver", "{key}")' in html
    assert "curl -s http://testserver/memory/recall" in html
    assert 'data-copy-target="mind-key"' in html

    again = web.get(f"/dashboard/minds/{mind.pk}/key/")
    assert again.context["raw_key"] is None
    assert key not in again.content.decode()


def test_create_mind_needs_a_name(web):
    response = web.post("/dashboard/minds/new/", {"name": "   "})
    assert response.status_code == 200
    assert "name" in response.context["form"].errors
    assert not Mind.objects.filter(name="").exists()


@override_settings(SYNAPSE_MAX_MINDS_PER_USER=1)
def test_creating_a_mind_past_the_cap_says_so_on_the_form(web, owner, mind):
    token = shown(web, "/dashboard/minds/new/")["form_token"]
    page = web.post("/dashboard/minds/new/", {"name": "One too many", "form_token": token})
    assert page.status_code == 200
    assert "SYNAPSE_MAX_MINDS_PER_USER" in page.content.decode()
    assert Mind.objects.filter(owner=owner).count() == 1


def test_rotate_key_replaces_it_and_shows_the_new_one_once(web, owner_mind):
    mind = owner_mind.mind
    url = f"/dashboard/minds/{mind.pk}/rotate-key/"
    response = web.post(url, {"form_token": shown(web, url)["form_token"]})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    assert "The old key stopped working" in response.content.decode()
    new_key = response.context["raw_key"]
    assert new_key != owner_mind.key
    assert Mind.objects.for_key(owner_mind.key) is None
    assert Mind.objects.for_key(new_key) == mind
    assert bearer_client(owner_mind.key).get("/memory").status_code == 401


@pytest.mark.parametrize("action", ["rotate", "revoke"])
def test_rotate_and_revoke_ask_first_and_say_what_stops_working(web, owner_mind, action):
    mind = owner_mind.mind
    page = web.get(f"/dashboard/minds/{mind.pk}/{action}-key/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "loses access at once" in text and mind.key_prefix in text
    assert f"Yes, {'revoke the key' if action == 'revoke' else 'make a new key'}" in text
    # Asking changed nothing: the agent's key still works.
    assert Mind.objects.for_key(owner_mind.key) == mind
    assert bearer_client(owner_mind.key).get("/memory").status_code == 200


def test_settings_link_to_the_confirmations_instead_of_acting(web, mind):
    text = web.get(f"/dashboard/minds/{mind.pk}/settings/").content.decode()
    assert f'href="/dashboard/minds/{mind.pk}/rotate-key/">Rotate key…' in text
    assert f'href="/dashboard/minds/{mind.pk}/revoke-key/">Revoke key…' in text
    assert f'action="/dashboard/minds/{mind.pk}/rotate-key/"' not in text


def test_a_revoked_mind_makes_a_new_key_without_a_warning(web, owner_mind):
    mind = owner_mind.mind
    web.post(f"/dashboard/minds/{mind.pk}/revoke-key/")
    text = web.get(f"/dashboard/minds/{mind.pk}/settings/").content.decode()
    assert f'action="/dashboard/minds/{mind.pk}/rotate-key/"' in text
    assert "Revoke key" not in text
    # Nothing left to revoke: back to the settings.
    response = web.get(f"/dashboard/minds/{mind.pk}/revoke-key/")
    assert response.status_code == 302
    page = web.get(f"/dashboard/minds/{mind.pk}/rotate-key/").content.decode()
    assert "nothing stops working" in page


def test_revoke_key(web, owner_mind):
    mind = owner_mind.mind
    response = web.post(f"/dashboard/minds/{mind.pk}/revoke-key/")
    assert response.status_code == 302
    mind.refresh_from_db()
    assert not mind.has_active_key
    assert Mind.objects.for_key(owner_mind.key) is None
    assert "revoked" in web.get(f"/dashboard/minds/{mind.pk}/settings/").content.decode()


def test_rename(web, mind):
    page = web.get(f"/dashboard/minds/{mind.pk}/settings/")
    assert page.context["form"].initial["name"] == "Olive's Mind"
    response = web.post(
        f"/dashboard/minds/{mind.pk}/settings/", {"name": "Renamed", "description": "New"}
    )
    assert response.status_code == 302
    mind.refresh_from_db()
    assert (mind.name, mind.description) == ("Renamed", "New")


def test_delete_asks_first_then_deletes_with_memories(web, mind):
    agent_store(mind, key="a")
    page = web.get(f"/dashboard/minds/{mind.pk}/delete/")
    assert page.status_code == 200
    assert "all 1 memory" in page.content.decode()
    assert Mind.objects.filter(pk=mind.pk).exists()
    response = web.post(f"/dashboard/minds/{mind.pk}/delete/")
    assert response["Location"] == "/dashboard/"
    assert not Mind.objects.filter(pk=mind.pk).exists()
    assert not Memory.objects.filter(mind_id=mind.pk).exists()


def test_overview_draws_charts_as_inline_svg(web, mind):
    agent_store(mind, key="a", category="identity", priority="critical")
    agent_store(mind, key="b", category="skill")
    memory_upsert(
        mind=mind, actor=Actor.for_user(mind.owner), category="skill", content="y", key="c"
    )
    response = web.get(f"/dashboard/minds/{mind.pk}/")
    assert response.status_code == 200
    stats = response.context["stats"]
    assert (stats.counts["live"], stats.counts["verified"], stats.counts["unverified"]) == (3, 1, 2)
    assert dict(stats.by_category)["skill"] == 2
    assert dict(stats.by_priority)["critical"] == 1
    assert sum(created for _, created, _ in stats.writes) == 3
    html = response.content.decode()
    assert html.count("<svg") == 5  # the timeline too
    assert "33%</strong> verified: 1 of 3" in html
    assert "identity: 1, preference: 0" in html  # the bar chart's text description
    # Scripts are the site's own: no CDN (a random id or token may well spell "cdn").
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert scripts and all(src.startswith("/static/") for src in scripts)


def test_overview_of_empty_mind(web, mind):
    response = web.get(f"/dashboard/minds/{mind.pk}/")
    assert response.status_code == 200
    assert "No memories yet" in response.content.decode()


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=2048)
def test_settings_show_what_the_mind_holds_against_its_quotas(web, mind, stranger_mind):
    agent_store(mind, key="a", content="x" * 1024)
    agent_store(stranger_mind.mind, key="b", content="y" * 5000)
    page = web.get(f"/dashboard/minds/{mind.pk}/settings/")
    assert page.context["usage"]["bytes"] == 1024
    assert page.context["usage"]["history_bytes"] <= 2048
    text = page.content.decode()
    assert "1.0\xa0KB of at most 50.0\xa0MB" in text and "of at most 2.0\xa0KB" in text


def test_overview_shows_memories_waiting_for_a_vector_and_parked_ones(
    web, mind, stranger_mind, other_web
):
    from memories.models import EmbeddingJob

    kept = [agent_store(mind, key=f"k{i}", content=f"memory {i}") for i in range(3)]
    agent_store(stranger_mind.mind, key="theirs", content="not counted here")
    EmbeddingJob.objects.filter(memory_id__in=[m.pk for m in kept[:2]]).update(
        due_at=None, attempts=5
    )
    EmbeddingJob.objects.filter(mind_id=stranger_mind.mind.pk).update(due_at=None, attempts=5)
    page = web.get(f"/dashboard/minds/{mind.pk}/").content.decode()
    assert re.search(r">1</span> waiting for search by meaning", page)
    assert re.search(r"<strong>2 memories</strong> could not be embedded", page)
    assert other_web.get(f"/dashboard/minds/{mind.pk}/").status_code == 404
