from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from core.errors import NotFound
from memories import services
from memories.actors import Actor
from memories.models import Memory, MemoryEvent, Priority
from memories.services import memory_upsert, memory_upsert_many
from tests.dashboard.conftest import AGENT, agent_store, shown

pytestmark = pytest.mark.django_db


def table(web, mind, **params):
    response = web.get(f"/dashboard/minds/{mind.pk}/memories/", params)
    assert response.status_code == 200
    return response


def keys(response) -> list[str]:
    return [row["memory"].key for row in response.context["rows"]]


@pytest.fixture
def stocked(mind):
    now = timezone.now()
    agent_store(mind, key="fact_sky", tags=["weather"], priority="low", confidence=0.9)
    agent_store(mind, key="skill_docker", category="skill", tags=["docker"], priority="high")
    agent_store(mind, key="old", content="gone stale", expires_at=now - timedelta(days=1))
    memory_upsert(
        mind=mind,
        actor=Actor.for_user(mind.owner),
        category="identity",
        key="identity_name",
        content="Olive Schäfer",
        priority="critical",
    )
    return mind


def test_table_lists_live_memories_newest_first(web, stocked):
    assert keys(table(web, stocked)) == ["identity_name", "skill_docker", "fact_sky"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"category": "skill"}, ["skill_docker"]),
        ({"priority": "critical"}, ["identity_name"]),
        ({"source": "user"}, ["identity_name"]),
        ({"verified": "yes"}, ["identity_name"]),
        ({"verified": "no"}, ["skill_docker", "fact_sky"]),
        ({"tag": "Docker"}, ["skill_docker"]),
        ({"expired": "only"}, ["old"]),
        (
            {"expired": "include", "sort": "key"},
            ["fact_sky", "identity_name", "old", "skill_docker"],
        ),
        ({"sort": "-priority"}, ["identity_name", "skill_docker", "fact_sky"]),
        ({"sort": "confidence"}, ["skill_docker", "fact_sky", "identity_name"]),
    ],
)
def test_table_filters_and_sorting(web, stocked, params, expected):
    assert keys(table(web, stocked, **params)) == expected


def test_bad_filter_values_are_reported_not_500(web, stocked):
    response = table(web, stocked, category="nope", sort="hack")
    assert "category" in response.context["form"].errors
    assert len(keys(response)) == 3


def test_search_uses_the_api_search_and_marks_snippets(web, stocked):
    response = table(web, stocked, q="schafer")
    assert keys(response) == ["identity_name"]
    assert "<mark>Schäfer</mark>" in response.content.decode()
    # The table's filters narrow the search.
    assert keys(table(web, stocked, q="schafer", verified="no")) == []


def test_search_with_nothing_searchable_shows_a_message(web, stocked):
    response = table(web, stocked, q='"')
    assert response.context["search_error"]
    assert keys(response) == []


def test_table_paginates(web, mind):
    for n in range(55):
        agent_store(mind, key=f"k{n:02}", content=f"memory {n}")
    first = table(web, mind, sort="key")
    assert len(keys(first)) == 50
    assert 'href="?sort=key&amp;page=2"' in first.content.decode()
    assert keys(table(web, mind, sort="key", page=2)) == ["k50", "k51", "k52", "k53", "k54"]


