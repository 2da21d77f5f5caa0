"""Writes: registering, changing and removing a mind's webhooks, a test, a redelivery.

Who may call them is the face's question (minds/access.py decides); each takes the mind or
the webhook already scoped to the caller. A body is judged here, whatever face it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.errors import Conflict, Invalid, QuotaExceeded
from core.sealed import seal, unseal
from memories.actors import Actor
from minds.models import Mind
from webhooks import delivery as sending
from webhooks import destinations, events, signing
from webhooks.models import Webhook, WebhookDelivery

# Webhooks a mind may have.
MAX_WEBHOOKS = 20
# How long a replaced secret still signs, so receivers can move to the new one.
ROTATION_GRACE = timedelta(hours=24)

FIELDS = ("url", "events", "secret", "enabled")
# A test ping its request did not send (the process died) is sent by the worker after this.
PING_TAKEN_OVER = timedelta(minutes=1)


@dataclass(frozen=True)
class Registered:
    webhook: Webhook
    # The secret the server generated, shown once; None when the body gave one.
    secret: str | None


def _judged(body: Any, *, creating: bool) -> dict[str, Any]:
    """The body's values, each checked; Invalid naming every field at fault."""
    if not isinstance(body, dict):
        raise Invalid.one("non_field_errors", "Send a JSON object.")
    errors: dict[str, list[str]] = {}
    unknown = sorted(set(body) - set(FIELDS))
    for name in unknown:
        errors[name] = [f"Unknown field; a webhook takes {', '.join(FIELDS)}."]
    if creating and "url" not in body:
        errors["url"] = ["Give the URL the events are sent to."]
    values: dict[str, Any] = {}
    checks = {
        "url": destinations.url_check,
        "events": events.events_parse,
        "secret": signing.secret_check,
        "enabled": _enabled_check,
    }
    for name, check in checks.items():
        if name in body and not (name == "secret" and body[name] is None and creating):
            try:
                values[name] = check(body[name])
            except Invalid as invalid:
                errors.update(invalid.fields)
    if errors:
        raise Invalid(errors)
    return values


