"""Reads: a mind's webhooks, a webhook's delivery log, and how each answers as JSON."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from core.errors import NotFound
from memories.fields import iso
from memories.rules import can_be_stored
from minds.models import Mind
from webhooks.models import Webhook, WebhookAttempt, WebhookDelivery

# The delivery log's page size, by default and at most.
DELIVERIES_DEFAULT = 50
DELIVERIES_MAX = 200


def webhook_list(*, mind: Mind) -> list[Webhook]:
    return list(Webhook.objects.filter(mind=mind).order_by("created_at", "id"))


def webhook_get(*, mind: Mind, webhook_id: str) -> Webhook:
    """The mind's webhook; NotFound for any other id (another mind's alike)."""
    webhook = None
    if can_be_stored(str(webhook_id)):
        webhook = Webhook.objects.filter(mind=mind, pk=str(webhook_id)).first()
    if webhook is None:
        raise NotFound("No webhook with this id in this mind.")
    return webhook


def delivery_page(
    *, webhook: Webhook, limit: int = DELIVERIES_DEFAULT, offset: int = 0, status: str | None = None
) -> tuple[list[WebhookDelivery], int]:
    """The webhook's deliveries, newest first, and how many there are."""
    deliveries: QuerySet[WebhookDelivery] = WebhookDelivery.objects.filter(webhook=webhook)
    if status is not None:
        deliveries = deliveries.filter(status=status)
    total = deliveries.count()
    page = deliveries.select_related("event").order_by("-created_at", "-seq")[
        offset : offset + limit
    ]
    return list(page), total


def delivery_get(*, webhook: Webhook, delivery_id: str) -> WebhookDelivery:
    delivery = None
    if can_be_stored(str(delivery_id)):
        delivery = (
            WebhookDelivery.objects.select_related("event", "webhook")
            .filter(webhook=webhook, pk=str(delivery_id))
            .first()
        )
    if delivery is None:
        raise NotFound("No delivery with this id for this webhook.")
    return delivery


def delivery_attempts(*, delivery: WebhookDelivery) -> list[WebhookAttempt]:
    return list(delivery.tries.order_by("at", "id"))


def webhook_to_dict(webhook: Webhook) -> dict[str, Any]:
    """A webhook as every face answers it (never its secret)."""
    return {
        "id": webhook.pk,
        "url": webhook.url,
        "events": list(webhook.events),
        "enabled": webhook.enabled,
        "disabled_reason": webhook.disabled_reason or None,
        "disabled_at": iso(webhook.disabled_at),
        "previous_secret_until": iso(webhook.previous_secret_until),
        "created_at": iso(webhook.created_at),
        "updated_at": iso(webhook.updated_at),
    }


def delivery_to_dict(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "event": delivery.event.type,
        "event_id": delivery.event_id,
        "seq": delivery.seq,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "response_status": delivery.response_status,
        "duration_ms": delivery.duration_ms,
        "error": delivery.error or None,
        "next_attempt_at": iso(delivery.next_attempt_at),
        "created_at": iso(delivery.created_at),
        "finished_at": iso(delivery.finished_at),
    }


def attempt_to_dict(attempt: WebhookAttempt) -> dict[str, Any]:
    return {
        "at": iso(attempt.at),
        "response_status": attempt.response_status,
        "duration_ms": attempt.duration_ms,
        "response_body": attempt.response_body,
        "error": attempt.error or None,
    }
