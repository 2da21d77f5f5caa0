"""Sending the recorded deliveries: at least once, in order per webhook, retried for a day.

The worker process runs a dispatcher (`Dispatcher`, started by webhooks/tasks.py): woken
after each commit that recorded deliveries and every few seconds anyway, it takes the
webhooks that have deliveries due and serves each from a thread of its pool. Serving a
webhook holds its lease (`Webhook.lease_until`), so one thread anywhere sends its
deliveries, oldest sequence number first; a worker killed mid-send leaves the lease to lapse
and the delivery pending, so it is sent again (the receiver de-duplicates by `webhook-id`).

A failed attempt is tried again after RETRY_DELAYS (about 32 hours in all) and holds the
webhook's later deliveries until then; after the last one the webhook is disabled, and a 410
disables it at once. A slow or dead receiver holds only its own thread and its own queue.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from django.db import close_old_connections, connections, transaction
from django.db.models import Exists, OuterRef, Q, Subquery
from django.utils import timezone

from core.sealed import Unsealable, unseal
from webhooks import destinations, signing
from webhooks.events import fan_out, last_seq
from webhooks.models import (
    EventSequence,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEvent,
)

logger = logging.getLogger(__name__)

Status = WebhookDelivery.Status

# After the n-th failed attempt the next is due RETRY_DELAYS[n - 1] later; after the last,
# the webhook is disabled.
RETRY_DELAYS = (
    timedelta(seconds=5),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
    timedelta(hours=14),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
# A serving thread renews its lease before each send; a dead one's lapses after this.
LEASE = timedelta(seconds=destinations.SEND_TIMEOUT + 5)
# Seconds after which a serving thread renews its lease before the next send: a send that
# takes the whole timeout still ends within the lease.
RENEW_AFTER = LEASE.total_seconds() - destinations.SEND_TIMEOUT - 1
# Deliveries read at a time while serving a webhook.
BATCH = 20
# Webhooks served at once by one worker process.
THREADS = 16
# The dispatcher looks for due deliveries at least this often (seconds), woken or not.
LOOK_EVERY = 2.0
# Seconds the dispatcher waits after a wake-up, so the events of a burst go out together.
GATHER = 0.1
# Finished deliveries, their attempts and events stay in the log this long.
LOG_KEPT = timedelta(days=30)
PRUNE_EVERY = 3600.0


# --- One attempt -------------------------------------------------------------------------------


def secrets_in_force(webhook: Webhook, now: datetime) -> list[str]:
    """The secrets a delivery is signed with now: the current one, then the replaced ones
    still in their grace period, newest first."""
    previous = signing.previous_unsealed(webhook.previous_secrets_sealed, now=now)
    return [unseal(webhook.secret_sealed), *(secret for secret, _ in reversed(previous))]


def send(webhook: Webhook, event: WebhookEvent) -> destinations.Answer:
    """POST the event to the webhook, signed for this attempt."""
    body = event.payload.encode()
    timestamp = int(time.time())
    try:
        secrets = secrets_in_force(webhook, timezone.now())
    except Unsealable as error:
        return destinations.Answer(None, "", 0, f"Not sent: {error}")
    headers = signing.headers(secrets, msg_id=event.pk, timestamp=timestamp, body=body)
    return destinations.post(webhook.url, body, headers)


def attempt(webhook: Webhook, delivery: WebhookDelivery) -> bool:
    """Send the delivery once and record the attempt: delivered, due again later, or failed
    (a ping is not retried). True when the receiver took it."""
    answer = send(webhook, delivery.event)
    record_answers(webhook, [(delivery, answer)])
    return answer.delivered


def record_answers(
    webhook: Webhook, answers: list[tuple[WebhookDelivery, destinations.Answer]]
) -> None:
    """Record attempts of the webhook's deliveries, in one transaction however many: each
    delivered, due again later, or failed. A failure (only the last can be one: serving
    stops at it) holds the webhook's queue until its retry; the last allowed failure and a
    410 disable the webhook."""
    now = timezone.now()
    pause: datetime | None = None
    held = False
    disable = ""
    for delivery, answer in answers:
        delivery.attempts += 1
        delivery.response_status = answer.status
        delivery.duration_ms = answer.duration_ms
        delivery.error = answer.error
        delivery.next_attempt_at = None
        ping = delivery.event.type == "ping"
        if answer.delivered:
            delivery.status = Status.DELIVERED
        elif answer.status == 410:
            delivery.status = Status.FAILED
            disable = "The receiver answered 410 Gone."
        elif ping:
            delivery.status = Status.FAILED
        elif delivery.attempts >= MAX_ATTEMPTS:
            delivery.status = Status.FAILED
            disable = (
                f"{delivery.attempts} attempts over {_span()} failed; the last: {_outcome(answer)}"
            )
        else:
            pause = delivery.next_attempt_at = now + RETRY_DELAYS[delivery.attempts - 1]
        held = held or not ping
        delivery.finished_at = now if delivery.status != Status.PENDING else None
    with transaction.atomic():
        WebhookAttempt.objects.bulk_create(
            WebhookAttempt(
                delivery=delivery,
                at=now,
                response_status=answer.status,
                duration_ms=answer.duration_ms,
                response_body=answer.body,
                error=answer.error,
            )
            for delivery, answer in answers
        )
        for delivery, _ in answers:
            # Unless it was redelivered or its webhook deleted meanwhile.
            WebhookDelivery.objects.filter(pk=delivery.pk, status=Status.PENDING).update(
                status=delivery.status,
                attempts=delivery.attempts,
                next_attempt_at=delivery.next_attempt_at,
                response_status=delivery.response_status,
                duration_ms=delivery.duration_ms,
                error=delivery.error,
                finished_at=delivery.finished_at,
            )
        if disable:
            Webhook.objects.filter(pk=webhook.pk).update(
                enabled=False, disabled_reason=disable[:300], disabled_at=now, paused_until=None
            )
            logger.warning("Webhook %s disabled: %s", webhook.pk, disable)
        elif held and (pause is not None or webhook.paused_until is not None):
            Webhook.objects.filter(pk=webhook.pk).update(paused_until=pause)
            webhook.paused_until = pause


def _span() -> str:
    hours = sum(RETRY_DELAYS, timedelta()).total_seconds() / 3600
    return f"{hours:.0f} hours"


def _outcome(answer: destinations.Answer) -> str:
    return f"HTTP {answer.status}" if answer.status is not None else answer.error


# --- Serving a webhook -------------------------------------------------------------------------


def due_webhooks(
    *, now: datetime, limit: int, skip: set[str] | frozenset[str] = frozenset()
) -> list[str]:
    """Enabled webhooks that no one serves and no failure holds, with a delivery due now or
    events of their mind they have not had deliveries of."""
    due = WebhookDelivery.objects.filter(
        webhook=OuterRef("pk"), status=Status.PENDING, next_attempt_at__lte=now
    )
    last = EventSequence.objects.filter(mind_id=OuterRef("mind_id")).values("last")
    webhooks = (
        Webhook.objects.filter(enabled=True)
        .filter(Q(paused_until__isnull=True) | Q(paused_until__lte=now))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .filter(Exists(due) | Q(fanned_seq__lt=Subquery(last)))
        .exclude(pk__in=skip)
        .values_list("pk", flat=True)
    )
    return list(webhooks[:limit])


def claim(webhook_id: str, *, now: datetime) -> bool:
    """Take the webhook's lease unless someone holds it."""
    taken = (
        Webhook.objects.filter(pk=webhook_id, enabled=True)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_until=now + LEASE)
    )
    return taken == 1


