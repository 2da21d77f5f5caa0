"""Reads: a webhook or a delivery by an id no row can hold is not found, on every database."""

from __future__ import annotations

import pytest

from core.errors import NotFound
from webhooks.models import Webhook
from webhooks.selectors import delivery_get, webhook_get

pytestmark = pytest.mark.django_db


def test_an_id_with_a_nul_is_not_found(mind):
    webhook = Webhook.objects.create(mind=mind, url="https://example.com/hook", events=["*"])
    with pytest.raises(NotFound):
        webhook_get(mind=mind, webhook_id="wh_\x00")
    with pytest.raises(NotFound):
        delivery_get(webhook=webhook, delivery_id="dlv_\x00")
