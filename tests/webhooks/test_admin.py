"""The admin lists webhooks with their deliveries; its actions go through the service."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.factories import remember
from webhooks.events import fan_out
from webhooks.models import Webhook
from webhooks.services import webhook_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def webhook(mind, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    return webhook_create(mind=mind, body={"url": "http://127.0.0.1:9/hook"}).webhook


def test_the_list_and_a_webhooks_page_show_it_and_its_deliveries(admin_client, webhook, mind):
    remember(mind, "a", "one")
    fan_out(webhook, now=timezone.now())
    listed = admin_client.get("/admin/webhooks/webhook/", {"q": mind.pk})
    assert listed.status_code == 200 and webhook.pk in listed.content.decode()
    page = admin_client.get(f"/admin/webhooks/webhook/{webhook.pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200 and "pending" in html
    assert webhook.secret_sealed not in html and "secret_sealed" not in html


def test_the_enable_action_clears_why_it_was_disabled(admin_client, webhook):
    Webhook.objects.filter(pk=webhook.pk).update(enabled=False, disabled_reason="410 Gone")
    response = admin_client.post(
        "/admin/webhooks/webhook/", {"action": "enable", "_selected_action": [webhook.pk]}
    )
    assert response.status_code == 302
    webhook.refresh_from_db()
    assert webhook.enabled and webhook.disabled_reason == ""