def serve(webhook_id: str) -> int:
    """Send the webhook's due deliveries in order, its lease held (claim first), recording
    each batch's attempts together; stops at the first failure. Returns the deliveries
    that reached the receiver."""
    delivered = 0
    renewed = time.monotonic()
    try:
        while True:
            now = timezone.now()
            webhook = Webhook.objects.filter(pk=webhook_id, enabled=True).first()
            if webhook is None or (webhook.paused_until and webhook.paused_until > now):
                return delivered
            fan_out(webhook, now=now)
            batch = list(
                WebhookDelivery.objects.filter(
                    webhook_id=webhook_id, status=Status.PENDING, next_attempt_at__lte=now
                )
                .select_related("event")
                .order_by("seq")[:BATCH]
            )
            if not batch:
                if webhook.fanned_seq < last_seq(webhook.mind_id):
                    continue  # events none of which it takes: the next ones
                return delivered
            answers = []
            for delivery in batch:
                if time.monotonic() - renewed > RENEW_AFTER:
                    _renew(webhook_id)
                    renewed = time.monotonic()
                answer = send(webhook, delivery.event)
                answers.append((delivery, answer))
                if not answer.delivered:
                    break
            record_answers(webhook, answers)
            delivered += sum(answer.delivered for _, answer in answers)
            if not answers[-1][1].delivered:
                return delivered
            if time.monotonic() - renewed > RENEW_AFTER:
                _renew(webhook_id)
                renewed = time.monotonic()
    finally:
        Webhook.objects.filter(pk=webhook_id).update(lease_until=None)


