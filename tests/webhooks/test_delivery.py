"""Deliveries: recorded with the change, sent signed, retried, disabled; per-mind order."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.services import memory_delete, memory_verify
from tests.factories import PERSON, remember
from tests.webhook_receiver import receiving, whsec
from webhooks import delivery as sending
from webhooks import services
from webhooks.models import Webhook, WebhookDelivery, WebhookEvent
from webhooks.services import webhook_create, webhook_update

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = whsec(b"0123456789abcdef0123")


@pytest.fixture(autouse=True)
def _private_allowed(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True


def hook(mind, url, **body):
    return webhook_create(mind=mind, body={"url": url, "secret": SECRET, **body}).webhook


def test_every_change_reaches_the_receiver_signed_and_in_order(mind):
    with receiving() as receiver:
        hook(mind, receiver.url)
        memory = remember(mind, "office", "The office is in Berlin")
        remember(mind, "office", "The office is in Munich")
        memory_verify(memory=memory, actor=PERSON)
        memory.refresh_from_db()
        memory_delete(memory=memory, actor=PERSON)
        assert sending.deliver_due() == 4
        payloads = receiver.verified(SECRET)
    assert [p["type"] for p in payloads] == [
        "memory.created",
        "memory.updated",
        "memory.verified",
        "memory.deleted",
    ]
    assert [p["data"]["seq"] for p in payloads] == [1, 2, 3, 4]
    assert payloads[1]["data"]["memory"]["content"] == "The office is in Munich"
    assert payloads[3]["data"]["memory"]["id"] == memory.pk  # the tombstone
    assert payloads[2]["data"]["actor"] == {"type": "user", "name": PERSON.name}
    assert {p["data"]["mind_id"] for p in payloads} == {mind.pk}
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_a_mind_without_webhooks_records_nothing(mind):
    remember(mind, "a", "text")
    assert not WebhookEvent.objects.exists()


def test_a_failure_is_retried_later_and_holds_the_queue(mind):
    with receiving(answers=[500]) as receiver:
        webhook = hook(mind, receiver.url)
        remember(mind, "a", "one")
        remember(mind, "b", "two")
        assert sending.deliver_due() == 0
        assert len(receiver.received) == 1  # the second waits behind the first
        first = WebhookDelivery.objects.get(seq=1)
        assert first.status == "pending" and first.attempts == 1
        assert first.response_status == 500
        webhook.refresh_from_db()
        assert webhook.paused_until == first.next_attempt_at
        later = first.next_attempt_at + timedelta(seconds=1)
        assert first.next_attempt_at - first.created_at >= sending.RETRY_DELAYS[0]
        Webhook.objects.filter(pk=webhook.pk).update(paused_until=timezone.now())
        WebhookDelivery.objects.filter(pk=first.pk).update(next_attempt_at=timezone.now())
        assert sending.deliver_due(now=later) == 2
        assert [p["data"]["seq"] for p in receiver.bodies()] == [1, 1, 2]


def test_the_last_failure_disables_the_webhook(mind):
    with receiving(default=503) as receiver:
        webhook = hook(mind, receiver.url)
        remember(mind, "a", "one")
        for _ in range(sending.MAX_ATTEMPTS):
            Webhook.objects.filter(pk=webhook.pk).update(paused_until=None)
            WebhookDelivery.objects.filter(status="pending").update(next_attempt_at=timezone.now())
            sending.deliver_due()
        assert len(receiver.received) == sending.MAX_ATTEMPTS
    webhook.refresh_from_db()
    delivery = WebhookDelivery.objects.get()
    assert not webhook.enabled and "HTTP 503" in webhook.disabled_reason
    assert delivery.status == "failed" and delivery.tries.count() == sending.MAX_ATTEMPTS


def test_410_disables_at_once(mind):
    with receiving(answers=[410]) as receiver:
        webhook = hook(mind, receiver.url)
        remember(mind, "a", "one")
        remember(mind, "b", "two")
        sending.deliver_due()
        assert len(receiver.received) == 1
    webhook.refresh_from_db()
    assert not webhook.enabled and "410" in webhook.disabled_reason
    remember(mind, "c", "three")  # a disabled webhook gets no new deliveries
    assert WebhookDelivery.objects.count() == 2


def test_a_rotated_secret_still_signs_for_a_day(mind):
    with receiving() as receiver:
        webhook = hook(mind, receiver.url)
        new = whsec(b"another-key-of-20-bytes")
        webhook_update(webhook=webhook, body={"secret": new})
        remember(mind, "a", "one")
        sending.deliver_due()
        assert receiver.verified(SECRET) and receiver.verified(new)
        assert len(receiver.received[0].headers["webhook-signature"].split(" ")) == 2


def test_events_a_webhook_does_not_take_are_not_sent_to_it(mind):
    with receiving() as receiver:
        hook(mind, receiver.url, events="memory.deleted")
        memory = remember(mind, "a", "one")
        memory_delete(memory=memory, actor=PERSON)
        sending.deliver_due()
        assert [p["type"] for p in receiver.bodies()] == ["memory.deleted"]


def test_two_rotations_in_a_day_keep_every_secret_a_receiver_may_still_use(mind):
    webhook = hook(mind, "http://127.0.0.1:9/hook")
    now = timezone.now()
    first = services.webhook_rotate_secret(webhook=webhook, now=now)
    second = services.webhook_rotate_secret(webhook=webhook, now=now + timedelta(hours=1))
    webhook.refresh_from_db()
    assert sending.secrets_in_force(webhook, now + timedelta(hours=2)) == [second, first, SECRET]
    assert sending.secrets_in_force(webhook, now + timedelta(hours=24, minutes=30)) == [
        second,
        first,
    ]
    assert sending.secrets_in_force(webhook, now + timedelta(hours=26)) == [second]


def test_a_change_keeps_what_the_worker_wrote_meanwhile(mind):
    webhook = hook(mind, "http://127.0.0.1:9/hook")
    pause = timezone.now() + timedelta(minutes=5)
    Webhook.objects.filter(pk=webhook.pk).update(
        enabled=False, disabled_reason="The receiver answered 410 Gone.", fanned_seq=7
    )
    webhook_update(webhook=webhook, body={"events": "memory.deleted"})  # read before the 410
    webhook.refresh_from_db()
    assert not webhook.enabled and webhook.fanned_seq == 7 and webhook.events == ["memory.deleted"]
    Webhook.objects.filter(pk=webhook.pk).update(enabled=True, paused_until=pause)
    services.webhook_rotate_secret(webhook=webhook)
    webhook.refresh_from_db()
    assert webhook.paused_until == pause


def test_a_ping_its_request_never_sent_is_sent_once_by_the_worker(mind, monkeypatch):
    with receiving() as receiver:
        webhook = hook(mind, receiver.url)
        monkeypatch.setattr(sending, "attempt", lambda webhook, delivery: None)  # it died
        services.webhook_test(webhook=webhook, actor=PERSON)
        monkeypatch.undo()
        assert sending.deliver_due() == 0  # the request may still be sending it
        ping = WebhookDelivery.objects.get()
        assert ping.next_attempt_at - ping.created_at == services.PING_TAKEN_OVER
        WebhookDelivery.objects.update(next_attempt_at=timezone.now())  # a minute later
        assert sending.deliver_due() == 1
        assert [p["type"] for p in receiver.verified(SECRET)] == ["ping"]
