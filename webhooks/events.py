"""Which events there are, which a webhook takes, and recording them.

`record` runs in the transaction of the change it reports (the outbox): the event, with the
mind's next sequence number, and one pending delivery for each enabled webhook of the mind
that takes it. The change and its deliveries commit together or not at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import orjson
from django.db import connection, transaction

from core.errors import Invalid
from memories import rows
from memories.actors import Actor
from memories.fields import iso, memory_to_dict
from memories.models import Memory, MemoryEvent
from synapse_site.ids import random_ids
from webhooks.models import EventSequence, Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent

logger = logging.getLogger(__name__)

Action = MemoryEvent.Action

MEMORY_EVENTS = (
    "memory.created",
    "memory.updated",
    "memory.deleted",
    "memory.verified",
    "memory.unverified",
    "memory.superseded",
)
# Sent to one webhook when a person or its agent asks for a test; taken by every webhook.
PING = "ping"
# A message written in a mind's chat, by a person or its agent (chat/services.py).
CHAT_EVENTS = ("chat.message",)
# A scheduled job ran (scheduler/runner.py).
CRON_EVENTS = ("cron.run",)
# What a webhook may name in `events`: an event, a family ("memory.*"), or "*".
EVENT_TYPES = (*MEMORY_EVENTS, *CHAT_EVENTS, *CRON_EVENTS)
PATTERNS = ("*", "memory.*", *EVENT_TYPES, "chat.*", "cron.*")
MAX_PATTERNS = len(PATTERNS)

# The event each audited action sends.
FOR_ACTION = {
    Action.CREATE: "memory.created",
    Action.UPDATE: "memory.updated",
    Action.DELETE: "memory.deleted",
    Action.PURGE: "memory.deleted",
    Action.VERIFY: "memory.verified",
    Action.UNVERIFY: "memory.unverified",
    Action.SUPERSEDE: "memory.superseded",
    # A delete undone: the memory is there again, under the id memory.deleted named.
    Action.UNDELETE: "memory.created",
}


def events_parse(value: Any) -> list[str]:
    """The patterns a body's `events` names: "*", "memory.*", one name, a comma-separated
    string or a list of them, in their order, once each. Invalid for anything else."""
    if isinstance(value, str):
        names = value.split(",")
    elif isinstance(value, list) and all(isinstance(name, str) for name in value):
        names = value
    else:
        raise Invalid.one("events", 'Give "*", "memory.*", an event name, or a list of them.')
    patterns = list(dict.fromkeys(name.strip() for name in names if name.strip()))
    if not patterns:
        raise Invalid.one("events", 'Name at least one event, or "*" for all.')
    unknown = [name for name in patterns if name not in PATTERNS]
    if unknown:
        raise Invalid.one(
            "events",
            f"Unknown event {unknown[0][:60]!r}: use one of {', '.join(PATTERNS)}.",
        )
    return patterns


def takes(patterns: Sequence[str], event_type: str) -> bool:
    """Whether a webhook with these patterns takes an event of this type."""
    if event_type == PING or "*" in patterns or event_type in patterns:
        return True
    family = event_type.split(".", 1)[0]
    return f"{family}.*" in patterns


# --- Recording ------------------------------------------------------------------------------

# Called after the commit of a change that recorded deliveries: wakes the worker (apps.py).
_wakers: list[Callable[[], None]] = []


def on_recorded(waker: Callable[[], None]) -> None:
    """Call `waker` after each commit that recorded deliveries."""
    if waker not in _wakers:
        _wakers.append(waker)


def wake_worker() -> None:
    """Wake the webhook worker (after a commit that made deliveries due)."""
    for waker in _wakers:
        try:
            waker()
        except Exception:  # the deliveries are committed: the worker's next look takes them
            logger.exception("Could not wake the webhook worker")


# One event to record: its type, what its `data` holds beside the mind and the sequence
# number, and the memory it is about ("" for none).
Pending = tuple[str, dict[str, Any], str]


Hooks = list[tuple[str, list[str]]]  # (webhook id, its patterns)


def enabled_hooks(mind_id: str) -> Hooks:
    """The mind's enabled webhooks: one indexed read, made by every write of the mind."""
    return list(Webhook.objects.filter(mind_id=mind_id, enabled=True).values_list("id", "events"))


def record(
    mind_id: str, events: Sequence[Pending], *, now: datetime, hooks: Hooks | None = None
) -> list[dict[str, Any]]:
    """In the caller's transaction: record the events that an enabled webhook of the mind
    (of `hooks`, when given) takes, each with the mind's next sequence number. The worker
    makes each webhook's deliveries of them (`fan_out`). Returns the event rows."""
    if hooks is None:
        hooks = enabled_hooks(mind_id)
    wanted = [
        (event_type, data, memory_id)
        for event_type, data, memory_id in events
        if any(takes(patterns, event_type) for _, patterns in hooks)
    ]
    if not wanted:
        return []
    first = _advance(mind_id, len(wanted)) - len(wanted) + 1
    event_rows = [
        {
            "id": event_id,
            "mind_id": mind_id,
            "seq": seq,
            "type": event_type,
            "memory_id": memory_id,
            "payload": orjson.dumps(
                {
                    "type": event_type,
                    "timestamp": iso(now),
                    "data": {"mind_id": mind_id, "seq": seq, **data},
                }
            ).decode(),
            "created_at": now,
        }
        for (event_type, data, memory_id), seq, event_id in zip(
            wanted, range(first, first + len(wanted)), random_ids("msg_", len(wanted)), strict=True
        )
    ]
    rows.insert(WebhookEvent, event_rows)
    if _wakers and any(row["type"] != PING for row in event_rows):
        transaction.on_commit(wake_worker)
    return event_rows


