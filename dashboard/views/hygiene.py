"""A mind's Hygiene page: what a person should decide about its memories (proposed
supersedes, contradictions, look-alikes, compaction, redacted secrets, stale memories), and
the actions that decide it. Every action goes through the services, audited, and sends the
version of each memory the page showed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import CoreError, Stale
from dashboard.views.common import mind_at, mind_memory, next_url
from memories import services
from memories.actors import Actor
from memories.hygiene.compact import (
    CompactRequest,
    compact_apply,
    compact_dry_run,
    compact_undo,
    compaction_summaries,
)
from memories.hygiene.contradictions import contradiction_pairs
from memories.hygiene.dismissals import pair_keep_both
from memories.hygiene.duplicates import duplicate_groups
from memories.hygiene.supersede import proposals_waiting
from memories.models import Memory
from memories.selectors import STALE_AFTER, redacted_memories, stale_memories
from minds.access import Level

# How many of each kind the page shows at once.
SHOWN = 50
# How far back the page looks for contradictions (at least one of the pair written since).
WINDOWS = {"7": timedelta(days=7), "30": timedelta(days=30), "365": timedelta(days=365)}
DEFAULT_WINDOW = "30"


def _page(request: HttpRequest, mind_id: str) -> str:
    return reverse("dashboard:hygiene", args=[mind_id])


@login_required
def hygiene(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.READ)
    proposals = proposals_waiting(mind=mind)
    stale = stale_memories(mind=mind, limit=SHOWN)
    redacted = redacted_memories(mind=mind, limit=SHOWN)
    window = request.GET.get("within", DEFAULT_WINDOW)
    window = window if window in WINDOWS else DEFAULT_WINDOW
    contradictions = contradiction_pairs(mind=mind, within=WINDOWS[window])
    duplicates = duplicate_groups(mind=mind)
    # The plan is worked out only when asked for: it reads every old memory's vector.
    plan = None
    if request.GET.get("plan"):
        plan = compact_dry_run(
            mind=mind, actor=Actor.for_user(request.user), request=CompactRequest(dry_run=True)
        ).results
    return render(
        request,
        "dashboard/hygiene.html",
        {
            "mind": mind,
            "proposals": list(proposals[:SHOWN]),
            "proposal_count": proposals.count(),
            "stale": stale.memories,
            "stale_count": stale.total,
            "stale_days": STALE_AFTER.days,
            "contradictions": contradictions[:SHOWN],
            "contradiction_count": len(contradictions),
            "window": window,
            "windows": list(WINDOWS),
            "duplicates": duplicates[:SHOWN],
            "duplicate_count": len(duplicates),
            "redacted": redacted.memories,
            "redacted_count": redacted.total,
            "plan": None if plan is None else _with_originals(plan),
            "older_days": CompactRequest().older_than.days,
            "summaries": compaction_summaries(mind=mind, limit=SHOWN),
        },
    )


def _with_originals(plan: list[Any]) -> list[tuple[Any, list[Memory]]]:
    """Each cluster of a compaction plan with its original memories, to show them."""
    found = Memory.objects.in_bulk([i for cluster in plan for i in cluster.originals])
    return [(cluster, [found[i] for i in cluster.originals if i in found]) for cluster in plan]


@login_required
@require_POST
def compact(request: HttpRequest, mind_id: str) -> HttpResponse:
    """Apply the compaction plan the person was shown (its memories' versions sent back)."""
    mind = mind_at(request, mind_id, need=Level.WRITE)
    seen = _versions_shown(request)
    try:
        done = compact_apply(
            mind=mind,
            actor=Actor.for_user(request.user),
            request=CompactRequest(),
            expected_versions=seen,
        )
    except Stale as exc:
        messages.warning(request, exc.detail)
        return redirect(_page(request, mind.pk) + "?plan=1#compaction-heading")
    except CoreError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(
            request,
            f"Compacted {done.memories_compacted} memories into {done.clusters_processed} "
            "summaries. Undo any of them below.",
        )
    return redirect(_page(request, mind.pk) + "#compaction-heading")


@login_required
@require_POST
def compact_undo_view(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    mind, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
    try:
        undone = compact_undo(mind=mind, actor=Actor.for_user(request.user), summary_id=memory.pk)
    except CoreError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Brought back {len(undone.restored)} memories.")
    return redirect(_page(request, mind.pk) + "#compaction-heading")


@login_required
@require_POST
def supersede(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    """Supersede a memory by another of the mind (or make it current again: no `by`); a
    proposal is accepted this way too."""
    mind, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
    by = request.POST.get("by") or None
    try:
        services.memory_supersede(
            memory=memory,
            by=by,
            actor=Actor.for_user(request.user),
            expected_version=request.POST.get("version", ""),
        )
    except Stale:
        messages.warning(
            request,
            f"“{memory.key}” changed since you loaded this page, so nothing was done. "
            "Look at it again.",
        )
    except CoreError as exc:
        messages.error(request, exc.detail)
    else:
        if by is None:
            messages.success(request, f"“{memory.key}” is current again.")
        else:
            messages.success(request, f"“{memory.key}” is superseded: it stays in its history.")
    return redirect(_next(request, mind.pk))


@login_required
@require_POST
def supersede_into(request: HttpRequest, mind_id: str) -> HttpResponse:
    """Keep one memory of a group (near-repeats, or one side of a contradiction) and
    supersede the others by it, each as the version the page showed (`version-<id>`)."""
    mind = mind_at(request, mind_id, need=Level.WRITE)
    keep = request.POST.get("keep", "")
    replaced = _versions_shown(request)
    replaced.pop(keep, None)
    if not replaced:
        messages.error(request, "Pick the memory to keep and at least one to replace.")
        return redirect(_next(request, mind.pk))
    try:
        done = services.memory_supersede_into(
            mind=mind, actor=Actor.for_user(request.user), keep=keep, replaced=replaced
        )
    except Stale:
        messages.warning(
            request,
            "One of these memories changed since you loaded this page, so nothing was done. "
            "Look at them again.",
        )
    except CoreError as exc:
        messages.error(request, exc.detail)
    else:
        keys = ", ".join(f"“{m.key}”" for m in done)
        messages.success(
            request,
            f"Superseded {keys}: {'it stays' if len(done) == 1 else 'they stay'} in the history.",
        )
    return redirect(_next(request, mind.pk))


@login_required
@require_POST
def keep_both(request: HttpRequest, mind_id: str) -> HttpResponse:
    """Keep every memory of a flagged pair (or group) as it is: the check stops flagging it."""
    mind = mind_at(request, mind_id, need=Level.WRITE)
    ids = sorted(set(request.POST.getlist("memory")))
    kind = request.POST.get("kind", "")
    try:
        for i, first in enumerate(ids):
            for second in ids[i + 1 :]:
                pair_keep_both(
                    mind=mind, actor=Actor.for_user(request.user), kind=kind, a=first, b=second
                )
    except CoreError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Kept as they are: these will not be flagged again.")
    return redirect(_next(request, mind.pk))


@login_required
@require_POST
def reject_proposal(
    request: HttpRequest, mind_id: str, memory_id: str, proposal_id: str
) -> HttpResponse:
    mind, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
    try:
        services.proposal_reject(
            mind=mind,
            memory_id=memory.pk,
            proposal_id=proposal_id,
            actor=Actor.for_user(request.user),
        )
    except CoreError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Rejected: “{memory.key}” stays current.")
    return redirect(_next(request, mind.pk))


def _versions_shown(request: HttpRequest) -> dict[str, str]:
    """{memory id: version} of the memories the page showed (its `version-<id>` fields)."""
    return {
        name.removeprefix("version-"): str(request.POST[name])
        for name in request.POST
        if name.startswith("version-")
    }


def _next(request: HttpRequest, mind_id: str) -> str:
    return next_url(request, _page(request, mind_id))
