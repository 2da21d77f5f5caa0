"""memory_row_to_dict (large answers, from plain rows) answers exactly like memory_to_dict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db.models import TextField
from django.db.models.functions import Cast

from memories.models import Memory
from memories.serialization import MEMORY_ROW, memory_row_to_dict, memory_to_dict
from memories.services import memory_verify
from tests.api.memory_helpers import PERSON, remember


def test_row_and_instance_give_the_same_dict(mind):
    now = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    remember(mind, "fact_plain", "no tags, no expiry", now=now.replace(microsecond=0))
    remember(
        mind,
        "fact_full",
        "tags, expiry, verified",
        tags=["Zeta", "alpha"],
        priority="critical",
        confidence=0.25,
        expires_at=now + timedelta(days=3),
        now=now,
    )
    memory_verify(memory=Memory.objects.get(key="fact_full"), actor=PERSON, now=now)
    rows = (
        Memory.objects.filter(mind=mind)
        .annotate(tags_json=Cast("tags", TextField()))
        .order_by("key")
        .values_list(*MEMORY_ROW)
    )
    instances = Memory.objects.filter(mind=mind).order_by("key")
    expected = [memory_to_dict(m) for m in instances]
    answered = [memory_row_to_dict(row) for row in rows]
    assert answered == expected
    assert [list(d) for d in answered] == [list(d) for d in expected]  # key order too
    assert expected[0]["verified"] is True and expected[0]["tags"] == ["zeta", "alpha"]
