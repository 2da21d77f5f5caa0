"""The Hygiene page: proposals accepted or rejected, stale memories, supersede undone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.actors import Actor
from memories.models import Memory, MemoryEvent, SupersedeProposal
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
