"""The Hygiene page: proposals accepted or rejected, stale memories, supersede undone."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.actors import Actor
from memories.hygiene.health import hygiene_check
from memories.models import HygieneDismissal, Memory, MemoryEvent, SupersedeProposal
from memories.services import memory_supersede, memory_verify
from memories.versions import memory_version as version_of
from tests.dashboard.conftest import agent_store

pytestmark = pytest.mark.django_db

AGENT = Actor(kind="agent", name="mk_testagent")


def _proposal(mind, owner):
    old = agent_store(mind, key="city", content="Lives in Berlin")
    memory_verify(memory=old, actor=Actor.for_user(owner))
    new = agent_store(mind, key="city_now", content="Moved to Munich")
    done = memory_supersede(memory=Memory.objects.get(pk=old.pk), by=new.pk, actor=AGENT)
    assert done.proposed
    return Memory.objects.get(pk=old.pk), new, done.proposal


def test_page_lists_proposals_and_stale_memories(web, owner, mind, stranger_mind):
    _proposal(mind, owner)
    agent_store(mind, key="ancient", content="Old news", now=timezone.now() - timedelta(days=200))
    agent_store(stranger_mind.mind, key="theirs", content="Not yours")
    response = web.get(f"/dashboard/minds/{mind.pk}/hygiene/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Lives in Berlin" in html and "Moved to Munich" in html
    assert "Old news" in html and "Not yours" not in html
    assert response.context["proposal_count"] == 1 and response.context["stale_count"] == 1


def test_accept_a_proposal(web, owner, mind):
    old, new, _ = _proposal(mind, owner)
    response = web.post(
        f"/dashboard/minds/{mind.pk}/memories/{old.pk}/supersede/",
        {"by": new.pk, "version": version_of(old)},
    )
    assert response.status_code == 302
    assert Memory.objects.get(pk=old.pk).superseded_by_id == new.pk
    assert not SupersedeProposal.objects.exists()
    event = MemoryEvent.objects.get(memory_id=old.pk, action="supersede")
    assert event.actor == owner.email


def test_a_changed_memory_is_not_superseded(web, owner, mind):
    old, new, _ = _proposal(mind, owner)
    seen = version_of(old)
    agent_store(mind, key="city", content="Lives in Hamburg")
    web.post(
        f"/dashboard/minds/{mind.pk}/memories/{old.pk}/supersede/", {"by": new.pk, "version": seen}
    )
    assert Memory.objects.get(pk=old.pk).superseded_by_id is None


def test_reject_a_proposal(web, owner, mind):
    old, _new, proposal = _proposal(mind, owner)
    url = f"/dashboard/minds/{mind.pk}/memories/{old.pk}/proposals/{proposal.pk}/reject/"
    assert web.post(url).status_code == 302
    assert not SupersedeProposal.objects.exists()
    assert Memory.objects.get(pk=old.pk).superseded_by_id is None


def test_make_current_again_from_the_memory_page(web, owner, mind):
    old = agent_store(mind, key="a", content="A")
    new = agent_store(mind, key="b", content="B")
    memory_supersede(memory=old, by=new.pk, actor=Actor.for_user(owner))
    page = web.get(f"/dashboard/minds/{mind.pk}/memories/{old.pk}/").content.decode()
    assert "Superseded by" in page
    web.post(
        f"/dashboard/minds/{mind.pk}/memories/{old.pk}/supersede/",
        {"version": version_of(Memory.objects.get(pk=old.pk))},
    )
    assert Memory.objects.get(pk=old.pk).superseded_by_id is None


def test_other_people_get_404(other_web, owner, mind):
    old, new, _ = _proposal(mind, owner)
    assert other_web.get(f"/dashboard/minds/{mind.pk}/hygiene/").status_code == 404
    response = other_web.post(
        f"/dashboard/minds/{mind.pk}/memories/{old.pk}/supersede/", {"by": new.pk}
    )
    assert response.status_code == 404
    assert Memory.objects.get(pk=old.pk).superseded_by_id is None


def test_memory_table_hides_superseded_unless_asked(web, owner, mind):
    old = agent_store(mind, key="a", content="Old text")
    new = agent_store(mind, key="b", content="New text")
    memory_supersede(memory=old, by=new.pk, actor=Actor.for_user(owner))
    url = f"/dashboard/minds/{mind.pk}/memories/"
    assert "Old text" not in web.get(url).content.decode()
    shown = web.get(url, {"superseded": "include"}).content.decode()
    assert "Old text" in shown and "superseded</span>" in shown


def _old_cluster(mind):
    then = timezone.now() - timedelta(days=60)
    return [
        agent_store(mind, key=f"coffee_{i}", content=text, tags=["coffee"], now=then)
        for i, text in enumerate(
            ["Drinks espresso every morning", "Buys beans from a local roaster", "Owns a moka pot"]
        )
    ]


def test_compaction_plan_apply_and_undo(web, mind):
    originals = _old_cluster(mind)
    page = web.get(f"/dashboard/minds/{mind.pk}/hygiene/")
    assert page.context["plan"] is None  # worked out only when asked
    shown = web.get(f"/dashboard/minds/{mind.pk}/hygiene/", {"plan": "1"})
    ((_, members),) = shown.context["plan"]
    assert {m.pk for m in members} == {m.pk for m in originals}
    html = shown.content.decode()
    versions = dict(re.findall(r'name="(version-mem_[a-z0-9]+)" value="([0-9a-f]+)"', html))
    assert len(versions) == 3
    web.post(f"/dashboard/minds/{mind.pk}/hygiene/compact/", versions)
    summary = Memory.objects.filter(superseded__isnull=False, source="system").distinct().get()
    assert set(Memory.objects.filter(superseded_by=summary).values_list("pk", flat=True)) == {
        m.pk for m in originals
    }
    listed = web.get(f"/dashboard/minds/{mind.pk}/hygiene/").context["summaries"]
    assert listed == [(summary, 3)]
    web.post(f"/dashboard/minds/{mind.pk}/memories/{summary.pk}/uncompact/")
    assert not Memory.objects.filter(superseded_by__isnull=False).exists()
    assert not Memory.objects.filter(pk=summary.pk).exists()


def test_compaction_of_a_plan_that_changed_writes_nothing(web, mind):
    originals = _old_cluster(mind)
    html = web.get(f"/dashboard/minds/{mind.pk}/hygiene/", {"plan": "1"}).content.decode()
    versions = dict(re.findall(r'name="(version-mem_[a-z0-9]+)" value="([0-9a-f]+)"', html))
    agent_store(
        mind,
        key=originals[0].key,
        content="Gave up coffee",
        tags=["coffee"],
        now=timezone.now() - timedelta(days=45),
    )
    response = web.post(f"/dashboard/minds/{mind.pk}/hygiene/compact/", versions)
    assert response.status_code == 302 and "plan=1" in response["Location"]
    assert not Memory.objects.filter(superseded_by__isnull=False).exists()


def test_redacted_memories_are_listed(web, mind, stranger_mind):
    agent_store(mind, key="db", content="Database password is [redacted: password]")
    agent_store(stranger_mind.mind, key="db", content="Theirs [redacted: password]")
    response = web.get(f"/dashboard/minds/{mind.pk}/hygiene/")
    assert response.context["redacted_count"] == 1


def test_the_review_queue_points_to_waiting_proposals(web, owner, mind):
    _proposal(mind, owner)
    page = web.get(f"/dashboard/minds/{mind.pk}/review/").content.decode()
    assert "1 proposed replacement of verified memories waits for you" in page


def _contradiction(mind):
    a = agent_store(mind, key="office", content="The office is in Berlin")
    b = agent_store(mind, key="office_now", content="The office is in Munich")
    return a, b


def test_contradictions_keep_one(web, mind):
    a, b = _contradiction(mind)
    page = web.get(f"/dashboard/minds/{mind.pk}/hygiene/")
    (pair,) = page.context["contradictions"]
    assert {pair.a.pk, pair.b.pk} == {a.pk, b.pk} and "Berlin" in pair.reason
    response = web.post(
        f"/dashboard/minds/{mind.pk}/hygiene/keep/",
        {"keep": b.pk, f"version-{a.pk}": version_of(Memory.objects.get(pk=a.pk))},
    )
    assert response.status_code == 302
    assert Memory.objects.get(pk=a.pk).superseded_by_id == b.pk
    assert web.get(f"/dashboard/minds/{mind.pk}/hygiene/").context["contradiction_count"] == 0


def test_keep_one_of_a_changed_memory_writes_nothing(web, mind):
    a, b = _contradiction(mind)
    seen = version_of(a)
    agent_store(mind, key="office", content="The office is in Hamburg")
    web.post(f"/dashboard/minds/{mind.pk}/hygiene/keep/", {"keep": b.pk, f"version-{a.pk}": seen})
    assert Memory.objects.get(pk=a.pk).superseded_by_id is None


def test_contradictions_keep_both_stops_flagging(web, mind, owner):
    a, b = _contradiction(mind)
    web.post(
        f"/dashboard/minds/{mind.pk}/hygiene/keep-all/",
        {"kind": "contradiction", "memory": [a.pk, b.pk]},
    )
    page = web.get(f"/dashboard/minds/{mind.pk}/hygiene/")
    assert page.context["contradiction_count"] == 0
    assert HygieneDismissal.objects.get().by == owner.email
    assert Memory.objects.filter(superseded_by__isnull=False).count() == 0


def test_near_repeats_supersede_into_one(web, mind):
    text = "Drinks coffee from a blue mug every morning"
    one = agent_store(mind, key="mug", content=text)
    two = agent_store(mind, key="mug2", content=text + " at work")
    (group,) = web.get(f"/dashboard/minds/{mind.pk}/hygiene/").context["duplicates"]
    assert {m.pk for m in group.memories} == {one.pk, two.pk}
    web.post(
        f"/dashboard/minds/{mind.pk}/hygiene/keep/",
        {"keep": two.pk, f"version-{one.pk}": version_of(one), f"version-{two.pk}": "x"},
    )
    assert Memory.objects.get(pk=one.pk).superseded_by_id == two.pk
    assert Memory.objects.get(pk=two.pk).superseded_by_id is None


def test_hygiene_actions_of_another_mind_are_404(other_web, mind):
    a, b = _contradiction(mind)
    for action, body in (
        ("keep", {"keep": b.pk, f"version-{a.pk}": version_of(a)}),
        ("keep-all", {"kind": "contradiction", "memory": [a.pk, b.pk]}),
    ):
        response = other_web.post(f"/dashboard/minds/{mind.pk}/hygiene/{action}/", body)
        assert response.status_code == 404
    assert not HygieneDismissal.objects.exists()
    assert Memory.objects.filter(superseded_by__isnull=False).count() == 0


def test_overview_counts_what_the_last_check_found(web, owner, mind):
    _contradiction(mind)
    _proposal(mind, owner)
    page = web.get(f"/dashboard/minds/{mind.pk}/")
    assert page.context["hygiene"]["contradictions"] is None  # the worker has not looked yet
    hygiene_check(mind=mind)
    page = web.get(f"/dashboard/minds/{mind.pk}/")
    shown = page.context["hygiene"]
    assert shown["contradictions"] == 1 and shown["proposals"] == 1
    html = page.content.decode()
    assert f"/dashboard/minds/{mind.pk}/hygiene/#contradictions-heading" in html
