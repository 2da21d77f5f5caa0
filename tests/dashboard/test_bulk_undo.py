"""Bulk actions on the ticked rows of the review queue and the memory table, and the Undo
of a whole batch offered beside their message."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, MemoryEvent
from tests.dashboard.conftest import agent_store, shown

pytestmark = pytest.mark.django_db

UNDO = re.compile(
    r'<form method="post" action="([^"]+/undo-batch/)" class="undo-form">(.*?)</form>', re.S
)
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def undo_form(html: str) -> tuple[str, dict[str, str]]:
    found = UNDO.search(html)
    assert found is not None, "no Undo button for the batch on the page"
    return found[1], dict(HIDDEN.findall(found[2]))


def three(mind, **fields):
    return [agent_store(mind, key=f"k{i}", content=f"Fact number {i}", **fields) for i in range(3)]


def bulk(web, mind, action, memories, page, **extra):
    return web.post(
        f"/dashboard/minds/{mind.pk}/memories/bulk/{action}/",
        {**shown(web, page), "memory": [m.pk for m in memories], "next": page, **extra},
        follow=True,
    )


def test_bulk_verify_from_the_queue_offers_undo_of_the_batch(web, mind):
    memories = three(mind)
    queue = f"/dashboard/minds/{mind.pk}/review/"
    html = web.get(queue).content.decode()
    assert "Select all on this page" in html and "Delete selected" in html
    assert 'aria-label="Select fact k0"' in html

    done = bulk(web, mind, "verify", memories, queue)

    html = done.content.decode()
    assert "Verified 3 memories." in html
    action, form = undo_form(html)
    assert form["batch"] == "verify" and "at" in form and form["next"] == queue
    assert "the verify of 3 memories" in html
    # The session names the batch only: no id, key or content of its memories.
    offer = web.session.get("dashboard_undo")
    assert offer is None  # shown once, then gone
    undone = web.post(action, form, follow=True)
    assert "Undone: 3 memories unverified again." in undone.content.decode()
    assert not Memory.objects.filter(mind=mind, verified=True).exists()
    assert UNDO.search(undone.content.decode()) is None


def test_the_offer_in_the_session_holds_no_memory(web, mind):
    memories = three(mind)
    queue = f"/dashboard/minds/{mind.pk}/review/"
    web.post(
        f"/dashboard/minds/{mind.pk}/memories/bulk/verify/",
        {**shown(web, queue), "memory": [m.pk for m in memories], "next": queue},
    )
    offer = web.session["dashboard_undo"]
    assert set(offer) == {"mind", "batch", "at", "count"}
    assert (offer["mind"], offer["batch"], offer["count"]) == (mind.pk, "verify", 3)
    assert not any(m.pk in offer["at"] for m in memories)


def test_bulk_delete_and_undo_from_the_table_keep_the_addresses(web, mind):
    memories = three(mind, tags=["office"])
    table = f"/dashboard/minds/{mind.pk}/memories/"
    html = web.get(table).content.decode()
    assert '<label for="pick-' in html and "Unverify selected" in html

    done = bulk(web, mind, "delete", memories, table)

    assert "Deleted 3 memories." in done.content.decode()
    url = f"/dashboard/minds/{mind.pk}/memories/{memories[0].pk}/"
    assert web.get(url).status_code == 404
    action, form = undo_form(done.content.decode())
    undone = web.post(action, form, follow=True)
    assert "put back 3 memories as they were" in undone.content.decode()
    assert web.get(url).status_code == 200
    assert sorted(Memory.objects.filter(mind=mind).values_list("pk", flat=True)) == sorted(
        m.pk for m in memories
    )


def test_bulk_unverify_and_retag_are_undone(web, mind):
    memories = three(mind, tags=["office"])
    table = f"/dashboard/minds/{mind.pk}/memories/"
    bulk(web, mind, "verify", memories, table)
    done = bulk(web, mind, "unverify", memories, table)
    assert "3 memories unverified again." in done.content.decode()
    web.post(*undo_form(done.content.decode()))
    assert Memory.objects.filter(mind=mind, verified=True).count() == 3

    tagged = bulk(web, mind, "tag", memories, table, tag="Munich, berlin")
    assert "Added “munich”, “berlin” to 3 memories." in tagged.content.decode()
    assert Memory.objects.get(pk=memories[0].pk).tags == ["office", "munich", "berlin"]
    web.post(*undo_form(tagged.content.decode()))
    assert Memory.objects.get(pk=memories[0].pk).tags == ["office"]

    untagged = bulk(web, mind, "untag", memories, table, tag="office")
    assert "Took “office” off 3 memories." in untagged.content.decode()
    assert Memory.objects.get(pk=memories[0].pk).tags == []


def test_verify_all_matching_offers_undo(web, mind):
    three(mind)
    url = f"/dashboard/minds/{mind.pk}/memories/verify-all/"
    form = shown(web, url, verified="no")
    done = web.post(url, {**form, "verified": "no"}, follow=True)
    assert "Verified 3 memories." in done.content.decode()
    action, undo = undo_form(done.content.decode())
    assert undo["batch"] == "verify"
    web.post(action, undo)
    assert not Memory.objects.filter(mind=mind, verified=True).exists()


def test_undo_says_how_many_were_left(web, mind):
    memories = three(mind)
    queue = f"/dashboard/minds/{mind.pk}/review/"
    action, form = undo_form(bulk(web, mind, "verify", memories, queue).content.decode())
    agent_store(mind, key="k1", content="Rewritten by the agent")

    undone = web.post(action, form, follow=True)

    html = undone.content.decode()
    assert (
        "Undone: 2 memories unverified again. 1 memory changed since and was left as it is." in html
    )
    again = web.post(action, form, follow=True)
    assert "Not undone: Every one of the 3 memories changed since" in again.content.decode()


def test_undo_refuses_after_the_window_and_bad_forms(web, mind):
    memories = three(mind)
    queue = f"/dashboard/minds/{mind.pk}/review/"
    action, form = undo_form(bulk(web, mind, "verify", memories, queue).content.decode())
    for bad in ({**form, "at": "not a time"}, {**form, "batch": "create"}):
        response = web.post(action, bad, follow=True)
        assert response.status_code == 200
    assert Memory.objects.filter(mind=mind, verified=True).count() == 3
    long_ago = timezone.now() - timedelta(minutes=11)
    MemoryEvent.objects.filter(action="verify").update(at=long_ago)
    refused = web.post(action, {**form, "at": long_ago.isoformat()}, follow=True)
    assert "more than 10 minutes old" in refused.content.decode()
    assert Memory.objects.filter(mind=mind, verified=True).count() == 3


def test_bad_bulk_input_is_a_clear_answer(web, mind):
    memories = three(mind)
    table = f"/dashboard/minds/{mind.pk}/memories/"
    nothing = bulk(web, mind, "delete", [], table)
    assert "Tick the memories to delete first." in nothing.content.decode()
    no_tag = bulk(web, mind, "tag", memories, table, tag=" , ")
    assert "Nothing was changed: " in no_tag.content.decode()
    assert web.post(f"/dashboard/minds/{mind.pk}/memories/bulk/purge/", {}).status_code == 404
    assert Memory.objects.filter(mind=mind).count() == 3


def test_another_persons_bulk_and_undo_are_404(web, other_web, mind, stranger_mind):
    memories = three(mind)
    theirs = agent_store(stranger_mind.mind, key="theirs")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    done = web.post(
        f"/dashboard/minds/{mind.pk}/memories/bulk/delete/",
        {**shown(web, queue), "memory": [memories[0].pk, theirs.pk], "next": queue},
        follow=True,
    )
    assert "Deleted 1 memory." in done.content.decode()
    assert Memory.objects.filter(pk=theirs.pk).exists()  # another mind's id matched nothing
    action, form = undo_form(done.content.decode())
    assert other_web.post(action, form).status_code == 404
    assert (
        other_web.post(
            f"/dashboard/minds/{mind.pk}/memories/bulk/delete/", {"memory": [memories[1].pk]}
        ).status_code
        == 404
    )
    assert Memory.objects.filter(mind=mind).count() == 2