def test_detail_shows_every_field_and_history(web, mind):
    memory = agent_store(mind, key="fact_sky", tags=["weather"], confidence=0.6)
    memory_upsert(mind=mind, actor=AGENT, category="fact", key="fact_sky", content="Grey")
    response = web.get(f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    for text in (memory.pk, "fact_sky", "Grey", "weather", "0.60", "agent", "unverified"):
        assert text in html
    history = response.context["history"]
    assert [e.event.action for e in history] == ["update", "create"]
    assert history[0].restorable == {}
    assert history[1].restorable == {"content": "The sky is blue"}
    assert "mk_testagent" in html and "The sky is blue" in html
    assert [e.number for e in history] == [2, 1]
    assert "Restore version 1" in html and "puts back content: “The sky is blue”" in html


def test_verify_and_unverify_are_audited(web, owner, mind):
    memory = agent_store(mind)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    response = web.post(url + "verify/", shown(web, url))
    assert response["Location"] == url
    memory.refresh_from_db()
    assert memory.verified and memory.verified_by == owner.email
    web.post(url + "unverify/", shown(web, url))
    memory.refresh_from_db()
    assert not memory.verified
    actions = list(
        MemoryEvent.objects.filter(memory_id=memory.pk).values_list("action", "actor", "actor_type")
    )
    assert actions[:2] == [("unverify", owner.email, "user"), ("verify", owner.email, "user")]


def test_verify_needs_post(web, mind):
    memory = agent_store(mind)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/verify/"
    assert web.get(url).status_code == 405


def test_edit_by_a_person_saves_through_the_service_and_verifies(web, owner, mind):
    memory = agent_store(mind, key="fact_sky", tags=["weather"])
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/edit/"
    page = web.get(url)
    assert page.context["form"].initial["tags"] == "weather"
    response = web.post(
        url,
        {
            "category": "fact",
            "key": "fact_sky",
            "content": "The sky is blue, mostly",
            "tags": "Weather, sky",
            "priority": "high",
            "confidence": "0.95",
            "expires_at": "",
            "version": page.context["form"].initial["version"],
        },
    )
    assert response["Location"] == f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    memory.refresh_from_db()
    assert memory.content == "The sky is blue, mostly"
    assert memory.tags == ["weather", "sky"]
    assert (memory.priority, memory.confidence) == (Priority.HIGH, 0.95)
    assert memory.verified and memory.verified_by == owner.email
    event = MemoryEvent.objects.filter(memory_id=memory.pk).first()
    assert (event.action, event.actor, event.actor_type) == ("update", owner.email, "user")
    assert event.changes["content"] == {
        "old": "The sky is blue",
        "new": "The sky is blue, mostly",
    }
    assert event.changes["verified"] == {"old": False, "new": True}


def test_edit_of_verified_memory_keeps_it_verified(web, owner, mind):
    memory = agent_store(mind)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    web.post(url + "verify/", shown(web, url))
    form = {
        "category": "fact",
        "key": memory.key,
        "content": "Corrected",
        "tags": "",
        "priority": "normal",
        "confidence": "0.7",
        "version": shown(web, url + "edit/")["version"],
    }
    web.post(url + "edit/", form)
    memory.refresh_from_db()
    assert memory.content == "Corrected" and memory.verified


def test_edit_keeps_seconds_of_an_untouched_expiry(web, mind):
    expiry = timezone.now().replace(microsecond=0) + timedelta(days=3, seconds=17)
    memory = agent_store(mind, expires_at=expiry)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/edit/"
    initial = web.get(url).context["form"].initial
    form = {
        **initial,
        "priority": "high",
        "expires_at": initial["expires_at"],
    }
    web.post(url, form)
    memory.refresh_from_db()
    assert memory.priority == Priority.HIGH
    assert memory.expires_at == expiry


def test_edit_errors_from_the_service_are_shown(web, mind):
    agent_store(mind, key="taken")
    memory = agent_store(mind, key="mine", content="other")
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/edit/"
    form = {"category": "fact", "content": "x", "priority": "normal", "confidence": "0.7"}
    form["version"] = shown(web, url)["version"]
    clash = web.post(url, {**form, "key": "taken"})
    assert clash.status_code == 200
    assert "already has" in " ".join(clash.context["form"].errors["key"])
    bad = web.post(url, {**form, "key": "has space"})
    assert "whitespace" in " ".join(bad.context["form"].errors["key"])
    memory.refresh_from_db()
    assert memory.key == "mine"


def test_edit_past_the_minds_quota_says_so_on_the_content(web, mind, settings):
    memory = agent_store(mind, key="mine", content="short")
    settings.SYNAPSE_MAX_MIND_BYTES = 10
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/edit/"
    form = {"category": "fact", "key": "mine", "priority": "normal", "confidence": "0.7"}
    form["version"] = shown(web, url)["version"]
    full = web.post(url, {**form, "content": "far longer than ten bytes"})
    assert full.status_code == 200
    assert "SYNAPSE_MAX_MIND_BYTES" in " ".join(full.context["form"].errors["content"])
    memory.refresh_from_db()
    assert memory.content == "short"


def test_edit_follows_next_back_to_the_queue(web, mind):
    memory = agent_store(mind)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/edit/"
    back = f"/dashboard/minds/{mind.pk}/review/"
    form = {
        "category": "fact",
        "key": memory.key,
        "content": "x",
        "priority": "normal",
        "confidence": "0.7",
        "next": back,
        "version": shown(web, url)["version"],
    }
    assert web.post(url, form)["Location"] == back
    form["version"] = shown(web, url)["version"]
    evil = web.post(url, {**form, "content": "y", "next": "https://evil.example/"})
    assert evil["Location"] == f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"


def test_delete_asks_then_deletes_with_a_tombstone(web, owner, mind):
    memory = agent_store(mind, key="fact_sky")
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/delete/"
    form = shown(web, url)
    assert Memory.objects.filter(pk=memory.pk).exists()
    form["next"] = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    response = web.post(url, form)
    assert response["Location"] == f"/dashboard/minds/{mind.pk}/memories/"
    assert not Memory.objects.filter(pk=memory.pk).exists()
    tombstone = MemoryEvent.objects.get(memory_id=memory.pk, action="delete")
    assert (tombstone.actor, tombstone.actor_type) == (owner.email, "user")
    assert tombstone.changes["content"]["old"] == "The sky is blue"


def test_delete_can_purge_for_good(web, owner, mind):
    memory = agent_store(mind, key="fact_sky")
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/delete/"
    page = web.get(url).content.decode()
    assert "Delete permanently (purge)" in page
    form = shown(web, url)
    response = web.post(url, {**form, "purge": "1"})
    assert response.status_code == 302
    assert not Memory.objects.filter(pk=memory.pk).exists()
    events = MemoryEvent.objects.filter(memory_id=memory.pk)
    assert "The sky is blue" not in str([e.changes for e in events])
    purge = events.get(action="purge")
    assert (purge.actor, purge.actor_type) == (owner.email, "user")


def test_restore_an_earlier_version_is_an_audited_edit(web, owner, mind):
    memory = agent_store(mind, key="fact_sky", tags=["weather"], priority="high")
    memory_upsert(
        mind=mind,
        actor=AGENT,
        category="fact",
        key="fact_sky",
        content="Grey",
        tags=[],
        priority="low",
    )
    created = MemoryEvent.objects.get(memory_id=memory.pk, action="create")
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/restore/{created.pk}/"
    assert web.get(url).status_code == 405
    response = web.post(url, shown(web, f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"))
    assert response["Location"] == f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    memory.refresh_from_db()
    assert (memory.content, memory.tags, memory.priority) == (
        "The sky is blue",
        ["weather"],
        Priority.HIGH,
    )
    assert memory.verified  # a person restored it: they vouch for it
    latest = MemoryEvent.objects.filter(memory_id=memory.pk).first()
    assert (latest.action, latest.actor) == ("update", owner.email)
    assert latest.changes["content"] == {"old": "Grey", "new": "The sky is blue"}
    assert latest.changes["priority"] == {"old": "low", "new": "high"}


def test_restore_the_current_version_changes_nothing(web, mind):
    memory = agent_store(mind)
    created = MemoryEvent.objects.get(memory_id=memory.pk)
    web.post(f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/restore/{created.pk}/")
    assert MemoryEvent.objects.filter(memory_id=memory.pk).count() == 1


def test_restore_with_an_event_of_another_memory_is_404(web, mind):
    mine = agent_store(mind, key="a")
    other = agent_store(mind, key="b")
    event = MemoryEvent.objects.get(memory_id=other.pk)
    url = f"/dashboard/minds/{mind.pk}/memories/{mine.pk}/restore/{event.pk}/"
    assert web.post(url).status_code == 404


def test_csrf_enforced_on_memory_actions(owner, mind):
    memory = agent_store(mind)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    base = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    assert strict.post(base + "verify/").status_code == 403
    assert strict.post(base + "delete/").status_code == 403
    memory.refresh_from_db()
    assert not memory.verified


def test_saving_an_unchanged_form_writes_nothing(web, mind):
    memory = agent_store(mind, tags=["a"])
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/edit/"
    form = {k: v for k, v in web.get(url).context["form"].initial.items() if v is not None}
    response = web.post(url, form, follow=True)
    assert "Nothing changed" in response.content.decode()
    memory.refresh_from_db()
    assert not memory.verified
    assert MemoryEvent.objects.filter(memory_id=memory.pk).count() == 1


def test_a_filtered_search_counts_and_pages_every_match(web, mind):
    """The table searches through the one list: its filters narrow the search itself, so
    matches ranked past the first hundred are found and counted."""
    items = [
        {"category": "fact", "key": f"fact_{n:03d}", "content": f"postgres tuning {n}"}
        for n in range(160)
    ]
    memory_upsert_many(mind=mind, actor=AGENT, items=items)
    items = [{**item, "key": f"note_{n:03d}", "category": "note"} for n, item in enumerate(items)]
    memory_upsert_many(mind=mind, actor=AGENT, items=items[:40])
    url = f"/dashboard/minds/{mind.pk}/memories/"
    page = web.get(url, {"q": "postgres", "category": "fact"}).content.decode()
    assert "160 memories match" in page
    assert "Page 1 of 4" in page
    last = web.get(url, {"q": "postgres", "category": "fact", "page": "4"}).content.decode()
    assert last.count('class="preview"') == 10


# --- Writing what you saw: every action sends the version the page showed ----------------

SEEN = "User prefers dark mode."
WRITTEN_SINCE = "User authorised the agent to send money without asking."


def agent_rewrites(memory, content=WRITTEN_SINCE):
    memory_upsert(
        mind=memory.mind, actor=AGENT, category=memory.category, key=memory.key, content=content
    )


def test_a_person_cannot_verify_text_written_after_the_page_loaded(web, mind):
    """The review finding: the page showed one text, the agent rewrote it, the click on
    Verify must not verify the new text; the person sees it and is asked again."""
    memory = agent_store(mind, key="ui_theme", content=SEEN)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    page = shown(web, url)
    agent_rewrites(memory)

    response = web.post(url + "verify/", page, follow=True)

    memory.refresh_from_db()
    assert not memory.verified
    assert not MemoryEvent.objects.filter(memory_id=memory.pk, action="verify").exists()
    assert response.redirect_chain[-1][0] == url
    html = response.content.decode()
    assert WRITTEN_SINCE in html and "changed since you loaded it" in html
    again = web.post(url + "verify/", shown(web, url))
    assert again["Location"] == url
    memory.refresh_from_db()
    assert memory.verified and memory.content == WRITTEN_SINCE


def test_a_form_without_a_version_acts_on_nothing(web, mind):
    memory = agent_store(mind)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    for action in ("verify/", "delete/"):
        assert web.post(url + action).status_code in (200, 302)
    memory.refresh_from_db()
    assert not memory.verified
    assert MemoryEvent.objects.filter(memory_id=memory.pk).count() == 1


def test_a_stale_unverify_leaves_it_verified(web, owner, mind):
    memory = agent_store(mind, content=SEEN)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    web.post(url + "verify/", shown(web, url))
    page = shown(web, url)
    memory_upsert(
        mind=mind, actor=AGENT, category="fact", key=memory.key, content=SEEN, tags=["new"]
    )
    response = web.post(url + "unverify/", page, follow=True)
    memory.refresh_from_db()
    assert memory.verified and memory.verified_by == owner.email
    assert "not unverified" in response.content.decode()


def test_a_stale_delete_asks_again_with_the_current_text(web, mind):
    memory = agent_store(mind, content=SEEN)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/delete/"
    page = shown(web, url)
    agent_rewrites(memory)

    response = web.post(url, page)

    assert response.status_code == 200
    assert Memory.objects.filter(pk=memory.pk).exists()
    html = response.content.decode()
    assert WRITTEN_SINCE in html and "not deleted" in html
    assert web.post(url, shown(web, url)).status_code == 302
    assert not Memory.objects.filter(pk=memory.pk).exists()


def test_a_stale_edit_saves_nothing_and_shows_the_current_values(web, mind):
    memory = agent_store(mind, content=SEEN, tags=["ui"])
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/edit/"
    form = {**web.get(url).context["form"].initial, "content": "User prefers light mode."}
    memory_upsert(
        mind=mind,
        actor=AGENT,
        category="fact",
        key=memory.key,
        content=WRITTEN_SINCE,
        tags=["money"],
    )

    response = web.post(url, form)

    assert response.status_code == 200
    memory.refresh_from_db()
    assert (memory.content, memory.tags, memory.verified) == (WRITTEN_SINCE, ["money"], False)
    shown_now = response.context["form"].initial
    assert (shown_now["content"], shown_now["tags"]) == (WRITTEN_SINCE, "money")
    assert response.context["unsaved"] == "User prefers light mode."
    html = response.content.decode()
    assert "not saved" in html and "User prefers light mode." in html
    again = {**shown_now, "content": "User prefers light mode."}
    assert web.post(url, again).status_code == 302
    memory.refresh_from_db()
    assert memory.content == "User prefers light mode." and memory.tags == ["money"]


def test_a_stale_restore_restores_nothing(web, mind):
    memory = agent_store(mind, content=SEEN)
    agent_rewrites(memory, content="Prefers light mode.")
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    page = shown(web, url)
    agent_rewrites(memory)
    created = MemoryEvent.objects.get(memory_id=memory.pk, action="create")

    response = web.post(url + f"restore/{created.pk}/", page, follow=True)

    memory.refresh_from_db()
    assert (memory.content, memory.verified) == (WRITTEN_SINCE, False)
    assert "not restored" in response.content.decode()


@pytest.mark.parametrize("action", ["verify/", "unverify/", "delete/"])
def test_a_memory_deleted_between_the_page_and_the_click_is_a_404(web, mind, action, monkeypatch):
    memory = agent_store(mind, content=SEEN)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    page = shown(web, url)

    def gone(**kwargs):  # the memory vanishes after the view found it, inside the write
        raise NotFound(f"No memory {memory.pk} in this mind.")

    for name in ("memory_verify", "memory_unverify", "memory_delete"):
        monkeypatch.setattr(services, name, gone)
    web.raise_request_exception = False
    response = web.post(url + action, page)
    assert response.status_code == 404


def test_a_folded_version_is_shown_as_such_and_its_restore_is_refused(web, mind):
    memory = agent_store(mind, key="fact_sky", content="The sky is blue " + "." * 400)
    with override_settings(SYNAPSE_MAX_HISTORY_BYTES=1_500):
        for n in range(6):
            memory = services.memory_update(memory=memory, actor=AGENT, content=f"{n} " * 200)
    assert MemoryEvent.objects.filter(memory_id=memory.pk, size=0).exists()
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/"
    page = web.get(url)
    html = page.content.decode()
    assert "(folded)" in html and "Version 1 can no longer be restored" in html
    assert f"restore/{MemoryEvent.objects.get(memory_id=memory.pk, action='create').pk}/" not in (
        html
    )
    created = MemoryEvent.objects.get(memory_id=memory.pk, action="create")
    events = MemoryEvent.objects.count()
    response = web.post(url + f"restore/{created.pk}/", shown(web, url), follow=True)
    assert response.status_code == 200
    assert "Version 1 can no longer be restored: its content was folded" in (
        response.content.decode()
    )
    memory.refresh_from_db()
    assert memory.content == "5 " * 200 and MemoryEvent.objects.count() == events
    # The version before the latest is still held, and restores exactly.
    previous = MemoryEvent.objects.filter(memory_id=memory.pk).order_by("-at", "-id")[1]
    web.post(url + f"restore/{previous.pk}/", shown(web, url))
    memory.refresh_from_db()
    assert memory.content == "4 " * 200


def test_the_activity_tab_marks_a_folded_tombstone(web, mind):
    memory = agent_store(mind, key="fact_gone")
    services.memory_delete(memory=memory, actor=AGENT)
    with override_settings(SYNAPSE_MAX_HISTORY_BYTES=1):
        agent_store(mind, key="fact_next")
    html = web.get(f"/dashboard/minds/{mind.pk}/activity/").content.decode()
    assert "last values folded" in html
