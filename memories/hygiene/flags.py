"""Flags on single memories: "contradicts" or "nearly repeats" another memory of the mind,
for the review queue, the memory page and "verify all matching".

The flags are the pairs the hygiene checks found (contradiction_pairs, duplicate_groups),
stored by the worker's check with the counts (health.hygiene_check), so a page never walks
the whole mind. A read keeps only what still holds: both memories current and live, their
contents as the check saw them, the pair not kept by a person. A memory written since the
check is flagged once the worker checks the mind again."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from memories.hygiene import pairs
from memories.hygiene.contradictions import Contradiction
from memories.hygiene.duplicates import DuplicateGroup
from memories.models import HygieneCounts, HygieneDismissal, Memory
from minds.models import Mind

CONTRADICTION = HygieneDismissal.Kind.CONTRADICTION
DUPLICATE = HygieneDismissal.Kind.DUPLICATE
# What a flag says, in words (never a colour alone).
LABELS: dict[str, str] = {CONTRADICTION: "Contradicts", DUPLICATE: "Near-repeat of"}
# Flags kept per memory: a memory in a large group of near-repeats names a few of them.
MOST_PER_MEMORY = 5


@dataclass(frozen=True)
class Flag:
    kind: str  # CONTRADICTION or DUPLICATE
    other: Memory  # read with id, category, key and content only
    reason: str  # why, for a contradiction ("Different place: …"); empty for a near-repeat

    @property
    def label(self) -> str:
        return LABELS[self.kind]


def digest(content: str) -> str:
    """A short fingerprint of a memory's content: a flag holds while both contents match."""
    return hashlib.blake2b(content.encode(), digest_size=8).hexdigest()


def flags_found(
    contradictions: Sequence[Contradiction], groups: Sequence[DuplicateGroup]
) -> dict[str, Any]:
    """The checks' findings as HygieneCounts.flags stores them: each flagged memory with
    its content's digest and its flags (contradictions first, at most MOST_PER_MEMORY)."""
    found: dict[str, dict[str, Any]] = {}

    def add(memory: Memory, kind: str, other: Memory, reason: str) -> None:
        entry = found.setdefault(memory.pk, {"content": digest(memory.content), "flags": []})
        if len(entry["flags"]) < MOST_PER_MEMORY:
            entry["flags"].append([kind, other.pk, reason])

    for pair in contradictions:
        add(pair.a, CONTRADICTION, pair.b, pair.reason)
        add(pair.b, CONTRADICTION, pair.a, pair.reason)
    for group in groups:
        # The group's first few name enough (a group can hold thousands).
        named = group.memories[: MOST_PER_MEMORY + 1]
        for memory in group.memories:
            for other in named:
                if other.pk != memory.pk:
                    add(memory, DUPLICATE, other, "")
    return found


def memory_flags(
    *, mind: Mind, memory_ids: Collection[str], now: datetime | None = None
) -> dict[str, list[Flag]]:
    """{memory id: its flags} for those of `memory_ids` (memories of `mind`) the last
    hygiene check flagged and whose flags still hold. At most three queries, however many
    ids: the stored flags, the memories they name, the pairs a person kept."""
    return _flags(mind, memory_ids, now)[0]


def flagged_memories(
    *, mind: Mind, memory_ids: Collection[str], now: datetime | None = None
) -> list[tuple[Memory, list[Flag]]]:
    """memory_flags, as (flagged memory, its flags) in the order of `memory_ids`."""
    flagged, current = _flags(mind, memory_ids, now)
    return [(current[i], flagged[i]) for i in dict.fromkeys(memory_ids) if i in flagged]


def _flags(
    mind: Mind, memory_ids: Collection[str], now: datetime | None
) -> tuple[dict[str, list[Flag]], dict[str, Memory]]:
    stored = HygieneCounts.objects.filter(mind=mind).values_list("flags", flat=True).first()
    if not stored:
        return {}, {}
    wanted = [i for i in dict.fromkeys(memory_ids) if i in stored]
    if not wanted:
        return {}, {}
    named = set(wanted) | {flag[1] for i in wanted for flag in stored[i]["flags"]}
    now = now or timezone.now()
    current = {
        m.pk: m
        for m in Memory.objects.filter(mind=mind, pk__in=named, superseded_by__isnull=True)
        .live(now)
        .only("id", "mind", "category", "key", "content")
    }
    unchanged = {
        pk
        for pk, m in current.items()
        if pk in stored and stored[pk]["content"] == digest(m.content)
    }
    kept = {
        (kind, pairs.pair(a, b))
        for kind, a, b in HygieneDismissal.objects.filter(
            mind=mind, first_id__in=named, second_id__in=named
        ).values_list("kind", "first_id", "second_id")
    }
    flagged: dict[str, list[Flag]] = {}
    for memory_id in wanted:
        if memory_id not in unchanged:
            continue
        for kind, other, reason in stored[memory_id]["flags"]:
            if other in unchanged and (kind, pairs.pair(memory_id, other)) not in kept:
                flagged.setdefault(memory_id, []).append(Flag(kind, current[other], reason))
    return flagged, current
