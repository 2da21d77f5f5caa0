"""State the API alone keeps: the first answers to requests sent with an Idempotency-Key."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class IdempotencyRecord(models.Model):
    """The first answer to a request sent with an Idempotency-Key, replayed for 24 hours."""

    credential = models.CharField(max_length=64)
    endpoint = models.CharField(max_length=64)
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response_body = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        # The table it had when the record lived in memories/: moved by state alone.
        db_table = "memories_idempotencyrecord"
        constraints = [
            models.UniqueConstraint(
                fields=["credential", "endpoint", "key"], name="idempotency_unique_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.key}"
