"""`Idempotency-Key` for writes that must not apply twice (POST /memory, POST /memory/sync).

What a client sees: README.md#memories; design notes: docs/internals.md#idempotency-key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.http import HttpResponse
from django.utils import timezone
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api.models import IdempotencyRecord
from core.errors import Invalid
from minds.access import MindAgent
from minds.models import Mind
from synapse_site.errors import Conflict

HEADER = "Idempotency-Key"
TTL = timedelta(hours=24)
MAX_KEY_LENGTH = 255

Handler = Callable[[], tuple[int, dict[str, Any]]]


class IdempotencyKeyReused(Conflict):
    default_code = "idempotency_key_reused"
    default_detail = (
        "This Idempotency-Key was already used with a different request body in the last "
        "24 hours. Use a new key for a new request."
    )


def idempotency_key(request: Request) -> str | None:
    """The request's Idempotency-Key, or None; a malformed one is a 400."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    key = raw.strip()
    if not key or len(key) > MAX_KEY_LENGTH:
        raise Invalid.one(
            HEADER, f"Must be 1 to {MAX_KEY_LENGTH} characters (a UUID is a good choice)."
        )
    return key


def credential_scope(request: Request, mind: Mind) -> str:
    """Keys are per credential: the mind for a Mind Key, user and mind for a person."""
    if isinstance(request.user, MindAgent):
        return f"mind:{mind.pk}"
    return f"user:{request.user.pk}:{mind.pk}"


def request_fingerprint(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def render(status: int, body: dict[str, Any]) -> HttpResponse:
    return HttpResponse(JSONRenderer().render(body), status=status, content_type="application/json")


def _replay(record: IdempotencyRecord, fingerprint: str) -> HttpResponse:
    if record.request_hash != fingerprint:
        raise IdempotencyKeyReused()
    response = HttpResponse(
        bytes(record.response_body), status=record.status_code, content_type="application/json"
    )
    response["Idempotent-Replayed"] = "true"
    return response


def _find(*, credential: str, endpoint: str, key: str, now: datetime) -> IdempotencyRecord | None:
    return IdempotencyRecord.objects.filter(
        credential=credential, endpoint=endpoint, key=key, created_at__gt=now - TTL
    ).first()


def idempotency_purge(*, now: datetime | None = None) -> int:
    """Delete records older than 24 hours; returns how many."""
    cutoff = (now or timezone.now()) - TTL
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lte=cutoff).delete()
    return deleted


def idempotency_forget_memory(mind_id: str, memory_id: str) -> None:
    """Delete the stored answers of this mind that hold the memory (it is being purged): a
    retry with such a key runs again instead of replaying them."""
    needle = memory_id.encode()
    records = IdempotencyRecord.objects.filter(credential__endswith=f":{mind_id}")
    holding = [
        pk for pk, body in records.values_list("pk", "response_body") if needle in bytes(body)
    ]
    if holding:
        IdempotencyRecord.objects.filter(pk__in=holding).delete()


def idempotent(
    request: Request, *, mind: Mind, endpoint: str, handler: Handler, now: datetime | None = None
) -> HttpResponse | Response:
    """Run `handler` (which writes and returns (status, body)) at most once per key.

    Without the header it simply runs and answers.
    """
    key = idempotency_key(request)
    if key is None:
        status, body = handler()
        return Response(body, status=status)

    credential = credential_scope(request, mind)
    fingerprint = request_fingerprint(request.data)
    now = now or timezone.now()
    try:
        with transaction.atomic():
            record = _find(credential=credential, endpoint=endpoint, key=key, now=now)
            if record is not None:
                return _replay(record, fingerprint)
            status, body = handler()
            response = render(status, body)
            if 200 <= status < 300:
                idempotency_purge(now=now)  # also frees this key if its old record expired
                with transaction.atomic():
                    IdempotencyRecord.objects.create(
                        credential=credential,
                        endpoint=endpoint,
                        key=key,
                        request_hash=fingerprint,
                        status_code=status,
                        response_body=response.content,
                        created_at=now,
                    )
            return response
    except IntegrityError:
        # A concurrent request with this key committed first; our write was rolled back.
        record = _find(credential=credential, endpoint=endpoint, key=key, now=now)
        if record is None:
            raise
        return _replay(record, fingerprint)
