"""A mind's Sharing panel (on its settings page, for its admins): invite a person by email at
a level, change a share's level, revoke a share (confirmed first). Every change is a call to
minds.services, which judges the address and the level; these views only show its answers.

An invitation is answered in the same words whether or not the address has an account, so
the panel never tells who has one.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import Conflict, Invalid
from dashboard.forms import ShareForm
from dashboard.views.common import mind_at
from dashboard.views.minds import settings_page
from minds import services
from minds.access import Level
from minds.models import Mind, Share

ALREADY_SHARED = (
    "This mind is already shared with that address: change its level in the list below, "
    "or revoke it first."
)


def _panel_url(mind: Mind) -> str:
    return reverse("dashboard:mind-settings", args=[mind.pk]) + "#sharing"


def _after_own_change(request: HttpRequest, mind: Mind, share: Share, url: str) -> str:
    """Where to go after changing a share: the panel, unless the share was the person's own
    and they may no longer see it (the mind's overview, or the list once it is gone)."""
    if share.user_id != request.user.pk:
        return url
    if share.pk is None or not Share.objects.filter(pk=share.pk).exists():
        return reverse("dashboard:minds")
    if share.acl != Share.Acl.ADMIN:
        return reverse("dashboard:mind", args=[mind.pk])
    return url


@login_required
@require_POST
def share_invite(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    form = ShareForm(request.POST)
    form.is_valid()  # shape only: the service judges the values
    try:
        share = services.share_create(
            mind=mind,
            by=request.user,
            user_email=form.cleaned_data.get("user_email", ""),
            acl=form.cleaned_data.get("acl") or Share.Acl.READ,
        )
    except Invalid as exc:
        for name, field_messages in exc.fields.items():
            for message in field_messages:
                form.add_error(name if name in form.fields else None, message)
        return settings_page(request, mind, invite=form, status=400)
    except Conflict:
        form.add_error("user_email", ALREADY_SHARED)
        return settings_page(request, mind, invite=form, status=400)
    messages.success(
        request,
        f"Invited {share.email} at {share.acl}. "
        "They'll get access when they sign in with that address.",
    )
    return redirect(_panel_url(mind))


@login_required
@require_POST
def share_change(request: HttpRequest, mind_id: str, share_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    share = services.share_get(mind=mind, share_id=share_id)
    try:
        services.share_update(share=share, acl=request.POST.get("acl"))
    except Invalid as exc:
        share.refresh_from_db()  # shown at the level it keeps
        return settings_page(request, mind, share_errors={share.pk: exc.text()}, status=400)
    messages.success(request, f"{share.email} now has {share.acl} access.")
    return redirect(_after_own_change(request, mind, share, _panel_url(mind)))


@login_required
@require_http_methods(["GET", "POST"])
def share_revoke(request: HttpRequest, mind_id: str, share_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.ADMIN)
    share = services.share_get(mind=mind, share_id=share_id)
    if request.method == "POST":
        services.share_delete(share=share)
        messages.success(
            request, f"Revoked the share with {share.email}: it gives no access from now on."
        )
        return redirect(_after_own_change(request, mind, share, _panel_url(mind)))
    return render(request, "dashboard/share_revoke.html", {"mind": mind, "share": share})
