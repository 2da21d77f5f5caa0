"""Minds: list, create (key shown once), overview with charts, key rotation and revocation
(each confirmed first), rename, delete."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from chat.selectors import chat_unread_for_people
from connections.rules import mcp_resource
from connections.selectors import connections_of
from core.errors import Conflict, Invalid, QuotaExceeded
from dashboard import timeline
from dashboard.forms import SHARE_LEVELS, MindForm, ShareForm
from dashboard.views.as_of import AsOfShown, as_of_asked
from dashboard.views.common import form_send, mind_at, sent_before
from memories.as_of import mind_as_of
from memories.hygiene.health import hygiene_counts
from memories.selectors import (
    EXPIRING_SOON,
    expiring_filters,
    memory_counts,
    memory_list,
    memory_overview,
    mind_usage,
    minds_with_counts,
    overview_of,
)
from minds import services
from minds.access import Level, level_of, mind_for_person, minds_shared_with
from minds.models import Mind
from synapse_site.origin import origin


def agent_setup(request: HttpRequest) -> dict[str, str]:
    """What the set-up snippets name besides the key: this server's address and the stdio
    bridge's file in this checkout (for MCP clients that only start a local command)."""
    return {
        "base_url": origin(request),
        "mcp_bridge": str(settings.BASE_DIR / "mcp_server" / "stdio.py"),
    }


def key_page(request: HttpRequest, mind: Mind, raw_key: str | None = None) -> HttpResponse:
    """The Mind Key page. A new key is shown in the answer to the POST that made it and kept
    nowhere else (no session, no cookie): this page is its only copy."""
    response = render(
        request,
        "dashboard/mind_key.html",
        {"mind": mind, "raw_key": raw_key, **agent_setup(request)},
    )
    # A page holding a secret is never cached, by the browser or anything in between.
    response["Cache-Control"] = "no-store"
    return response


