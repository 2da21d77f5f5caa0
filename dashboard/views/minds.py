"""Minds: list, create (key shown once), overview with charts, key rotation, rename, delete."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from dashboard import selectors
from dashboard.forms import MindForm
from memories.selectors import memory_expiring
from minds import services
from minds.models import Mind

# The raw key waits here between the POST that made it and the one page that shows it.
NEW_KEY_SESSION = "dashboard_new_mind_key"


def _remember_key(request, mind: Mind, raw_key: str) -> None:
    request.session[NEW_KEY_SESSION] = {"mind": mind.pk, "key": raw_key}


def _take_key(request, mind: Mind) -> str | None:
    """The freshly made key of `mind`, removed from the session: a reload shows it no more."""
    pending = request.session.get(NEW_KEY_SESSION)
    if not pending or pending.get("mind") != mind.pk:
        return None
    del request.session[NEW_KEY_SESSION]
    return pending["key"]


def base_url(request) -> str:
    return request.build_absolute_uri("/").rstrip("/")


@login_required
def mind_list(request):
    minds = selectors.mind_list_for_owner(owner=request.user)
    return render(request, "dashboard/mind_list.html", {"minds": minds})


@login_required
@require_http_methods(["GET", "POST"])
def mind_new(request):
    form = MindForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        mind, raw_key = services.mind_create(
            owner=request.user,
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
        )
        _remember_key(request, mind, raw_key)
        return redirect("dashboard:mind-key", mind_id=mind.pk)
    return render(request, "dashboard/mind_form.html", {"form": form, "creating": True})


@login_required
def mind_key(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    raw_key = _take_key(request, mind)
    response = render(
        request,
        "dashboard/mind_key.html",
        {"mind": mind, "raw_key": raw_key, "base_url": base_url(request)},
    )
    # A page holding a secret is never cached, by the browser or anything in between.
    response["Cache-Control"] = "no-store"
    return response


@login_required
def mind_overview(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    stats = selectors.mind_stats(mind=mind)
    return render(
        request,
        "dashboard/mind_overview.html",
        {
            "mind": mind,
            "stats": stats,
            "expiring": memory_expiring(mind=mind, within=selectors.EXPIRING_WITHIN, limit=10)[0],
            "review_count": stats.unverified,
            "base_url": base_url(request),
        },
    )


@login_required
@require_POST
def mind_rotate(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    raw_key = services.mind_rotate_key(mind=mind)
    _remember_key(request, mind, raw_key)
    messages.success(request, "New Mind Key made. The old key stopped working.")
    return redirect("dashboard:mind-key", mind_id=mind.pk)


@login_required
@require_POST
def mind_revoke(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    services.mind_revoke_key(mind=mind)
    messages.success(request, "Mind Key revoked: no agent can reach this mind until you rotate.")
    return redirect("dashboard:mind-settings", mind_id=mind.pk)


@login_required
@require_http_methods(["GET", "POST"])
def mind_settings(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    initial = {"name": mind.name, "description": mind.description}
    form = MindForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        services.mind_update(
            mind=mind, name=form.cleaned_data["name"], description=form.cleaned_data["description"]
        )
        messages.success(request, "Saved.")
        return redirect("dashboard:mind-settings", mind_id=mind.pk)
    return render(request, "dashboard/mind_settings.html", {"mind": mind, "form": form})


@login_required
@require_http_methods(["GET", "POST"])
def mind_delete_confirm(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    if request.method == "POST":
        name = mind.name
        services.mind_delete(mind=mind)
        messages.success(request, f"Deleted the mind “{name}” and all its memories.")
        return redirect("dashboard:minds")
    count = mind.memories.count()
    return render(request, "dashboard/mind_delete.html", {"mind": mind, "count": count})
