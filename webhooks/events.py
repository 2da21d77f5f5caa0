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
# What a webhook may name in `events`: an event, a family ("memory.*"), or "*".
EVENT_TYPES = MEMORY_EVENTS
PATTERNS = ("*", "memory.*", *EVENT_TYPES)
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
    (of `hooks`, when given) takes, each with the mind's next sequence number, and a pending
    delivery per webhook, due now (a ping: sent by the caller). Returns the delivery rows."""
    if hooks is None:
        hooks = enabled_hooks(mind_id)
    wanted = []
    for event_type, data, memory_id in events:
        targets = [pk for pk, patterns in hooks if takes(patterns, event_type)]
        if targets:
            wanted.append((event_type, data, memory_id, targets))
    if not wanted:
        return []
    first = _advance(mind_id, len(wanted)) - len(wanted) + 1
    event_ids = random_ids("msg_", len(wanted))
    event_rows: list[dict[str, Any]] = []
    delivery_rows: list[dict[str, Any]] = []
    delivery_ids = iter(random_ids("dlv_", sum(len(w[3]) for w in wanted)))
    for (event_type, data, memory_id, targets), seq, event_id in zip(
        wanted, range(first, first + len(wanted)), event_ids, strict=True
    ):
        body = {
            "type": event_type,
            "timestamp": iso(now),
            "data": {"mind_id": mind_id, "seq": seq, **data},
        }
        event_rows.append(
            {
                "id": event_id,
                "mind_id": mind_id,
                "seq": seq,
                "type": event_type,
                "memory_id": memory_id,
                "payload": orjson.dumps(body).decode(),
                "created_at": now,
            }
        )
        due = None if event_type == PING else now  # a test is sent by the request itself
        delivery_rows += [
            {
                "id": next(delivery_ids),
                "webhook_id": pk,
                "event_id": event_id,
                "seq": seq,
                "status": WebhookDelivery.Status.PENDING,
                "attempts": 0,
                "next_attempt_at": due,
                "created_at": now,
            }
            for pk in targets
        ]
    rows.insert(WebhookEvent, event_rows)
    rows.insert(WebhookDelivery, delivery_rows)
    if _wakers and any(row["next_attempt_at"] is not None for row in delivery_rows):
        transaction.on_commit(wake_worker)
    return delivery_rows


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