@login_required
def mind_list(request: HttpRequest) -> HttpResponse:
    """The person's own minds, and beside them the minds others share with them (their level
    and the owner's address), counted alike."""
    # An invitation sent while they were signed in counts from here on, as at sign-in.
    services.share_claim(user=request.user)
    shared = minds_shared_with(user=request.user).select_related("owner")
    own = list(minds_with_counts(owner=request.user))
    others = [
        (mind, level_of(user=request.user, mind=mind)) for mind in minds_with_counts(minds=shared)
    ]
    # The agent's messages no one has read yet, beside each mind (one query for all).
    unread = chat_unread_for_people(mind_ids=[m.pk for m in own] + [m.pk for m, _ in others])
    for mind in [*own, *(m for m, _ in others)]:
        mind.chat_unread = unread.get(mind.pk, 0)  # type: ignore[attr-defined]
    return render(
        request,
        "dashboard/mind_list.html",
        {
            "minds": own,
            "shared": others,
            "expiring_days": EXPIRING_SOON.days,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def mind_new(request: HttpRequest) -> HttpResponse:
    form = MindForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            with form_send(request) as send:
                if not send.first:
                    return _made_before(request, send.target)
                mind, raw_key = services.mind_create(
                    owner=request.user,
                    name=form.cleaned_data["name"],
                    description=form.cleaned_data["description"],
                )
                send.acted_on(mind.pk)
        except QuotaExceeded as exc:
            form.add_error(None, exc.detail)
        except Invalid as exc:  # the form's token: too old, or not from this page
            form.add_error(None, exc.detail)
            status = 400
        else:
            # The key page shows the new mind's tabs as any page of it does: at the owner's level.
            return key_page(request, mind_at(request, mind.pk, need=Level.OWNER), raw_key)
    return render(
        request, "dashboard/mind_form.html", {"form": form, "creating": True}, status=status
    )


LOST_KEY = "Its Mind Key was shown only once: if it was not copied, rotate it to get a new one."


def _made_before(request: HttpRequest, mind_id: str) -> HttpResponse:
    """A creation form sent again: the mind its first send made, whose key is not shown."""
    mind = mind_for_person(user=request.user, mind_id=mind_id)
    if mind is None:  # deleted since
        return sent_before(
            request, reverse("dashboard:minds"), what="no second mind was made", hint=""
        )
    return sent_before(
        request,
        reverse("dashboard:mind-settings", args=[mind.pk]),
        what=f"“{mind.name}” was already created and no second mind was made",
        hint=LOST_KEY,
    )


@login_required
def mind_key(request: HttpRequest, mind_id: str) -> HttpResponse:
    """After the fact: the key can no longer be shown, only its prefix and how to rotate."""
    return key_page(request, mind_at(request, mind_id, need=Level.ADMIN))


@login_required
def mind_overview(request: HttpRequest, mind_id: str) -> HttpResponse:
    """The counts and charts of a mind; `?period=` picks the timeline's period, `?at=` shows
    the counts as they were at a moment beside today's."""
    mind = mind_at(request, mind_id, need=Level.READ)
    now = timezone.now()
    stats = memory_overview(mind=mind, now=now)
    expiring = memory_list(
        mind=mind, filters=expiring_filters(within=EXPIRING_SOON), sort="expires", limit=10
    )
    period = timeline.period_shown(request.GET.get("period"))
    as_of = _overview_as_of(request, mind, now)
    return render(
        request,
        "dashboard/mind_overview.html",
        {
            "mind": mind,
            "stats": stats,
            "expiring": expiring.memories,
            "expiring_days": EXPIRING_SOON.days,
            "review_count": stats.counts["unverified"],
            "hygiene": _hygiene_shown(mind),
            "base_url": origin(request),
            "timeline": timeline.timeline_chart(mind=mind, period=period, now=now),
            "period": period,
            "periods": list(timeline.WINDOWS),
            "period_asked": request.GET.get("period", period),
            "timeline_span": timeline.span_text(period),
            **as_of.context,
        },
        status=as_of.status,
    )


def _overview_as_of(request: HttpRequest, mind: Mind, now: datetime) -> AsOfShown:
    """The overview's counts at the moment `?at=` names, rebuilt from the audit trail: a
    form error (400) for a moment that is no moment or is to come, the core's message (409)
    when the history it needs was folded."""
    shown = as_of_asked(request, now)
    if shown.at is None:
        return shown
    try:
        held = mind_as_of(mind=mind, at=shown.at)
    except Conflict as exc:
        return shown.refused(exc.detail)
    shown.context["as_of_stats"] = overview_of(held.memories, now=shown.at)
    shown.context["as_of_purged"] = held.purged
    return shown


def _hygiene_shown(mind: Mind) -> dict[str, Any]:
    """The hygiene counts as the overview shows them: each a number (None before the worker
    first checks the mind), and when the checks ran."""
    found = hygiene_counts(mind=mind)
    checked_at = found.pop("checked_at")
    shown: dict[str, Any] = {kind: None if v is None else v[0] for kind, v in found.items()}
    return {**shown, "checked_at": checked_at}


def _confirm_key_change(
    request: HttpRequest, mind: Mind, action: str, error: str = ""
) -> HttpResponse:
    """The page that asks before the key changes: GET shows it, its form POSTs the change
    (shown again, with `error`, when that POST was refused)."""
    return render(
        request,
        "dashboard/mind_key_confirm.html",
        {"mind": mind, "action": action, "error": error},
        status=400 if error else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def mind_rotate(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    if request.method == "GET":
        return _confirm_key_change(request, mind, "rotate")
    try:
        with form_send(request) as send:
            if not send.first:
                return sent_before(
                    request,
                    reverse("dashboard:mind-settings", args=[mind.pk]),
                    what="the Mind Key was not replaced again",
                    hint="The new key was shown only once: if it was not copied, rotate again.",
                )
            raw_key = services.mind_rotate_key(mind=mind)
            send.acted_on(mind.pk)
    except Invalid as exc:  # the form's token: too old, or not from this page
        return _confirm_key_change(request, mind, "rotate", error=exc.detail)
    # Read on this very page, so it is never stored in the message cookie.
    messages.success(request, "New Mind Key made. The old key stopped working.")
    return key_page(request, mind, raw_key)


@login_required
@require_http_methods(["GET", "POST"])
def mind_revoke(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    if request.method == "GET":
        if not mind.has_active_key:  # nothing to revoke: the settings say so
            return redirect("dashboard:mind-settings", mind_id=mind.pk)
        return _confirm_key_change(request, mind, "revoke")
    services.mind_revoke_key(mind=mind)
    messages.success(request, "Mind Key revoked: no agent can reach this mind until you rotate.")
    return redirect("dashboard:mind-settings", mind_id=mind.pk)


@login_required
@require_http_methods(["GET", "POST"])
def mind_settings(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    form = MindForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.mind_update(
            mind=mind, name=form.cleaned_data["name"], description=form.cleaned_data["description"]
        )
        messages.success(request, "Saved.")
        return redirect("dashboard:mind-settings", mind_id=mind.pk)
    return settings_page(request, mind, form=form if request.method == "POST" else None)


def settings_page(
    request: HttpRequest,
    mind: Mind,
    *,
    form: MindForm | None = None,
    invite: ShareForm | None = None,
    share_errors: dict[str, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The settings page of `mind` (for its admins: the view has checked), with any form that
    was refused shown again as sent: the rename form, the invitation, a share's level
    (`share_errors`: the message by share id)."""
    initial = {"name": mind.name, "description": mind.description}
    return render(
        request,
        "dashboard/mind_settings.html",
        {
            "mind": mind,
            "form": form or MindForm(initial=initial),
            "usage": mind_usage(mind=mind),
            **agent_setup(request),
            "invite": invite or ShareForm(),
            "shares": mind.shares.order_by("created_at", "id"),
            "share_errors": share_errors or {},
            "share_levels": SHARE_LEVELS,
            "connections": connections_of(mind=mind),
            "mcp_url": mcp_resource(origin(request)),
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def mind_delete_confirm(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.OWNER)
    if request.method == "POST":
        name = mind.name
        services.mind_delete(mind=mind)
        messages.success(request, f"Deleted the mind “{name}” and all its memories.")
        return redirect("dashboard:minds")
    count = memory_counts(mind=mind)["total"]
    return render(request, "dashboard/mind_delete.html", {"mind": mind, "count": count})
