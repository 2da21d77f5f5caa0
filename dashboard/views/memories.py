"""A mind's memories: table, detail with history, review queue; every write via the services."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.exceptions import APIException, ValidationError

from dashboard import selectors
from dashboard.forms import SORTS, MemoryEditForm, MemoryFilterForm
from memories import services
from memories.models import Memory, MemoryEvent, Priority
from memories.params import normalize_tag
from memories.search import MAX_LIMIT as SEARCH_MAX
from memories.search import SearchQueryError, memory_search
from memories.selectors import memory_events, memory_expiring, memory_get, memory_unverified
from memories.serialization import memory_to_dict
from memories.services import Actor

PAGE_SIZE = 50


def _next_url(request, default: str) -> str:
    """Where to go after an action: a same-site `next`, else `default`."""
    target = request.POST.get("next") or request.GET.get("next")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def _detail_url(memory) -> str:
    return reverse("dashboard:memory", args=[memory.mind_id, memory.pk])


def _mind_and_memory(request, mind_id: str, memory_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    return mind, memory_get(mind=mind, memory_id=memory_id)


def _error_text(exc: APIException) -> str:
    detail = exc.detail
    if isinstance(detail, dict):
        return " ".join(f"{name}: {' '.join(map(str, msgs))}" for name, msgs in detail.items())
    if isinstance(detail, list):
        return " ".join(map(str, detail))
    return str(detail)


@login_required
def memory_table(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    form = MemoryFilterForm(request.GET)
    form.is_valid()  # invalid values are shown as errors and ignored
    data = {name: value for name, value in form.cleaned_data.items() if value}
    sort = data.get("sort", "-updated")
    priority = Priority.from_name(data["priority"]).value if "priority" in data else None
    verified = {"yes": True, "no": False}.get(data.get("verified", ""))
    tag = normalize_tag(data["tag"]) if "tag" in data else None
    query = data.get("q", "").strip()
    search_error = None

    memories = selectors.memory_table(
        mind=mind,
        category=data.get("category"),
        priority=priority,
        source=data.get("source"),
        verified=verified,
        tag=tag,
        expired=data.get("expired", ""),
        ordering=SORTS[sort][1],
    )
    if query:
        # The same selector as GET /memory/search; the table's other filters then narrow
        # what it found, keeping its ranking.
        try:
            hits = memory_search(
                mind=mind,
                q=query,
                tag=tag,
                category=data.get("category"),
                include_expired=data.get("expired", "") in ("include", "only"),
                limit=SEARCH_MAX,
            ).hits
        except SearchQueryError as exc:
            search_error = str(exc)
            hits = []
        found = memories.filter(pk__in=[hit.memory.pk for hit in hits])
        allowed = set(found.values_list("pk", flat=True))
        memories = [hit for hit in hits if hit.memory.pk in allowed]

    page = Paginator(memories, PAGE_SIZE).get_page(request.GET.get("page"))
    if query:
        rows = [{"memory": hit.memory, "snippet": hit.snippet} for hit in page]
    else:
        rows = [{"memory": memory} for memory in page]
    return render(
        request,
        "dashboard/memory_list.html",
        {
            "mind": mind,
            "form": form,
            "page": page,
            "rows": rows,
            "query": query,
            "search_error": search_error,
            "filtered": bool(set(data) - {"sort"}),
        },
    )


@login_required
def memory_detail(request, mind_id: str, memory_id: str):
    mind, memory = _mind_and_memory(request, mind_id, memory_id)
    history = selectors.memory_history(memory=memory, current=memory_to_dict(memory))
    return render(
        request,
        "dashboard/memory_detail.html",
        {"mind": mind, "memory": memory, "history": history},
    )


@login_required
@require_http_methods(["GET", "POST"])
def memory_edit(request, mind_id: str, memory_id: str):
    mind, memory = _mind_and_memory(request, mind_id, memory_id)
    detail_url = _detail_url(memory)
    form = MemoryEditForm(request.POST or None, initial=MemoryEditForm.initial_for(memory))
    if request.method == "POST" and form.is_valid():
        changes = form.changed_values(memory)
        if not changes:
            messages.info(request, "Nothing changed, so nothing was saved.")
            return redirect(_next_url(request, detail_url))
        try:
            services.memory_update(memory=memory, actor=Actor.for_user(request.user), **changes)
        except ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {None: exc.detail}
            for name, msgs in detail.items():
                for message in msgs if isinstance(msgs, list) else [msgs]:
                    form.add_error(name if name in form.fields else None, str(message))
        except APIException as exc:  # a (category, key) clash answers 409 in the API
            form.add_error("key", _error_text(exc))
        else:
            messages.success(request, "Saved. Your edit leaves the memory verified by you.")
            return redirect(_next_url(request, detail_url))
    return render(
        request,
        "dashboard/memory_edit.html",
        {"mind": mind, "memory": memory, "form": form, "next": _next_url(request, "")},
    )


@login_required
@require_POST
def memory_verify_view(request, mind_id: str, memory_id: str):
    _, memory = _mind_and_memory(request, mind_id, memory_id)
    services.memory_verify(memory=memory, actor=Actor.for_user(request.user))
    messages.success(request, f"Verified “{memory.key}”.")
    return redirect(_next_url(request, _detail_url(memory)))


@login_required
@require_POST
def memory_unverify_view(request, mind_id: str, memory_id: str):
    _, memory = _mind_and_memory(request, mind_id, memory_id)
    services.memory_unverify(memory=memory, actor=Actor.for_user(request.user))
    messages.success(request, f"“{memory.key}” is unverified again.")
    return redirect(_next_url(request, _detail_url(memory)))


@login_required
@require_http_methods(["GET", "POST"])
def memory_delete_confirm(request, mind_id: str, memory_id: str):
    mind, memory = _mind_and_memory(request, mind_id, memory_id)
    list_url = reverse("dashboard:memories", args=[mind.pk])
    if request.method == "POST":
        services.memory_delete(memory=memory, actor=Actor.for_user(request.user))
        messages.success(request, f"Deleted “{memory.key}”. The audit trail keeps its values.")
        target = _next_url(request, list_url)
        # Back to the deleted memory's own pages would be a 404.
        return redirect(list_url if target.startswith(_detail_url(memory)) else target)
    return render(
        request,
        "dashboard/memory_delete.html",
        {"mind": mind, "memory": memory, "next": _next_url(request, "")},
    )


@login_required
@require_POST
def memory_restore(request, mind_id: str, memory_id: str, event_id: int):
    _, memory = _mind_and_memory(request, mind_id, memory_id)
    entry = selectors.memory_history_entry(
        memory=memory, current=memory_to_dict(memory), event_id=event_id
    )
    detail_url = _detail_url(memory)
    if not entry.restorable:
        messages.info(request, "That version is what the memory holds now: nothing to restore.")
        return redirect(detail_url)
    try:
        services.memory_update(
            memory=memory, actor=Actor.for_user(request.user), **entry.restorable
        )
    except APIException as exc:
        messages.error(request, f"Could not restore that version: {_error_text(exc)}")
    else:
        when = entry.event.at.strftime("%Y-%m-%d %H:%M UTC")
        messages.success(request, f"Restored the version of {when}.")
    return redirect(detail_url)


@login_required
def review_queue(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    # The same selectors as GET /memory/unverified and GET /memory/expiring.
    queue = selectors.SelectorPages(memory_unverified, mind=mind)
    page = Paginator(queue, PAGE_SIZE).get_page(request.GET.get("page"))
    expiring, _ = memory_expiring(mind=mind, within=selectors.EXPIRING_WITHIN, limit=20)
    return render(
        request, "dashboard/review.html", {"mind": mind, "page": page, "expiring": expiring}
    )


@login_required
@require_POST
def bulk_verify(request, mind_id: str):
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    ids = request.POST.getlist("memory")
    actor = Actor.for_user(request.user)
    # Scoped by the mind: ids of other minds simply match nothing.
    chosen = Memory.objects.filter(mind=mind, verified=False, pk__in=ids)
    done = 0
    for memory in chosen:
        services.memory_verify(memory=memory, actor=actor)
        done += 1
    if done:
        messages.success(request, f"Verified {done} memor{'y' if done == 1 else 'ies'}.")
    else:
        messages.info(request, "Tick the memories to verify first.")
    return redirect(_next_url(request, reverse("dashboard:review", args=[mind.pk])))


@login_required
def activity(request, mind_id: str):
    """The mind's audit trail (as GET /memory/audit), deletions included, newest first."""
    mind = selectors.mind_get_for_owner(owner=request.user, mind_id=mind_id)
    action = request.GET.get("action") or None
    if action not in MemoryEvent.Action.values:
        action = None
    events = selectors.SelectorPages(memory_events, mind=mind, action=action)
    page = Paginator(events, PAGE_SIZE).get_page(request.GET.get("page"))
    present = set(
        Memory.objects.filter(mind=mind, pk__in={e.memory_id for e in page}).values_list(
            "pk", flat=True
        )
    )
    return render(
        request,
        "dashboard/activity.html",
        {
            "mind": mind,
            "page": page,
            "present": present,
            "action": action or "",
            "actions": MemoryEvent.Action.values,
        },
    )