def _enabled_check(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid.one("enabled", "Use true or false.")
    return value


def webhook_create(*, mind: Mind, body: Any, now: datetime | None = None) -> Registered:
    """Register a webhook for the mind from the body `{url, events?, secret?, enabled?}`
    (events "*" when left out); with no secret given, one is generated."""
    values = _judged(body, creating=True)
    now = now or timezone.now()
    generated = None if "secret" in values else signing.secret_generate()
    with transaction.atomic():
        Mind.objects.lock(mind.pk)
        if Webhook.objects.filter(mind=mind).count() >= MAX_WEBHOOKS:
            raise QuotaExceeded(
                f"A mind has at most {MAX_WEBHOOKS} webhooks; delete one you no longer use."
            )
        webhook = Webhook.objects.create(
            mind=mind,
            fanned_seq=events.last_seq(mind.pk),  # the events from now on
            url=values["url"],
            events=values.get("events", ["*"]),
            enabled=values.get("enabled", True),
            secret_sealed=seal(values.get("secret") or generated or ""),
            created_at=now,
            updated_at=now,
        )
    return Registered(webhook, generated)


def webhook_update(*, webhook: Webhook, body: Any, now: datetime | None = None) -> Webhook:
    """Change any of `url, events, secret, enabled`. A new secret signs at once and the
    previous one still signs for ROTATION_GRACE; enabling a webhook clears why it was
    disabled and sends what waited. Only the columns the body changes are written, from the
    row as it is now: what the worker wrote meanwhile (a lease, a pause, a disable) stays."""
    values = _judged(body, creating=False)
    now = now or timezone.now()
    with transaction.atomic():
        current = Webhook.objects.select_for_update().get(pk=webhook.pk)
        changed = {"updated_at"}
        if "url" in values:
            current.url = values["url"]
            changed.add("url")
        if "events" in values:
            current.events = values["events"]
            changed.add("events")
        if "secret" in values:
            changed |= _rotate(current, values["secret"], now=now)
        if "enabled" in values and values["enabled"] != current.enabled:
            current.enabled = values["enabled"]
            changed |= {"enabled", "disabled_at", "disabled_reason", "paused_until", "fanned_seq"}
            if current.enabled:
                current.disabled_reason, current.disabled_at = "", None
                current.paused_until = None
                # Events of the time it was off are not sent; deliveries that waited are.
                current.fanned_seq = events.last_seq(current.mind_id)
            else:
                current.disabled_at = now
                changed -= {"paused_until", "fanned_seq"}
        current.updated_at = now
        current.save(update_fields=sorted(changed))
        if current.enabled:
            transaction.on_commit(events.wake_worker)
    webhook.refresh_from_db()
    return webhook


def _rotate(webhook: Webhook, secret: str, *, now: datetime) -> set[str]:
    """`secret` signs from now on; the one it replaces, and those replaced within the last
    ROTATION_GRACE, still sign until their grace ends (a second rotation in a day keeps the
    secret receivers may still use). The columns it changed."""
    current = unseal(webhook.secret_sealed)
    if current == secret:
        return set()
    previous = signing.previous_unsealed(webhook.previous_secrets_sealed, now=now)
    until = now + ROTATION_GRACE
    webhook.previous_secrets_sealed = signing.previous_sealed([*previous, (current, until)])
    webhook.previous_secret_until = until
    webhook.secret_sealed = seal(secret)
    return {"previous_secrets_sealed", "previous_secret_until", "secret_sealed"}


def webhook_rotate_secret(*, webhook: Webhook, now: datetime | None = None) -> str:
    """Generate a new secret for the webhook (returned, shown once); the previous one still
    signs for ROTATION_GRACE."""
    now = now or timezone.now()
    secret = signing.secret_generate()
    with transaction.atomic():
        current = Webhook.objects.select_for_update().get(pk=webhook.pk)
        changed = _rotate(current, secret, now=now)
        current.updated_at = now
        current.save(update_fields=sorted(changed | {"updated_at"}))
    webhook.refresh_from_db()
    return secret


def webhook_delete(*, webhook: Webhook) -> None:
    """Remove the webhook and its delivery log; nothing more is sent to it."""
    webhook.delete()


def webhook_test(*, webhook: Webhook, actor: Actor) -> WebhookDelivery:
    """Record a `ping` for this webhook and send it now, in the caller's time (up to the
    send timeout); the delivery, as its attempt left it. A failed ping is not retried."""
    now = timezone.now()
    with transaction.atomic():
        (ping,) = events.record(
            webhook.mind_id,
            [(events.PING, {"webhook_id": webhook.pk, "actor": events.actor_data(actor)}, "")],
            now=now,
            hooks=[(webhook.pk, webhook.events)],
        )
        # This request sends it; the worker only if the request died before it could.
        delivery = WebhookDelivery.objects.create(
            webhook=webhook,
            event_id=ping["id"],
            seq=ping["seq"],
            created_at=now,
            next_attempt_at=now + PING_TAKEN_OVER,
        )
    delivery = WebhookDelivery.objects.select_related("event").get(pk=delivery.pk)
    sending.attempt(webhook, delivery)
    delivery.refresh_from_db()
    return delivery


def delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send the delivery again, now (the worker takes it): a new round of attempts, and the
    webhook's queue no longer held by an earlier failure. Conflict when it is disabled."""
    webhook = delivery.webhook
    if not webhook.enabled:
        raise Conflict("This webhook is disabled: enable it before redelivering.")
    now = timezone.now()
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.PENDING,
            attempts=0,
            next_attempt_at=now,
            finished_at=None,
        )
        Webhook.objects.filter(pk=webhook.pk).update(paused_until=None)
        transaction.on_commit(events.wake_worker)
    delivery.refresh_from_db()
    return delivery
