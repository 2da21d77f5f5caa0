"""Where confirmations land: the status messages stand in a live region of their own, and the
pages a shortcut opens put the focus on their form's first control."""

from __future__ import annotations

import re

import pytest

from tests.dashboard.conftest import agent_store, shown
from webhooks.services import webhook_create

pytestmark = pytest.mark.django_db


def first_control(html: str) -> str:
    """The opening tag of the first control of the page's form (after its CSRF field)."""
    start = html.index("csrfmiddlewaretoken", html.index("<main"))
    found = re.search(r'<(select|button|textarea|input(?! type="hidden"))[^>]*>', html[start:])
    assert found
    return found[0]


def test_a_verify_from_the_queue_lands_with_its_undo_in_the_status_region(web, mind):
    first, second = agent_store(mind, key="first"), agent_store(mind, key="second")
    queue = f"/dashboard/minds/{mind.pk}/review/"
    after = f"{queue}#row-{second.pk}"
    form = shown(web, queue)
    response = web.post(
        f"/dashboard/minds/{mind.pk}/memories/{first.pk}/verify/",
        {**form, "next": after},
        follow=True,
    )
    html = response.content.decode()
    region = re.search(
        r'<div class="messages" role="status" aria-live="polite">(.*?)</div>', html, re.S
    )
    assert region and "Verified “first”" in region[1]
    assert "data-undo" in region[1]  # the Undo button, a real button, reachable by Tab


@pytest.mark.parametrize("page", ["memory-delete", "memory-edit"])
def test_the_delete_and_edit_pages_focus_their_first_control(web, mind, page):
    memory = agent_store(mind, key="fact_sky")
    suffix = {"memory-delete": "delete/", "memory-edit": "edit/"}[page]
    html = web.get(f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/{suffix}").content.decode()
    assert html.count("autofocus") == 1
    control = first_control(html)
    assert "autofocus" in control
    if page == "memory-delete":
        assert "button-danger" in control  # "Yes, delete it"


def test_the_mind_and_webhook_delete_pages_focus_yes(web, mind, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    webhook = webhook_create(mind=mind, body={"url": "http://127.0.0.1:9/hook"}).webhook
    for url in (
        f"/dashboard/minds/{mind.pk}/delete/",
        f"/dashboard/minds/{mind.pk}/webhooks/{webhook.pk}/delete/",
    ):
        html = web.get(url).content.decode()
        assert html.count("autofocus") == 1
        assert "autofocus" in first_control(html)
