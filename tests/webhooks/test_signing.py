"""Secrets and signatures, checked with the Standard Webhooks library a receiver would use."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook as Verifier

from core.errors import Invalid
from webhooks.signing import headers, secret_check, secret_generate


def test_a_generated_secret_is_whsec_and_verifies_with_the_library():
    secret = secret_generate()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 24
    body = b'{"type":"ping"}'
    timestamp = int(datetime.now(UTC).timestamp())
    signed = headers([secret], msg_id="msg_1", timestamp=timestamp, body=body)
    assert Verifier(secret).verify(body, signed) == {"type": "ping"}


def test_a_plain_secret_signs_with_its_bytes():
    body = b"{}"
    timestamp = int(datetime.now(UTC).timestamp())
    signed = headers(["my-hmac-secret"], msg_id="msg_2", timestamp=timestamp, body=body)
    Verifier(b"my-hmac-secret").verify(body, signed)


def test_two_secrets_give_two_signatures_each_verifies():
    old, new = secret_generate(), secret_generate()
    body = b"{}"
    timestamp = int(datetime.now(UTC).timestamp())
    signed = headers([new, old], msg_id="msg_3", timestamp=timestamp, body=body)
    assert len(signed["webhook-signature"].split(" ")) == 2
    Verifier(old).verify(body, signed)
    Verifier(new).verify(body, signed)


@pytest.mark.parametrize(
    "secret", ["short", 12345678, " spaces-around ", "whsec_!!!!", "whsec_YWJj", "x" * 201]
)
def test_bad_secrets_name_the_field(secret):
    with pytest.raises(Invalid) as refused:
        secret_check(secret)
    assert list(refused.value.fields) == ["secret"]
