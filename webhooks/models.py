"""Webhooks: where a mind's changes are sent, the events recorded for them, and every attempt
to deliver one.

An event is recorded in the transaction of the change that causes it (webhooks/events.py);
the worker makes each webhook's delivery of it and sends them (webhooks/delivery.py).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from synapse_site.ids import random_id

MAX_URL_LENGTH = 2000
# What the delivery log keeps of a receiver's answer.
RESPONSE_HEAD_BYTES = 2048


def new_webhook_id() -> str:
    return random_id("wh_")


def new_event_id() -> str:
    # The Standard Webhooks message id (`webhook-id`): the same for every retry of an event.
    return random_id("msg_")


def new_delivery_id() -> str:
    return random_id("dlv_")


class Webhook(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_webhook_id, editable=False)
    mind = models.ForeignKey("minds.Mind", on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(max_length=MAX_URL_LENGTH)
    # The event patterns it takes: names ("memory.created"), "memory.*" or "*".
    events = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    # Sealed at rest (core/sealed.py). Replaced secrets still sign until their time is up, so
    # a receiver can move to the new one (signing.previous_unsealed); the last such time.
    secret_sealed = models.TextField(editable=False)
    previous_secrets_sealed = models.TextField(blank=True, default="", editable=False)
    previous_secret_until = models.DateTimeField(null=True, blank=True, editable=False)
    # Why the server turned it off (deliveries failing for a day, a 410), empty otherwise.
    disabled_reason = models.CharField(max_length=300, blank=True, default="")
    disabled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # The mind's events up to this sequence number have their deliveries to this webhook (or
    # were not for it): the worker makes the deliveries of later ones (events.fan_out).
    fanned_seq = models.BigIntegerField(default=0, editable=False)
    # A failed delivery holds the webhook's queue until its retry is due, so a dead receiver
    # costs one attempt per retry, not one per waiting event.
    paused_until = models.DateTimeField(null=True, blank=True, editable=False)
    # Held by the worker thread sending its deliveries, so one sender serves a webhook at a
    # time wherever workers run; it lapses by itself when that worker dies.
    lease_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["mind", "created_at"], name="webhook_mind_idx")]

    def __str__(self) -> str:
        return f"{self.url} ({self.id})"


class EventSequence(models.Model):
    """The last sequence number given to an event of a mind: each event the mind sends has
    the next one, so a receiver can order and de-duplicate what it gets."""

    mind = models.OneToOneField(
        "minds.Mind", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    last = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.mind_id}: {self.last}"


class WebhookEvent(models.Model):
    """One change of a mind, as sent: `payload` is the exact body every delivery signs."""

    id = models.CharField(primary_key=True, max_length=32, default=new_event_id, editable=False)
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    seq = models.BigIntegerField()
    type = models.CharField(max_length=40)
    # The memory it is about, when it is about one: a purge forgets its values here too.
    memory_id = models.CharField(max_length=32, blank=True, default="")
    payload = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["mind", "seq"], name="webhook_event_seq_unique")
        ]
        indexes = [
            models.Index(
                fields=["mind", "memory_id"],
                name="webhook_event_memory_idx",
                condition=~Q(memory_id=""),
            )
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq} ({self.id})"


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=32, default=new_delivery_id, editable=False)
    webhook = models.ForeignKey(
        Webhook, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    # The event's, copied: a webhook's deliveries go out in this order.
    seq = models.BigIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    # When the next attempt is due (pending only).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # The last attempt's outcome.
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The log, newest first.
            models.Index(fields=["webhook", "created_at"], name="webhook_delivery_log_idx"),
            # What is due, in the order it goes out.
            models.Index(
                fields=["webhook", "seq"],
                name="webhook_delivery_pending_idx",
                condition=Q(status="pending"),
            ),
            models.Index(
                fields=["next_attempt_at"],
                name="webhook_delivery_due_idx",
                condition=Q(status="pending"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class WebhookAttempt(models.Model):
    """One try at a delivery: what the receiver answered, or why nothing was sent."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField(default=timezone.now)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    # The first bytes of the answer (RESPONSE_HEAD_BYTES), as text.
    response_body = models.TextField(blank=True, default="")
    error = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.delivery_id} at {self.at:%Y-%m-%d %H:%M:%S}"
