"""Secrets the server must read back (a webhook's signing secret), sealed at rest.

A sealed value is Fernet (AES-128-CBC with an HMAC-SHA256 tag) under a key derived from
SECRET_KEY, so a copy of the database alone does not hold the secrets. A sealed value stays
readable after SECRET_KEY changes while the old key is listed in SECRET_KEY_FALLBACKS.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.utils.crypto import salted_hmac

_SALT = "synapse.core.sealed"


class Unsealable(Exception):
    """A sealed value no key in SECRET_KEY or SECRET_KEY_FALLBACKS opens."""


def _key(secret: str) -> Fernet:
    digest = salted_hmac(_SALT, "", secret=secret, algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _keys() -> MultiFernet:
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_key(secret) for secret in secrets])


def seal(text: str) -> str:
    """`text` sealed under the current SECRET_KEY."""
    return _keys().encrypt(text.encode()).decode()


def unseal(sealed: str) -> str:
    """The text `seal` sealed; Unsealable when no current or fallback key opens it."""
    try:
        return _keys().decrypt(sealed.encode()).decode()
    except InvalidToken as error:
        raise Unsealable(
            "This secret was sealed under a SECRET_KEY that is no longer set "
            "(keep the old one in SECRET_KEY_FALLBACKS, or set a new secret)."
        ) from error
