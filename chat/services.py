"""Writes of a mind's chat: a person's message, the agent's reply, a poll (which marks what
it hands over read), a person reading the agent's messages, and a message kept as a memory.

Who may call them is the face's question (minds/access.py decides); each takes the mind
already scoped to the caller. A body is judged here (chat/rules.py), whatever face it came
from. Each write records its audit entry (ChatEvent) and, for a new message, the webhook
event `chat.message`, in its own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from chat.models import ChatEvent, ChatMessage, Conversation, Role
from chat.rules import POLL_MAX, SEEN_PRECISION, body_check
from chat.selectors import message_to_dict
from core.errors import Invalid, NotFound
from memories.actors import Actor
from memories.services import UpsertResult, memory_store
from minds.models import Mind
from webhooks import events

MESSAGE_EVENT = "chat.message"
# What a message kept as a memory is filed under.
REMEMBER_CATEGORY = "note"
REMEMBER_TAG = "chat"


@dataclass(frozen=True)
class Poll:
    """What an agent's poll hands over: the people's messages, oldest first, and the number
    to poll after next time."""

    messages: list[ChatMessage]
    last_id: int


def _next_number(mind_id: str) -> int:
    """Take the mind's next message number. The conversation row's insert-or-increment holds
    it until the transaction ends (a row lock on PostgreSQL, the write lock SQLite's
    IMMEDIATE transactions take), so two writers never take the same number."""
    table = connection.ops.quote_name(Conversation._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (mind_id, last_number) VALUES (%s, 1) ON CONFLICT (mind_id) "
            f"DO UPDATE SET last_number = {table}.last_number + 1 RETURNING last_number",
            [mind_id],
        )
        return int(cursor.fetchone()[0])


def _audit(
    mind: Mind,
    actor: Actor,
    action: str,
    number: int,
    *,
    now: datetime,
    count: int = 1,
    memory_id: str = "",
) -> None:
    ChatEvent.objects.create(
        mind=mind,
        action=action,
        actor=actor.name,
        actor_type=actor.kind,
        number=number,
        count=count,
        memory_id=memory_id,
        at=now,
    )


def _write(
    *, mind: Mind, role: str, body: Any, actor: Actor, author: Any, now: datetime | None
) -> ChatMessage:
    content, reply_to = body_check(body)
    now = now or timezone.now()
    with transaction.atomic():
        if (
            reply_to is not None
            and not ChatMessage.objects.filter(mind=mind, number=reply_to).exists()
        ):
            raise Invalid.one("reply_to_id", f"No message {reply_to} in this mind's chat.")
        message = ChatMessage.objects.create(
            mind=mind,
            number=_next_number(mind.pk),
            role=role,
            content=content,
            reply_to=reply_to,
            author=author,
            created_at=now,
        )
        action = ChatEvent.Action.SEND if role == Role.HUMAN else ChatEvent.Action.REPLY
        _audit(mind, actor, action, message.number, now=now)
        events.record(
            mind.pk,
            [
                (
                    MESSAGE_EVENT,
                    {"message": message_to_dict(message), "actor": events.actor_data(actor)},
                    "",
                )
            ],
            now=now,
        )
    return message


def chat_send(*, mind: Mind, user: Any, body: Any, now: datetime | None = None) -> ChatMessage:
    """A person's message `{content, reply_to_id?}` to the mind's agent."""
    return _write(
        mind=mind, role=Role.HUMAN, body=body, actor=Actor.for_user(user), author=user, now=now
    )


def chat_reply(*, mind: Mind, actor: Actor, body: Any, now: datetime | None = None) -> ChatMessage:
    """The agent's message `{content, reply_to_id?}` to the mind's people."""
    return _write(mind=mind, role=Role.AGENT, body=body, actor=actor, author=None, now=now)


def chat_poll(
    *, mind: Mind, actor: Actor, since: int | None = None, now: datetime | None = None
) -> Poll:
    """The agent's poll: the people's messages after number `since` (without it: those it has
    not read yet), oldest first, at most POLL_MAX; those not yet read are marked read now.
    Records that the agent was seen (it is online for ONLINE_WINDOW)."""
    now = now or timezone.now()
    after: dict[str, Any] = {"read_at__isnull": True} if since is None else {"number__gt": since}
    found = ChatMessage.objects.filter(mind=mind, role=Role.HUMAN, **after)
    messages = list(found.select_related("author").order_by("number")[:POLL_MAX])
    unread = {m.pk for m in messages if m.read_at is None}
    seen = Conversation.objects.filter(mind=mind).values_list("agent_seen_at", flat=True).first()
    stale = seen is None or seen <= now - SEEN_PRECISION
    # Read first, written only when something changes: most polls find nothing new.
    if unread or stale:
        with transaction.atomic():
            if unread:
                ChatMessage.objects.filter(pk__in=unread, read_at__isnull=True).update(read_at=now)
                last_read = max(m.number for m in messages if m.pk in unread)
                _audit(mind, actor, ChatEvent.Action.READ, last_read, now=now, count=len(unread))
            if stale:
                Conversation.objects.bulk_create(
                    [Conversation(mind=mind, agent_seen_at=now)],
                    update_conflicts=True,
                    unique_fields=["mind"],
                    update_fields=["agent_seen_at"],
                )
        for message in messages:
            if message.read_at is None:
                message.read_at = now
    last_id = max([since or 0, *(m.number for m in messages)])
    return Poll(messages=messages, last_id=last_id)


def chat_read(*, mind: Mind, user: Any, upto: int, now: datetime | None = None) -> int:
    """A person has seen the agent's messages up to number `upto`: those not yet read are
    marked read. Returns how many were."""
    now = now or timezone.now()
    unread = ChatMessage.objects.filter(
        mind=mind, role=Role.AGENT, number__lte=upto, read_at__isnull=True
    )
    if not unread.exists():  # the usual case: no write at all
        return 0
    with transaction.atomic():
        count = unread.update(read_at=now)
        if count:
            _audit(mind, Actor.for_user(user), ChatEvent.Action.READ, upto, now=now, count=count)
    return count


def chat_remember(
    *, mind: Mind, user: Any, number: int, now: datetime | None = None
) -> UpsertResult:
    """Keep message `number` as a person's memory (source `user`, verified), a note tagged
    `chat`, through the memory service; asking again for the same message updates that
    memory instead of adding another."""
    message = ChatMessage.objects.filter(mind=mind, number=number).first()
    if message is None:
        raise NotFound(f"No message {number} in this mind's chat.")
    now = now or timezone.now()
    actor = Actor.for_user(user)
    with transaction.atomic():
        result = memory_store(
            mind=mind,
            actor=actor,
            body={
                "category": REMEMBER_CATEGORY,
                "key": f"{REMEMBER_CATEGORY}_chat_message_{number}",
                "content": message.content,
                "tags": [REMEMBER_TAG],
            },
            now=now,
        )
        _audit(mind, actor, ChatEvent.Action.REMEMBER, number, now=now, memory_id=result.memory.pk)
    return result
