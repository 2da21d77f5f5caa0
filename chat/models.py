"""The chat of a mind: one conversation between its agent (Mind Key) and the people who may
write the mind, its messages numbered per mind, and the audit trail of what was done in it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    HUMAN = "human"
    AGENT = "agent"


class Conversation(models.Model):
    """One per mind, made with its first message or its agent's first poll: the number its
    last message took (the next one takes the one after), and when its agent last polled."""

    mind = models.OneToOneField(
        "minds.Mind", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    last_number = models.BigIntegerField(default=0)
    agent_seen_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.mind_id}: {self.last_number} messages"


class ChatMessage(models.Model):
    """One message: `number` is its id in the API, 1, 2, 3 … per mind."""

    # Served by the (mind, number) constraint's index.
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    number = models.BigIntegerField()
    role = models.CharField(max_length=8, choices=Role.choices)
    content = models.TextField()
    # The number of a message of the same mind this one answers (checked when written).
    reply_to = models.BigIntegerField(null=True, blank=True)
    # The person who wrote it; None for the agent's.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    # When the other side read it: the agent by polling, a person by opening the chat.
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["mind", "number"]
        constraints = [
            models.UniqueConstraint(fields=["mind", "number"], name="chat_message_number_unique")
        ]
        indexes = [
            # Unread counts and polls: one side's messages of a mind, by number.
            models.Index(fields=["mind", "role", "number"], name="chat_message_role_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.number} {self.role} ({self.mind_id})"


class ChatEvent(models.Model):
    """The chat's audit trail: who sent, read or remembered which message, when."""

    class Action(models.TextChoices):
        SEND = "send"  # a person wrote
        REPLY = "reply"  # the agent wrote
        READ = "read"  # the other side read messages, up to `number`
        REMEMBER = "remember"  # a person made a message a memory

    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    action = models.CharField(max_length=10, choices=Action.choices)
    actor = models.CharField(max_length=254)
    actor_type = models.CharField(max_length=8)
    # The message (for a read: the last one read), and how many messages it covers.
    number = models.BigIntegerField()
    count = models.IntegerField(default=1)
    # For a remember: the memory it made or updated.
    memory_id = models.CharField(max_length=32, blank=True, default="")
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["mind", "-at"], name="chat_event_mind_at_idx")]

    def __str__(self) -> str:
        return f"{self.action} #{self.number} by {self.actor}"
