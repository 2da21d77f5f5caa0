"""A mind is one memory space owned by a user; agents reach it with its Mind Key."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any, cast

from django.conf import settings
from django.db import connections, models

from synapse_site.ids import random_id

MIND_KEY_PREFIX = "mk_"
# What is kept in clear for display and lookup: "mk_" plus the first 8 random characters.
KEY_PREFIX_LENGTH = len(MIND_KEY_PREFIX) + 8


# Mind's usage counters (see Mind.stored_memories).
USAGE_FIELDS = ("stored_memories", "stored_bytes", "history_bytes")


def new_mind_id() -> str:
    return random_id("m_")


def generate_mind_key() -> str:
    """`mk_` + 43 URL-safe characters (32 random bytes)."""
    return MIND_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_mind_key(raw_key: str) -> str:
    # Keys carry 256 random bits, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(raw_key.encode()).hexdigest()


class MindQuerySet(models.QuerySet["Mind"]):
    def for_key(self, raw_key: str) -> Mind | None:
        """The mind whose active key is `raw_key`, compared in constant time, or None (also
        when its owner may not sign in)."""
        if not raw_key.startswith(MIND_KEY_PREFIX) or len(raw_key) < KEY_PREFIX_LENGTH + 24:
            return None
        digest = hash_mind_key(raw_key)
        # raw(): every agent request runs this, and compiling the ORM query costs several
        # times what the database takes to answer it.
        owner_model = cast("type[models.Model]", self.model._meta.get_field("owner").related_model)
        users = owner_model._meta.db_table
        minds = self.raw(
            f"SELECT m.* FROM {self.model._meta.db_table} m JOIN {users} u ON u.id = m.owner_id "
            "WHERE m.key_prefix = %s AND u.is_active",
            [raw_key[:KEY_PREFIX_LENGTH]],
        )
        for mind in minds:
            if mind.key_hash and hmac.compare_digest(mind.key_hash, digest):
                return mind
        return None

    def owned_by(self, user: Any) -> MindQuerySet:
        return self.filter(owner=user)

    def lock(self, mind_id: str) -> None:
        """Hold the mind's row lock until the transaction ends, so its writers take turns.
        SQLite has no row locks and needs none: a write transaction holds the database."""
        if connections[self.db].features.has_select_for_update:
            list(self.select_for_update(no_key=True).filter(pk=mind_id).values("pk"))


class Mind(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_mind_id, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="minds"
    )
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=1000, blank=True)
    key_prefix = models.CharField(max_length=KEY_PREFIX_LENGTH, blank=True, db_index=True)
    key_hash = models.CharField(max_length=64, blank=True, editable=False)
    key_created_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # What the mind holds: its memories and the UTF-8 bytes of their content. Kept by the
    # memory write path in each write's own transaction, so a quota check reads two numbers
    # instead of counting the mind (memories/services.py).
    stored_memories = models.BigIntegerField(default=0, editable=False)
    stored_bytes = models.BigIntegerField(default=0, editable=False)
    # The bytes of earlier values its audit trail holds (the sum of its events' `size`), kept
    # the same way; past SYNAPSE_MAX_HISTORY_BYTES the oldest are folded (memories/audit.py).
    history_bytes = models.BigIntegerField(default=0, editable=False)

    objects = MindQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The counters change only by the write path's increments: saving a Mind read earlier
        # (a rename, the admin's form) must not put back the numbers it read.
        if not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                f.name
                for f in self._meta.concrete_fields
                if not f.primary_key and f.name not in USAGE_FIELDS
            ]
        super().save(*args, **kwargs)

    @property
    def has_active_key(self) -> bool:
        return bool(self.key_hash)

    def set_key(self, raw_key: str) -> None:
        self.key_prefix = raw_key[:KEY_PREFIX_LENGTH]
        self.key_hash = hash_mind_key(raw_key)


def new_share_id() -> str:
    return random_id("sh_")


class Share(models.Model):
    """A person invited by email to a mind, at one level (`acl`).

    `user` stays empty while the invitation is pending: until an account with `email` is
    created or signs in (minds/services.py share_claim), the share grants nothing.
    """

    class Acl(models.TextChoices):
        READ = "read"
        WRITE = "write"
        ADMIN = "admin"

    id = models.CharField(primary_key=True, max_length=32, default=new_share_id, editable=False)
    mind = models.ForeignKey(Mind, on_delete=models.CASCADE, related_name="shares")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="shares",
    )
    # Normalised as accounts are (lower case), so an invitation finds the account it names.
    email = models.EmailField()
    acl = models.CharField(max_length=5, choices=Acl.choices, default=Acl.READ)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["mind", "email"], name="share_one_per_mind_email"),
            models.UniqueConstraint(fields=["mind", "user"], name="share_one_per_mind_user"),
        ]
        indexes = [models.Index(fields=["email"], name="share_email")]

    def __str__(self) -> str:
        return f"{self.email} ({self.acl}) on {self.mind_id}"

    @property
    def status(self) -> str:
        return "active" if self.user_id else "pending"
