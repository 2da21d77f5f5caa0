"""Writes for minds and their keys."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from core.errors import QuotaExceeded
from minds.models import Mind, generate_mind_key


@transaction.atomic
def mind_create(
    *, owner: Any, name: str, description: str = "", over_limit: bool = False
) -> tuple[Mind, str]:
    """Create a mind with a fresh key. Returns the mind and the raw key (shown once).

    An account owns at most SYNAPSE_MAX_MINDS_PER_USER minds (0: no limit): one more is
    QuotaExceeded. `over_limit`: an operator (the admin, the createmind command) may go
    past it for an account.
    """
    limit = settings.SYNAPSE_MAX_MINDS_PER_USER
    if limit > 0 and not over_limit:
        # The owner's row lock makes two creates at once count in turn (SQLite's write
        # transaction already does).
        if connection.features.has_select_for_update:
            users = get_user_model().objects.select_for_update()
            list(users.filter(pk=owner.pk).values("pk"))
        owned = Mind.objects.owned_by(owner).count()
        if owned >= limit:
            raise QuotaExceeded(
                f"This account owns {owned:,} minds, the most one account may own "
                f"({limit:,}, SYNAPSE_MAX_MINDS_PER_USER). Delete a mind it no longer needs "
                "first."
            )
    raw_key = generate_mind_key()
    mind = Mind(owner=owner, name=name, description=description, key_created_at=timezone.now())
    mind.set_key(raw_key)
    mind.save()
    return mind, raw_key


@transaction.atomic
def mind_rotate_key(*, mind: Mind) -> str:
    """Replace the mind's key; the old one stops working with this commit."""
    raw_key = generate_mind_key()
    mind.set_key(raw_key)
    mind.key_created_at = timezone.now()
    mind.save(update_fields=["key_prefix", "key_hash", "key_created_at", "updated_at"])
    return raw_key


@transaction.atomic
def mind_revoke_key(*, mind: Mind) -> None:
    """Leave the mind without any working key until it is rotated again."""
    mind.key_prefix = ""
    mind.key_hash = ""
    mind.key_created_at = None
    mind.save(update_fields=["key_prefix", "key_hash", "key_created_at", "updated_at"])


@transaction.atomic
def mind_update(*, mind: Mind, name: str | None = None, description: str | None = None) -> Mind:
    if name is not None:
        mind.name = name
    if description is not None:
        mind.description = description
    mind.save(update_fields=["name", "description", "updated_at"])
    return mind


@transaction.atomic
def mind_delete(*, mind: Mind) -> None:
    """Delete the mind and, through the cascade, every memory it holds."""
    mind.delete()
