"""Writes for minds, their keys and their shares."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from accounts.models import email_normalized
from core.errors import Conflict, Invalid, NotFound, QuotaExceeded
from minds.models import Mind, Share, generate_mind_key


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


ACL_HINT = "One of: read, write, admin."


def share_email(value: object) -> str:
    """The invited address as accounts keep theirs (lower case), or Invalid naming
    `user_email`."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid.one("user_email", "Required: the email address of the person to invite.")
    email = email_normalized(value.strip())
    try:
        validate_email(email)
    except DjangoValidationError:
        raise Invalid.one("user_email", "Not an email address.") from None
    return email


def share_acl(value: object) -> str:
    """`value` when it is a share level, else Invalid naming `acl`."""
    if not isinstance(value, str) or value not in Share.Acl.values:
        raise Invalid.one("acl", ACL_HINT)
    return value


def share_create(*, mind: Mind, by: Any, user_email: object, acl: object) -> Share:
    """Invite `user_email` to `mind` at `acl`; `by` is the person inviting.

    The share is always created pending, and no account is looked up: the answer and the
    work are the same whether or not the address has an account, so sharing never tells.
    It becomes active when that account is created or signs in (share_claim).
    Invalid for a bad address or level and for the owner's or the inviter's own address;
    Conflict when the mind is already shared with that address.
    """
    email = share_email(user_email)
    level = share_acl(acl)
    if email in (mind.owner.email.lower(), str(by.email).lower()):
        raise Invalid.one(
            "user_email", "That is you or the mind's owner: they already reach this mind."
        )
    try:
        with transaction.atomic():
            return Share.objects.create(mind=mind, email=email, acl=level)
    except IntegrityError:
        raise Conflict(
            "This mind is already shared with that address: change its level "
            "(PUT /minds/{mind_id}/shares/{share_id}) or revoke it first."
        ) from None


def share_get(*, mind: Mind, share_id: str) -> Share:
    """The share `share_id` of `mind`, else NotFound."""
    share = Share.objects.filter(mind=mind, pk=share_id).first()
    if share is None:
        raise NotFound("No share with this id on this mind.")
    return share


@transaction.atomic
def share_update(*, share: Share, acl: object) -> Share:
    """Change the share's level; it holds from the next request on."""
    share.acl = share_acl(acl)
    share.save(update_fields=["acl"])
    return share


@transaction.atomic
def share_delete(*, share: Share) -> None:
    """Revoke the share: the person loses the mind from the next request on."""
    share.delete()


def share_claim(*, user: Any) -> int:
    """Make the pending shares addressed to `user`'s email theirs (active). Called when an
    account is created and when a person signs in. Returns how many it activated."""
    claimed = 0
    pending = Share.objects.filter(user__isnull=True, email=str(user.email).lower())
    for share in pending.exclude(mind__owner=user):
        share.user = user
        try:
            with transaction.atomic():
                share.save(update_fields=["user"])
        except IntegrityError:
            continue  # already shared with them under their earlier address: that one holds
        claimed += 1
    return claimed
