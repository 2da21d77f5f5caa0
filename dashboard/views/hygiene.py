"""A mind's Hygiene page: what a person should decide about its memories (proposed
supersedes, contradictions, look-alikes, compaction, redacted secrets, stale memories), and
the actions that decide it. Every action goes through the services, audited, and sends the
version of each memory the page showed."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import CoreError, Stale
from dashboard.views.common import next_url, own_memory, own_mind
from memories import services
from memories.actors import Actor
from memories.hygiene.supersede import proposals_waiting
from memories.selectors import STALE_AFTER, stale_memories

# How many of each kind the page shows at once.
SHOWN = 50


def _page(request: HttpRequest, mind_id: str) -> str:
    return reverse("dashboard:hygiene", args=[mind_id])


@login_required
def hygiene(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = own_mind(request, mind_id)
    proposals = proposals_waiting(mind=mind)
    stale = stale_memories(mind=mind, limit=SHOWN)
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
        },
    )


@login_required
@require_POST
def supersede(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    """Supersede a memory by another of the mind (or make it current again: no `by`); a
    proposal is accepted this way too."""
    mind, memory = own_memory(request, mind_id, memory_id)
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
def reject_proposal(
    request: HttpRequest, mind_id: str, memory_id: str, proposal_id: str
) -> HttpResponse:
    mind, memory = own_memory(request, mind_id, memory_id)
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


def _next(request: HttpRequest, mind_id: str) -> str:
    return next_url(request, _page(request, mind_id))
