"""Reads of a mind's chat: a message as JSON, the history, the agent's status, unread counts.
Each takes the mind already scoped to the caller (minds/access.py decides who may)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Count, QuerySet
from django.utils import timezone

from chat.models import ChatMessage, Conversation, Role
from chat.rules import ONLINE_WINDOW
from memories.fields import iso
from minds.models import Mind

# A message's public fields, in the order of API.md §9.9.
MESSAGE_FIELDS = ("id", "role", "content", "reply_to_id", "author", "created_at", "read_at")


def message_to_dict(message: ChatMessage) -> dict[str, Any]:
    """The message as every face shows it: `id` is its number in the mind."""
    author = message.author
    return {
        "id": message.number,
        "role": message.role,
        "content": message.content,
        "reply_to_id": message.reply_to,
        "author": author.email if author is not None else None,
        "created_at": iso(message.created_at),
        "read_at": iso(message.read_at),
    }


def _messages(mind: Mind) -> QuerySet[ChatMessage]:
    return ChatMessage.objects.filter(mind=mind).select_related("author")


def chat_history(*, mind: Mind, limit: int) -> tuple[list[ChatMessage], int]:
    """The mind's last `limit` messages, oldest first (the newest last), and how many there
    are in all."""
    newest = list(_messages(mind).order_by("-number")[:limit])
    newest.reverse()
    return newest, ChatMessage.objects.filter(mind=mind).count()


def chat_after(*, mind: Mind, after: int, limit: int) -> list[ChatMessage]:
    """The mind's messages (both sides) after number `after`, oldest first, at most `limit`."""
    return list(_messages(mind).filter(number__gt=after).order_by("number")[:limit])


def chat_unread(*, mind: Mind, role: str) -> int:
    """How many messages `role` ("agent" or "human") has not read: the other side's unread."""
    other = Role.HUMAN if role == Role.AGENT else Role.AGENT
    return ChatMessage.objects.filter(mind=mind, role=other, read_at__isnull=True).count()


def chat_unread_for_people(*, mind_ids: Iterable[str]) -> dict[str, int]:
    """{mind id: the agent's messages no person has read} for the minds that have any."""
    rows = (
        ChatMessage.objects.filter(
            mind_id__in=list(mind_ids), role=Role.AGENT, read_at__isnull=True
        )
        .values("mind_id")
        .annotate(unread=Count("pk"))
        .values_list("mind_id", "unread")
    )
    return dict(rows)


def agent_seen_at(*, mind: Mind) -> datetime | None:
    """When the mind's agent last polled (None: never)."""
    return Conversation.objects.filter(mind=mind).values_list("agent_seen_at", flat=True).first()


def agent_online(seen_at: datetime | None, *, now: datetime | None = None) -> bool:
    """Whether an agent last seen at `seen_at` counts as online now."""
    return seen_at is not None and seen_at >= (now or timezone.now()) - ONLINE_WINDOW


def chat_status(*, mind: Mind, now: datetime | None = None) -> dict[str, Any]:
    """`{agent_online, last_seen_at, unread_for_agent, unread_for_human}` (API.md §9.9)."""
    seen = agent_seen_at(mind=mind)
    return {
        "agent_online": agent_online(seen, now=now),
        "last_seen_at": iso(seen),
        "unread_for_agent": chat_unread(mind=mind, role=Role.AGENT),
        "unread_for_human": chat_unread(mind=mind, role=Role.HUMAN),
    }
