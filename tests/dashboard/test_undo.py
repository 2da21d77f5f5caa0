"""Undo from the message of a verify or a delete done in the review queue, and where the
person lands after each action (the next row)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, MemoryEvent
from tests.dashboard.conftest import agent_store, shown

pytestmark = pytest.mark.django_db

UNDO = re.compile(
    r'<form method="post" action="([^"]+/undo/)" class="undo-form">(.*?)</form>', re.S
)
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def undo_form(html: str) -> tuple[str, dict[str, str]]:
    found = UNDO.search(html)
    assert found is not None, "no Undo button on the page"
    return found[1], dict(HIDDEN.findall(found[2]))


def verify_from_queue(web, mind, memory, queue):
    return web.post(
        f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/verify/",
        {**shown(web, queue), "memory": [memory.pk], "next": queue},
        follow=True,
    )


def test_undo_a_verify_from_the_message(web, mind):
    memory = agent_store(mind, key="ui")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    page = verify_from_queue(web, mind, memory, queue)
    html = page.content.decode()
    assert "Verified “ui”." in html
    action, form = undo_form(html)
    assert form["memory"] == memory.pk and form["action"] == "verify"
    assert form["next"] == queue

    undone = web.post(action, form)

    assert undone["Location"] == f"{queue}#row-{memory.pk}"
    memory.refresh_from_db()
    assert not memory.verified
    followed = web.get(queue)
    assert "is unverified again" in followed.content.decode()
    assert [m.pk for m in followed.context["page"]] == [memory.pk]
    assert UNDO.search(followed.content.decode()) is None  # offered once


def test_undo_a_delete_puts_it_back_in_the_queue(web, mind):
    memory = agent_store(mind, key="ui", tags=["theme"], priority="high")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/delete/"
    deleted = web.post(url, shown(web, url, next=queue), follow=True)
    action, form = undo_form(deleted.content.decode())
    assert form["action"] == "delete"

    undone = web.post(action, form, follow=True)

    back = Memory.objects.get(mind=mind, key="ui")
    assert undone.redirect_chain[-1][0] == f"{queue}#row-{back.pk}"
    assert (back.content, back.tags, back.priority, back.verified) == (
        memory.content,
        ["theme"],
        memory.priority,
        False,
    )
    assert "“ui” is back" in undone.content.decode()
    assert [m.pk for m in undone.context["page"]] == [back.pk]
    # The same memory, at the same address, its history going on from the delete.
    assert back.pk == memory.pk
    detail = web.get(f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/")
    assert detail.status_code == 200
    assert [e.event.action for e in detail.context["history"]] == ["undelete", "delete", "create"]


def test_undo_refuses_what_changed_since(web, mind):
    memory = agent_store(mind, key="ui", content="Prefers dark mode")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    action, form = undo_form(verify_from_queue(web, mind, memory, queue).content.decode())
    agent_store(mind, key="ui", content="Authorised the agent to send money")

    refused = web.post(action, form, follow=True)

    assert "Not undone: “ui” changed since you verified it" in refused.content.decode()
    assert MemoryEvent.objects.filter(action="unverify").count() == 0


def test_undo_refuses_after_the_window(web, mind):
    memory = agent_store(mind, key="ui")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    action, form = undo_form(verify_from_queue(web, mind, memory, queue).content.decode())
    MemoryEvent.objects.filter(action="verify").update(at=timezone.now() - timedelta(minutes=11))
    refused = web.post(action, form, follow=True)
    assert "more than 10 minutes old" in refused.content.decode()
    memory.refresh_from_db()
    assert memory.verified


def test_another_persons_undo_is_404(web, other_web, mind):
    memory = agent_store(mind, key="ui")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    action, form = undo_form(verify_from_queue(web, mind, memory, queue).content.decode())
    assert other_web.post(action, form).status_code == 404
    memory.refresh_from_db()
    assert memory.verified


def test_each_row_sends_the_person_on_to_the_next_row(web, mind):
    a = agent_store(mind, key="a", priority="critical")
    b = agent_store(mind, key="b", priority="high")
    c = agent_store(mind, key="c", priority="normal")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    html = web.get(queue).content.decode()
    after = {
        pk: following
        for pk, following in re.findall(
            r'memories/(mem_\w+)/verify/" name="next" value="[^"#]*#row-(mem_\w+)"', html
        )
    }
    assert after == {a.pk: b.pk, b.pk: c.pk, c.pk: b.pk}  # the last goes back one
    assert f"/memories/{a.pk}/edit/?next={queue}%23row-{b.pk}" in html
    assert f"/memories/{c.pk}/delete/?next={queue}%23row-{b.pk}" in html
    # The bulk form's default button is disabled: Enter in a checkbox submits nothing.
    form = html[html.index('id="review-form"') :]
    first_button = re.search(r"<button[^>]*>", form)[0]
    assert "disabled" in first_button

    edit = web.get(
        f"/dashboard/minds/{mind.pk}/memories/{a.pk}/edit/", {"next": f"{queue}#row-{b.pk}"}
    )
    assert f'href="{queue}#row-{a.pk}">Cancel</a>' in edit.content.decode()