def last_seq(mind_id: str) -> int:
    """The sequence number the mind's last event took (0: none yet)."""
    return EventSequence.objects.filter(mind_id=mind_id).values_list("last", flat=True).first() or 0


# Events read at a time when making a webhook's deliveries.
FAN_OUT_BATCH = 500


def fan_out(webhook: Webhook, *, now: datetime) -> int:
    """Make the webhook's pending deliveries of the mind's events it has not seen yet (those
    after `fanned_seq`) and takes, due now; a ping is only ever its own webhook's. Moves
    `fanned_seq` in the same transaction, and only from the value read, so two workers never
    make a delivery twice. Returns the deliveries made."""
    # Read first, outside the transaction: on SQLite a transaction takes the write lock the
    # web workers wait for, and most looks find nothing new. Pings are read too, and skipped
    # past: a mind whose last event is a ping would otherwise look unfanned for ever.
    events = list(
        WebhookEvent.objects.filter(mind_id=webhook.mind_id, seq__gt=webhook.fanned_seq)
        .order_by("seq")
        .values_list("id", "seq", "type")[:FAN_OUT_BATCH]
    )
    if not events:
        return 0
    with transaction.atomic():
        moved = Webhook.objects.filter(pk=webhook.pk, fanned_seq=webhook.fanned_seq).update(
            fanned_seq=events[-1][1]
        )
        if not moved:
            return 0
        webhook.fanned_seq = events[-1][1]
        taken = [
            (pk, seq)
            for pk, seq, event_type in events
            if event_type != PING and takes(webhook.events, event_type)
        ]
        rows.insert(
            WebhookDelivery,
            [
                {
                    "id": delivery_id,
                    "webhook_id": webhook.pk,
                    "event_id": event_id,
                    "seq": seq,
                    "status": WebhookDelivery.Status.PENDING,
                    "next_attempt_at": now,
                    "created_at": now,
                }
                for (event_id, seq), delivery_id in zip(
                    taken, random_ids("dlv_", len(taken)), strict=True
                )
            ],
        )
    return len(taken)


def _advance(mind_id: str, count: int) -> int:
    """Take `count` sequence numbers of the mind; the last one taken. The row's update holds
    it until the transaction ends, so two writers never take the same numbers."""
    table = connection.ops.quote_name(EventSequence._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (mind_id, last) VALUES (%s, %s) ON CONFLICT (mind_id) "
            f"DO UPDATE SET last = {table}.last + excluded.last RETURNING last",
            [mind_id, count],
        )
        return int(cursor.fetchone()[0])


def actor_data(actor: Actor) -> dict[str, str]:
    """An event's `actor`: who made the change."""
    return {"type": actor.kind, "name": actor.name}


def memory_changes(changes: Sequence[tuple[Memory | None, dict[str, Any]]]) -> None:
    """The memory write path's hook (memories/services.py `on_change`), in its transaction:
    each change it audited, as (the memory as it is now, or None when purged; its audit
    row). A mind with no enabled webhook costs one read."""
    by_mind: dict[str, list[tuple[Memory | None, dict[str, Any]]]] = {}
    for memory, event in changes:
        if event["action"] in FOR_ACTION:
            by_mind.setdefault(event["mind_id"], []).append((memory, event))
    for mind_id, mine in by_mind.items():
        hooks = enabled_hooks(mind_id)
        if not hooks:
            continue
        pending = [
            (
                FOR_ACTION[event["action"]],
                {
                    "memory": memory_to_dict(memory)
                    if memory is not None
                    else {"id": event["memory_id"], "purged": True},
                    "actor": {"type": event["actor_type"], "name": event["actor"]},
                },
                event["memory_id"],
            )
            for memory, event in mine
        ]
        record(mind_id, pending, now=mine[0][1]["at"], hooks=hooks)


def memory_forget(mind_id: str, memory_id: str) -> None:
    """A purge's hook: the events about this memory keep their type, sequence number and
    the memory's id, nothing of its values; the receivers' answers to them (which may echo
    what they got) are forgotten too."""
    about = WebhookEvent.objects.filter(mind_id=mind_id, memory_id=memory_id)
    for event in about.only("id", "payload"):
        body = orjson.loads(event.payload)
        body["data"]["memory"] = {"id": memory_id, "purged": True}
        WebhookEvent.objects.filter(pk=event.pk).update(payload=orjson.dumps(body).decode())
    WebhookAttempt.objects.filter(delivery__event__in=about).exclude(response_body="").update(
        response_body=""
    )
