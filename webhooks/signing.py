"""Secrets and signatures, the Standard Webhooks way (https://www.standardwebhooks.com).

A delivery carries `webhook-id` (the event's id, the same on every retry),
`webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature`:
`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one for each secret in force,
separated by spaces. A `whsec_` secret's key is the base64 after the prefix, as the spec's
libraries read it; any other secret's key is its UTF-8 bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable
from datetime import datetime

from core.errors import Invalid
from core.sealed import seal, unseal

PREFIX = "whsec_"
MIN_SECRET_LENGTH = 8
MAX_SECRET_LENGTH = 200
# Random bytes in a generated secret.
GENERATED_BYTES = 24


def secret_generate() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(GENERATED_BYTES)).decode()


def secret_check(value: object) -> str:
    """A secret given in a body, or Invalid naming `secret`."""
    if not isinstance(value, str):
        raise Invalid.one("secret", "Give the secret as a string.")
    if not MIN_SECRET_LENGTH <= len(value) <= MAX_SECRET_LENGTH:
        raise Invalid.one("secret", f"Use {MIN_SECRET_LENGTH} to {MAX_SECRET_LENGTH} characters.")
    if not value.isprintable() or value != value.strip():
        raise Invalid.one("secret", "Use printable characters, no spaces at either end.")
    if value.startswith(PREFIX):
        try:
            key = _whsec_key(value)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) < MIN_SECRET_LENGTH:
            raise Invalid.one(
                "secret",
                f"A {PREFIX} secret is base64 of at least {MIN_SECRET_LENGTH} bytes after "
                "the prefix; leave the secret out to have one generated.",
            )
    return value


def _whsec_key(secret: str) -> bytes:
    # As the spec's libraries read it: padding may be left out.
    return base64.b64decode(secret.removeprefix(PREFIX) + "==", validate=False)


# Replaced secrets that still sign, at most (older ones stop at once when one more comes).
MAX_PREVIOUS = 3


def previous_unsealed(sealed: str, *, now: datetime) -> list[tuple[str, datetime]]:
    """The replaced secrets that still sign at `now`, with when each stops, oldest first."""
    if not sealed:
        return []
    kept = [(secret, datetime.fromisoformat(until)) for secret, until in json.loads(unseal(sealed))]
    return [(secret, until) for secret, until in kept if until > now]


def previous_sealed(secrets: list[tuple[str, datetime]]) -> str:
    """What previous_unsealed reads: the newest MAX_PREVIOUS of them, sealed."""
    kept = [(secret, until.isoformat()) for secret, until in secrets[-MAX_PREVIOUS:]]
    return seal(json.dumps(kept)) if kept else ""


def secret_key(secret: str) -> bytes:
    return _whsec_key(secret) if secret.startswith(PREFIX) else secret.encode()


def signature(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(
    secrets_in_force: Iterable[str], *, msg_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The three Standard Webhooks headers of one attempt."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            signature(s, msg_id=msg_id, timestamp=timestamp, body=body) for s in secrets_in_force
        ),
    }
