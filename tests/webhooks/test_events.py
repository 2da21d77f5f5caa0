"""What each change records: its event, its sequence number, purges forgotten, pings."""

from __future__ import annotations

import threading
import time

import pytest
from django.utils import timezone

from core.errors import Conflict, Invalid, QuotaExceeded
from memories.services import (
    memory_purge,
    memory_supersede,
    memory_unverify,
    memory_upsert_many,
    memory_verify,
)
from tests.factories import AGENT, PERSON, SYSTEM, mind_make, remember
from tests.webhook_receiver import receiving, whsec
from webhooks import delivery as sending
from webhooks import services
from webhooks.delivery import Dispatcher
from webhooks.events import events_parse, fan_out, takes
from webhooks.models import Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = whsec(b"events-secret-bytes!")
LOCAL = "http://127.0.0.1:9/hook"  # never sent to: these tests do not deliver


@pytest.fixture(autouse=True)
def _private_allowed(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True


def hook(mind, url=LOCAL, **body):
    return services.webhook_create(mind=mind, body={"url": url, "secret": SECRET, **body}).webhook


def types() -> list[str]:
    return list(WebhookEvent.objects.order_by("seq").values_list("type", flat=True))


def test_verify_unverify_and_supersede_are_events(mind):
    hook(mind)
    old = remember(mind, "office", "Office in Berlin")
    new = remember(mind, "office_now", "Office in Munich")
    memory_verify(memory=old, actor=PERSON)
    old.refresh_from_db()
    memory_unverify(memory=old, actor=PERSON)
    old.refresh_from_db()
    memory_supersede(memory=old, by=new.pk, actor=AGENT)
    assert types() == [
        "memory.created",
        "memory.created",
        "memory.verified",
        "memory.unverified",
        "memory.superseded",
    ]


def test_a_bulk_write_is_one_event_per_memory_with_consecutive_numbers(mind):
    hook(mind)
    memory_upsert_many(
        mind=mind,
        actor=SYSTEM,
        items=[{"category": "note", "key": f"k{i}", "content": f"note {i}"} for i in range(30)],
    )
    assert list(WebhookEvent.objects.order_by("seq").values_list("seq", flat=True)) == list(
        range(1, 31)
    )
    assert not WebhookDelivery.objects.exists()  # the worker makes them
    (webhook,) = Webhook.objects.all()
    assert fan_out(webhook, now=timezone.now()) == 30
    assert fan_out(webhook, now=timezone.now()) == 0  # once only
    assert list(WebhookDelivery.objects.order_by("seq").values_list("seq", flat=True)) == list(
        range(1, 31)
    )


def test_each_mind_numbers_its_own_events(mind):
    other, _ = mind_make(name="Other")
    hook(mind)
    hook(other)
    remember(mind, "a", "one")
    remember(other, "a", "one")
    remember(mind, "b", "two")
    assert sorted(WebhookEvent.objects.filter(mind=mind).values_list("seq", flat=True)) == [1, 2]
    assert list(WebhookEvent.objects.filter(mind=other).values_list("seq", flat=True)) == [1]


def test_each_webhook_gets_its_delivery_and_a_disabled_one_none(mind):
    first, second = hook(mind), hook(mind)
    services.webhook_update(webhook=second, body={"enabled": False})
    remember(mind, "a", "one")
    assert sending.due_webhooks(now=timezone.now(), limit=10) == [first.pk]
    assert fan_out(first, now=timezone.now()) == 1
    second.refresh_from_db()
    assert fan_out(second, now=timezone.now()) == 1  # were it enabled: an event it takes
    services.webhook_update(webhook=second, body={"enabled": True})
    second.refresh_from_db()
    assert fan_out(second, now=timezone.now()) == 0  # what happened while it was off


def test_a_webhook_registered_later_gets_only_later_events(mind):
    hook(mind)
    remember(mind, "a", "one")
    later = hook(mind)
    remember(mind, "b", "two")
    assert fan_out(later, now=timezone.now()) == 1


def test_events_a_webhook_does_not_take_are_skipped_past(mind):
    only_deleted = hook(mind, events="memory.deleted")
    hook(mind)
    remember(mind, "a", "one")
    assert sending.due_webhooks(now=timezone.now(), limit=10)
    assert fan_out(only_deleted, now=timezone.now()) == 0
    only_deleted.refresh_from_db()
    assert only_deleted.fanned_seq == 1


def test_a_purge_forgets_the_memory_in_events_already_recorded(mind):
    with receiving() as receiver:
        receiver.answer_body = b"got: The door code is 4921"  # a receiver that echoes
        hook(mind, receiver.url)
        memory = remember(mind, "card", "The door code is 4921")
        sending.deliver_due()
    assert WebhookAttempt.objects.get().response_body.endswith("4921")
    memory_purge(memory=memory, actor=PERSON)
    assert WebhookAttempt.objects.get().response_body == ""
    payloads = list(WebhookEvent.objects.order_by("seq").values_list("payload", flat=True))
    assert len(payloads) == 2 and not any("4921" in p for p in payloads)
    assert all('"purged":true' in p for p in payloads)
    assert types() == ["memory.created", "memory.deleted"]


def test_a_test_ping_is_sent_at_once_and_not_retried(mind):
    with receiving(answers=[500]) as receiver:
        webhook = hook(mind, receiver.url)
        delivery = services.webhook_test(webhook=webhook, actor=PERSON)
        assert delivery.status == "failed" and delivery.response_status == 500
        delivery = services.webhook_test(webhook=webhook, actor=PERSON)
        assert delivery.status == "delivered" and delivery.attempts == 1
        pings = receiver.verified(SECRET)
    assert [p["type"] for p in pings] == ["ping", "ping"]
    assert pings[0]["data"]["webhook_id"] == webhook.pk
    webhook.refresh_from_db()
    assert webhook.paused_until is None and webhook.enabled


def test_a_ping_as_the_last_event_leaves_nothing_to_serve(mind):
    with receiving() as receiver:
        webhook = hook(mind, receiver.url)
        other = hook(mind, receiver.url)
        remember(mind, "a", "one")
        services.webhook_test(webhook=webhook, actor=PERSON)
        assert sending.deliver_due() == 2  # the change, to each; the ping was its request's
        assert sending.due_webhooks(now=timezone.now(), limit=10) == []
        assert sorted(p["type"] for p in receiver.verified(SECRET)) == [
            "memory.created",
            "memory.created",
            "ping",
        ]
    webhook.refresh_from_db()
    other.refresh_from_db()
    assert webhook.fanned_seq == other.fanned_seq == 2
    assert WebhookDelivery.objects.filter(webhook=other).count() == 1  # no one else's ping


def test_redeliver_sends_a_delivered_event_again_and_refuses_a_disabled_webhook(mind):
    with receiving() as receiver:
        webhook = hook(mind, receiver.url)
        remember(mind, "a", "one")
        sending.deliver_due()
        delivery = WebhookDelivery.objects.get()
        again = services.delivery_redeliver(delivery=delivery)
        assert again.status == "pending" and again.attempts == 0
        sending.deliver_due()
        assert [r.headers["webhook-id"] for r in receiver.received] == [delivery.event_id] * 2
    services.webhook_update(webhook=webhook, body={"enabled": False})
    delivery.refresh_from_db()
    with pytest.raises(Conflict):
        services.delivery_redeliver(delivery=delivery)


def test_a_dead_receiver_does_not_delay_another_webhook(mind):
    with receiving(default="hang") as dead, receiving() as alive:
        hook(mind, dead.url)
        hook(mind, alive.url)
        dispatcher = Dispatcher(threads=4)
        thread = threading.Thread(target=dispatcher.run_forever, daemon=True)
        thread.start()
        for i in range(5):
            remember(mind, f"k{i}", f"note {i}")
            dispatcher.wake()
        try:
            alive.wait_for(5, timeout=30)  # every event, while the other receiver hangs
            dead.wait_for(1, timeout=30)  # its first delivery may start after them
            assert len(dead.received) == 1  # held, and its queue behind it
        finally:
            dead.release()
            dispatcher.stop()
            thread.join(timeout=30)


def test_a_write_does_not_wait_for_a_receiver(mind):
    with receiving(default="hang") as receiver:
        hook(mind, receiver.url)
        started = time.monotonic()
        remember(mind, "a", "one")
        assert receiver.received == []  # nothing is sent by the write itself
        assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("value", "patterns"),
    [
        ("*", ["*"]),
        ("memory.*", ["memory.*"]),
        ("memory.created, memory.deleted", ["memory.created", "memory.deleted"]),
        (["memory.verified", "memory.verified"], ["memory.verified"]),
    ],
)
def test_events_take_the_clients_forms(value, patterns):
    assert events_parse(value) == patterns


@pytest.mark.parametrize("value", ["", "memory.nope", ["memory.*", 3], 7, None, "files.*"])
def test_unknown_events_name_the_field(value):
    with pytest.raises(Invalid) as refused:
        events_parse(value)
    assert list(refused.value.fields) == ["events"]


def test_patterns_match_families_and_all():
    assert takes(["memory.*"], "memory.updated")
    assert takes(["*"], "memory.deleted")
    assert not takes(["memory.created"], "memory.deleted")
    assert takes(["memory.created"], "ping")


def test_a_mind_has_at_most_twenty_webhooks(mind):
    for _ in range(services.MAX_WEBHOOKS):
        hook(mind)
    with pytest.raises(QuotaExceeded):
        hook(mind)
    assert Webhook.objects.count() == services.MAX_WEBHOOKS


def test_create_names_every_field_at_fault(mind):
    with pytest.raises(Invalid) as refused:
        services.webhook_create(
            mind=mind, body={"url": "ftp://x", "events": "nope", "secret": "s", "colour": 1}
        )
    assert set(refused.value.fields) == {"url", "events", "secret", "colour"}
    assert not Webhook.objects.exists()
