"""Forms that act once.

A page that shows a secret once (a new mind and its Mind Key, a new Mind Key, a webhook's
secret) is the answer to the POST that made it, so reloading it sends the form again. Each
such form carries a token made for the person it is shown to; the first send records the
token, and a later send finds the record and acts no more. Nothing secret is recorded: the
record names only what the first send made or changed.

The token is signed with the person's id and the time it was made, so a token of another
account, a tampered one or one older than FORM_TOKEN_MAX_AGE is refused; a record goes once
its token could no longer be sent.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import SentForm
from core.errors import NON_FIELD, Invalid

FORM_TOKEN_MAX_AGE = timedelta(days=1)
_SIGNER_SALT = "accounts.once.form-token"

EXPIRED = "This form was opened more than a day ago, so it was not sent: send it again."
FOREIGN = "This form was not opened from this page by you, so it was not sent: send it again."


def form_token_new(*, user: Any) -> str:
    """A fresh token for one form shown to `user`."""
    nonce = secrets.token_urlsafe(16)
    return signing.TimestampSigner(salt=_SIGNER_SALT).sign(f"{user.pk}:{nonce}")


def _nonce(*, user: Any, token: str) -> str:
    """The token's random part when it is `user`'s and young enough, else Invalid."""
    signer = signing.TimestampSigner(salt=_SIGNER_SALT)
    try:
        value = signer.unsign(token, max_age=FORM_TOKEN_MAX_AGE)
    except signing.SignatureExpired:
        raise Invalid.one(NON_FIELD, EXPIRED) from None
    except signing.BadSignature:
        raise Invalid.one(NON_FIELD, FOREIGN) from None
    owner, _, nonce = value.partition(":")
    if owner != str(user.pk) or not nonce:
        raise Invalid.one(NON_FIELD, FOREIGN)
    return nonce


@dataclass
class FormSend:
    """One send of a form that acts once. `first`: no send of it was recorded before;
    otherwise `target` names what the first send acted on ("" when it named nothing)."""

    record: SentForm
    first: bool

    @property
    def target(self) -> str:
        return self.record.target

    def acted_on(self, target: str) -> None:
        """Record what this (first) send made or changed, for a later send to name."""
        self.record.target = target
        self.record.save(update_fields=["target"])


@contextmanager
def form_send(*, user: Any, token: str) -> Iterator[FormSend]:
    """Send a form that acts once: the block acts only when `first` is true.

    The record and the block's writes share one transaction: when the block raises, neither
    stays, so the same form may be sent again. Two sends at once are taken in turn (the
    unique token), the second seeing the first's record. Raises Invalid (not naming a field)
    for a token that is missing, not `user`'s, tampered with or too old.
    """
    nonce = _nonce(user=user, token=token)
    with transaction.atomic():
        old = timezone.now() - FORM_TOKEN_MAX_AGE
        SentForm.objects.filter(user=user, sent_at__lt=old).delete()
        yield _record(user=user, nonce=nonce)


def _record(*, user: Any, nonce: str) -> FormSend:
    try:
        with transaction.atomic():
            return FormSend(SentForm.objects.create(user=user, token=nonce), first=True)
    except IntegrityError:  # sent before, or just now by a request that has committed since
        return FormSend(SentForm.objects.get(user=user, token=nonce), first=False)
