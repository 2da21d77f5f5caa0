"""A mind's health with its hygiene: the counts and attention items of selectors.mind_health,
plus what the hygiene checks find (contradictions within the default window, near-repeat
groups) and the proposals waiting for a person. The API's /memory/health and the
dashboard's overview read it.

The two checks read every live memory of a mind, so they run in the background worker's
process (`hygiene_check_due`, every minute from a thread of its own, for minds written since
their last check or checked over RECHECK_AFTER ago) and their counts are stored
(HygieneCounts); the reads never pay for them. The Hygiene page runs them itself, to act
on what they find."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, Max, OuterRef, Q, Subquery
from django.utils import timezone

from memories.fields import iso
from memories.hygiene.contradictions import DEFAULT_WITHIN, contradiction_pairs
from memories.hygiene.duplicates import duplicate_groups
from memories.hygiene.flags import flags_found
from memories.models import HygieneCounts, MemoryEvent, SupersedeProposal
from memories.selectors import ATTENTION_IDS, mind_health
from minds.models import Mind

# A mind nobody writes is checked again this often: the contradictions' window moves, and
# vectors arriving after a write change which memories read as near-repeats.
RECHECK_AFTER = timedelta(hours=1)
# Minds checked by one round, and how long a round may start checks for (the rest wait for
# the next round, least recently checked first).
MINDS_PER_RUN = 50
ROUND_SECONDS = 20.0

WHY = {
    "contradictions": f"pairs of memories that state different values about one thing, one "
    f"of them written within {DEFAULT_WITHIN.days} days: keep one, or both",
    "duplicates": "groups of memories that nearly repeat one another: supersede into one",
    "proposals": "verified memories an agent proposes to replace: accept or reject",
}


def hygiene_check(*, mind: Mind, now: datetime | None = None) -> HygieneCounts:
    """Run both checks on the mind now and store what they find: the counts, and the
    flags of each memory (flags.memory_flags reads them)."""
    now = now or timezone.now()
    seen = MemoryEvent.objects.filter(mind=mind).aggregate(last=Max("id"))["last"] or 0
    contradictions = contradiction_pairs(mind=mind, within=DEFAULT_WITHIN, now=now)
    groups = duplicate_groups(mind=mind, now=now)
    counts, _ = HygieneCounts.objects.update_or_create(
        mind=mind,
        defaults={
            "contradictions": len(contradictions),
            "contradiction_ids": [c.a.pk for c in contradictions][:ATTENTION_IDS],
            "duplicates": len(groups),
            "duplicate_ids": [g.memories[0].pk for g in groups][:ATTENTION_IDS],
            "flags": flags_found(contradictions, groups),
            "through_event": seen,
            "checked_at": now,
        },
    )
    return counts


def hygiene_check_due(*, now: datetime | None = None) -> int:
    """Check the minds written since their last check (or never checked, or checked over
    RECHECK_AFTER ago), at most MINDS_PER_RUN; the number checked."""
    now = now or timezone.now()
    last_event = MemoryEvent.objects.filter(mind=OuterRef("pk")).order_by("-id").values("id")[:1]
    checked = HygieneCounts.objects.filter(mind=OuterRef("pk"))
    due = (
        Mind.objects.annotate(
            last_event=Subquery(last_event),
            through=Subquery(checked.values("through_event")[:1]),
            checked_at=Subquery(checked.values("checked_at")[:1]),
        )
        .filter(last_event__isnull=False)
        .filter(
            Q(through__isnull=True)
            | Q(last_event__gt=F("through"))
            | Q(checked_at__lt=now - RECHECK_AFTER)
        )
        .order_by(F("checked_at").asc(nulls_first=True), "pk")[:MINDS_PER_RUN]
    )
    started = time.monotonic()
    done = 0
    for mind in due:
        if time.monotonic() - started > ROUND_SECONDS:
            break
        hygiene_check(mind=mind, now=now)
        done += 1
    return done


def hygiene_counts(*, mind: Mind) -> dict[str, Any]:
    """What the checks last found ({kind: (count, ids)}, None before the first check) and
    the proposals waiting now; `checked_at` when the checks ran."""
    stored = HygieneCounts.objects.filter(mind=mind).defer("flags").first()
    proposals = SupersedeProposal.objects.filter(mind=mind).order_by("-created_at", "-id")
    return {
        "contradictions": None
        if stored is None
        else (stored.contradictions, stored.contradiction_ids),
        "duplicates": None if stored is None else (stored.duplicates, stored.duplicate_ids),
        "proposals": (
            proposals.count(),
            list(proposals.values_list("memory_id", flat=True)[:ATTENTION_IDS]),
        ),
        "checked_at": None if stored is None else stored.checked_at,
    }


def mind_health_with_hygiene(*, mind: Mind, now: datetime | None = None) -> dict[str, Any]:
    """selectors.mind_health, with the hygiene counts beside the others (null until the
    worker first checks the mind), `hygiene_checked_at`, and an attention item for each
    that has something in it (the ids: one memory of each pair or group)."""
    now = now or timezone.now()
    health = mind_health(mind=mind, now=now)
    found = hygiene_counts(mind=mind)
    health["hygiene_checked_at"] = iso(found.pop("checked_at"))
    for kind, counted in found.items():
        if counted is None:
            health[kind] = None
            continue
        count, ids = counted
        health[kind] = count
        if count:
            health["attention"].append(
                {"kind": kind, "count": count, "detail": f"{count} {WHY[kind]}.", "ids": ids}
            )
    health["status"] = "attention" if health["attention"] else "ok"
    return health
