"""Writes for minds and their keys."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from minds.models import Mind, generate_mind_key


@transaction.atomic
def mind_create(*, owner: Any, name: str, description: str = "") -> tuple[Mind, str]:
    """Create a mind with a fresh key. Returns the mind and the raw key (shown once)."""
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
