"""The pairs a person looked at and chose to keep both of: both checks leave them out."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import Forbidden, Invalid, NotFound
from memories.actors import Actor
from memories.models import HygieneDismissal, Memory
from minds.models import Mind

KINDS = tuple(HygieneDismissal.Kind.values)


def pair_keep_both(
    *, mind: Mind, actor: Actor, kind: str, a: str, b: str, now: datetime | None = None
) -> HygieneDismissal:
    """Record that a person keeps both memories `a` and `b` of `mind` as they are, so the
    `kind` check (contradiction or duplicate) stops flagging the pair. Keeping a pair kept
    already changes nothing. Forbidden for an agent; Invalid for an unknown kind or a pair
    of one memory; NotFound when either is not a memory of this mind."""
    if actor.kind != "user":
        raise Forbidden("Only a person can keep a pair the hygiene checks flagged.")
    if kind not in KINDS:
        raise Invalid.one("kind", f"Must be one of {', '.join(KINDS)}, got {str(kind)[:50]!r}.")
    if a == b:
        raise Invalid.one("memories", "Give two different memories.")
    first, second = sorted((str(a), str(b)))
    found = set(
        Memory.objects.filter(mind=mind, pk__in=(first, second)).values_list("pk", flat=True)
    )
    if found != {first, second}:
        raise NotFound("No memory with this id in this mind.")
    existing = HygieneDismissal.objects.filter(
        mind=mind, kind=kind, first_id=first, second_id=second
    ).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return HygieneDismissal.objects.create(
                mind=mind,
                kind=kind,
                first_id=first,
                second_id=second,
                by=actor.name[:254],
                at=now or timezone.now(),
            )
    except IntegrityError:  # kept at the same moment by another request
        return HygieneDismissal.objects.get(mind=mind, kind=kind, first_id=first, second_id=second)
