"""A mind's health with its hygiene: the counts and attention items of selectors.mind_health,
plus what the hygiene checks find (contradictions within the default window, duplicate
groups, proposals waiting for a person). The API's /memory/health and the dashboard's
overview read it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from memories.hygiene.contradictions import DEFAULT_WITHIN, contradiction_pairs
from memories.hygiene.duplicates import duplicate_groups
from memories.models import SupersedeProposal
from memories.selectors import ATTENTION_IDS, mind_health
from minds.models import Mind


def hygiene_counts(*, mind: Mind, now: datetime | None = None) -> dict[str, Any]:
    """What the hygiene checks find now, each with up to ATTENTION_IDS memory ids."""
    now = now or timezone.now()
    contradictions = contradiction_pairs(mind=mind, within=DEFAULT_WITHIN, now=now)
    groups = duplicate_groups(mind=mind, now=now)
    proposals = SupersedeProposal.objects.filter(mind=mind).order_by("-created_at", "-id")
    return {
        "contradictions": (
            len(contradictions),
            [c.a.pk for c in contradictions][:ATTENTION_IDS],
        ),
        "duplicates": (len(groups), [g.memories[0].pk for g in groups][:ATTENTION_IDS]),
        "proposals": (
            proposals.count(),
            list(proposals.values_list("memory_id", flat=True)[:ATTENTION_IDS]),
        ),
    }


WHY = {
    "contradictions": f"pairs of memories that state different values about one thing, one "
    f"of them written within {DEFAULT_WITHIN.days} days: keep one, or both",
    "duplicates": "groups of memories that nearly repeat one another: supersede into one",
    "proposals": "verified memories an agent proposes to replace: accept or reject",
}


def mind_health_with_hygiene(*, mind: Mind, now: datetime | None = None) -> dict[str, Any]:
    """selectors.mind_health, with the hygiene counts beside the others and an attention item
    for each that has something in it (the ids: one memory of each pair or group)."""
    now = now or timezone.now()
    health = mind_health(mind=mind, now=now)
    for kind, (count, ids) in hygiene_counts(mind=mind, now=now).items():
        health[kind] = count
        if count:
            health["attention"].append(
                {"kind": kind, "count": count, "detail": f"{count} {WHY[kind]}.", "ids": ids}
            )
    health["status"] = "attention" if health["attention"] else "ok"
    return health