def _renew(webhook_id: str) -> None:
    Webhook.objects.filter(pk=webhook_id).update(lease_until=timezone.now() + LEASE)


def deliver_due(*, now: datetime | None = None) -> int:
    """Serve every webhook with deliveries due, one after another in this thread (tests,
    `manage.py` and a worker without threads). Returns the deliveries that reached their
    receivers."""
    delivered = 0
    served: set[str] = set()
    while True:
        when = now or timezone.now()
        due = due_webhooks(now=when, limit=THREADS, skip=served)
        if not due:
            return delivered
        for webhook_id in due:
            served.add(webhook_id)
            if claim(webhook_id, now=when):
                delivered += serve(webhook_id)


def prune(*, now: datetime | None = None) -> int:
    """Forget finished deliveries older than LOG_KEPT and events no delivery needs."""
    cutoff = (now or timezone.now()) - LOG_KEPT
    gone, _ = WebhookDelivery.objects.filter(
        ~Q(status=Status.PENDING), finished_at__lt=cutoff
    ).delete()
    waiting = Webhook.objects.filter(
        mind_id=OuterRef("mind_id"), enabled=True, fanned_seq__lt=OuterRef("seq")
    )
    WebhookEvent.objects.filter(deliveries__isnull=True, created_at__lt=cutoff).exclude(
        Exists(waiting)
    ).delete()
    return gone


# --- The worker's dispatcher -------------------------------------------------------------------


class Dispatcher:
    """Runs in the worker process: looks for due deliveries when woken and every LOOK_EVERY
    seconds, and serves each due webhook from a pool of THREADS threads."""

    def __init__(self, threads: int = THREADS) -> None:
        self._woken = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="webhook")
        self._threads = threads
        self._serving: set[str] = set()
        self._lock = threading.Lock()
        self._pruned = 0.0
        self._stopped = threading.Event()

    def wake(self) -> None:
        self._woken.set()

    def stop(self) -> None:
        """End run_forever after its round, and wait for the sends under way."""
        self._stopped.set()
        self._woken.set()
        self._pool.shutdown(wait=True)

    def run_forever(self) -> None:
        while not self._stopped.is_set():
            self._woken.wait(timeout=LOOK_EVERY)
            # A burst of writes is served as one batch: each round costs the database writes.
            time.sleep(GATHER)
            self._woken.clear()
            if self._stopped.is_set():
                break
            try:
                self.dispatch()
                if time.monotonic() - self._pruned > PRUNE_EVERY:
                    self._pruned = time.monotonic()
                    prune()
            except Exception:  # the database is away: look again next round
                logger.exception("Could not look for webhook deliveries")
            finally:
                close_old_connections()
        connections.close_all()  # this thread's own

    def dispatch(self) -> int:
        """Claim the due webhooks this process has room for; returns how many it took."""
        with self._lock:
            free = self._threads - len(self._serving)
            busy = set(self._serving)
        if free <= 0:
            return 0
        now = timezone.now()
        taken = 0
        for webhook_id in due_webhooks(now=now, limit=free, skip=busy):
            if claim(webhook_id, now=now):
                with self._lock:
                    self._serving.add(webhook_id)
                self._pool.submit(self._serve, webhook_id)
                taken += 1
        return taken

    def _serve(self, webhook_id: str) -> None:
        try:
            serve(webhook_id)
        except Exception:
            logger.exception("Could not serve webhook %s", webhook_id)
        finally:
            with self._lock:
                self._serving.discard(webhook_id)
            close_old_connections()
            # Its queue may have more, or others waited for a free thread.
            self._woken.set()
