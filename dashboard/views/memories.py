"""A mind's memories: table, detail with history, review queue; every write via the services.

Every form that acts on a memory sends back the version the page showed (`version`, or
`version-<id>` on a row of the queue): a memory that changed since is not touched, and the
person sees its current text and is asked again.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from dashboard.forms import EXPIRED_MODES, MemoryEditForm, MemoryFilterForm
from dashboard.views.common import SelectorPages, next_url, own_memory, own_mind
from memories import audit, services
from memories.actors import Actor
from memories.errors import Conflict, Invalid, NotFound, QuotaExceeded, Stale
from memories.filters import MemoryFilters
from memories.models import Memory, MemoryEvent, Priority
from memories.rules import normalize_tag
from memories.selectors import (
    EXPIRING_SOON,
    expiring_filters,
    memory_ids_present,
    memory_list,
)

PAGE_SIZE = 50


def _detail_url(memory: Memory) -> str:
    return reverse("dashboard:memory", args=[memory.mind_id, memory.pk])


def _version_shown(request: HttpRequest, memory: Memory) -> str:
    """The version of `memory` the page showed: its row's field on the review queue, else the
    form's own. A form without one matches no version, so it asks again."""
    return request.POST.get(f"version-{memory.pk}") or request.POST.get("version", "")


def _changed_since(request: HttpRequest, memory: Memory, *, undone: str, again: str) -> None:
    messages.warning(
        request,
        f"“{memory.key}” changed since you loaded it, so it was not {undone}. "
        f"Here is what it holds now: {again}",
    )


def _page(request: HttpRequest, pages: SelectorPages) -> Page:
    return Paginator(pages, PAGE_SIZE).get_page(request.GET.get("page"))  # type: ignore[arg-type]


@login_required
def memory_table(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = own_mind(request, mind_id)
    form = MemoryFilterForm(request.GET)
    form.is_valid()  # invalid values are shown as errors and ignored
    data = {name: value for name, value in form.cleaned_data.items() if value}
    filters = MemoryFilters(
        category=data.get("category"),
        tag=normalize_tag(data["tag"]) if "tag" in data else None,
        priority=Priority.from_name(data["priority"]).value if "priority" in data else None,
        source=data.get("source"),
        verified={"yes": True, "no": False}.get(data.get("verified", "")),
        expired=EXPIRED_MODES[data.get("expired", "")],
    )
    query = data.get("q", "").strip() or None
    # The same list as the API's, search included: every filter narrows the search itself.
    # A search is ranked best first unless the person picked an order.
    pages = SelectorPages(memory_list, mind=mind, filters=filters, q=query, sort=data.get("sort"))
    search_error = None
    try:
        page = _page(request, pages)
    except Invalid as exc:
        search_error = " ".join(exc.fields.get("q", [exc.detail]))
        page = Paginator([], PAGE_SIZE).get_page(1)
    rows = [
        {"memory": memory, "snippet": getattr(memory, "search_snippet", None)} for memory in page
    ]
    return render(
        request,
        "dashboard/memory_list.html",
        {
            "mind": mind,
            "form": form,
            "page": page,
            "rows": rows,
            "query": query or "",
            "search_error": search_error,
            "filtered": bool(set(data) - {"sort"}),
        },
    )


@login_required
def memory_detail(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    mind, memory = own_memory(request, mind_id, memory_id)
    history = audit.memory_history(memory=memory)
    return render(
        request,
        "dashboard/memory_detail.html",
        {"mind": mind, "memory": memory, "history": history},
    )


@login_required
@require_http_methods(["GET", "POST"])
def memory_edit(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    mind, memory = own_memory(request, mind_id, memory_id)
    detail_url = _detail_url(memory)
    form = MemoryEditForm(request.POST or None, initial=MemoryEditForm.initial_for(memory))
    unsaved = None
    if request.method == "POST" and form.is_valid():
        changes = form.changed_values(memory)
        if not changes:
            messages.info(request, "Nothing changed, so nothing was saved.")
            return redirect(next_url(request, detail_url))
        try:
            services.memory_change(
                memory=memory,
                actor=Actor.for_user(request.user),
                body=changes,
                expected_version=form.cleaned_data["version"],
            )
        except Invalid as exc:
            for name, field_messages in exc.fields.items():
                for message in field_messages:
                    form.add_error(name if name in form.fields else None, message)
        except QuotaExceeded as exc:  # the mind is full: the text may not grow
            form.add_error("content", exc.detail)
        except Conflict as exc:
            form.add_error("key", exc.detail)
        except Stale:
            # The form again, with what is stored now: saving the old values of the fields
            # the person did not touch would undo the changes they have not seen.
            _, memory = own_memory(request, mind_id, memory_id)
            unsaved = form.cleaned_data["content"]
            form = MemoryEditForm(initial=MemoryEditForm.initial_for(memory))
            _changed_since(request, memory, undone="saved", again="edit it again if it needs it.")
        else:
            messages.success(request, "Saved. Your edit leaves the memory verified by you.")
            return redirect(next_url(request, detail_url))
    return render(
        request,
        "dashboard/memory_edit.html",
        {
            "mind": mind,
            "memory": memory,
            "form": form,
            "unsaved": unsaved,
            "next": next_url(request, ""),
        },
    )


@login_required
@require_POST
def memory_verify_view(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    _, memory = own_memory(request, mind_id, memory_id)
    try:
        services.memory_verify(
            memory=memory,
            actor=Actor.for_user(request.user),
            expected_version=_version_shown(request, memory),
        )
    except Stale:
        _changed_since(request, memory, undone="verified", again="verify it if it is right.")
        return redirect(_detail_url(memory))
    messages.success(request, f"Verified “{memory.key}”.")
    return redirect(next_url(request, _detail_url(memory)))


@login_required
@require_POST
def memory_unverify_view(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    _, memory = own_memory(request, mind_id, memory_id)
    try:
        services.memory_unverify(
            memory=memory,
            actor=Actor.for_user(request.user),
            expected_version=_version_shown(request, memory),
        )
    except Stale:
        _changed_since(
            request, memory, undone="unverified", again="unverify it if you still want to."
        )
        return redirect(_detail_url(memory))
    messages.success(request, f"“{memory.key}” is unverified again.")
    return redirect(next_url(request, _detail_url(memory)))


@login_required
@require_http_methods(["GET", "POST"])
def memory_delete_confirm(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    mind, memory = own_memory(request, mind_id, memory_id)
    list_url = reverse("dashboard:memories", args=[mind.pk])
    if request.method == "POST":
        try:
            services.memory_delete(
                memory=memory,
                actor=Actor.for_user(request.user),
                expected_version=_version_shown(request, memory),
            )
        except Stale:
            # This page again, showing what the memory holds now.
            _changed_since(request, memory, undone="deleted", again="delete it if it is wrong.")
        else:
            messages.success(request, f"Deleted “{memory.key}”. The audit trail keeps its values.")
            target = next_url(request, list_url)
            # Back to the deleted memory's own pages would be a 404.
            return redirect(list_url if target.startswith(_detail_url(memory)) else target)
    return render(
        request,
        "dashboard/memory_delete.html",
        {"mind": mind, "memory": memory, "next": next_url(request, "")},
    )


@login_required
@require_POST
def memory_restore(
    request: HttpRequest, mind_id: str, memory_id: str, event_id: int
) -> HttpResponse:
    _, memory = own_memory(request, mind_id, memory_id)
    try:
        entry = audit.memory_history_entry(memory=memory, event_id=event_id)
    except NotFound as exc:
        raise Http404(exc.detail) from None
    detail_url = _detail_url(memory)
    if not entry.restorable:
        messages.info(request, "That version is what the memory holds now: nothing to restore.")
        return redirect(detail_url)
    try:
        services.memory_change(
            memory=memory,
            actor=Actor.for_user(request.user),
            body=entry.restorable,
            expected_version=_version_shown(request, memory),
        )
    except Stale:
        _changed_since(request, memory, undone="restored", again="restore it if you still want to.")
    except (Invalid, Conflict) as exc:
        messages.error(request, f"Could not restore that version: {exc.text()}")
    else:
        when = entry.event.at.strftime("%Y-%m-%d %H:%M UTC")
        messages.success(request, f"Restored the version of {when}.")
    return redirect(detail_url)


@login_required
def review_queue(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = own_mind(request, mind_id)
    # The same list as GET /memory/unverified and GET /memory/expiring.
    queue = SelectorPages(
        memory_list, mind=mind, filters=MemoryFilters(verified=False), sort="review"
    )
    expiring = memory_list(
        mind=mind, filters=expiring_filters(within=EXPIRING_SOON), sort="expires", limit=20
    )
    return render(
        request,
        "dashboard/review.html",
        {
            "mind": mind,
            "page": _page(request, queue),
            "expiring": expiring.memories,
            "expiring_days": EXPIRING_SOON.days,
        },
    )


@login_required
@require_POST
def bulk_verify(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = own_mind(request, mind_id)
    back = next_url(request, reverse("dashboard:review", args=[mind.pk]))
    ticked = request.POST.getlist("memory")
    try:
        # Scoped by the mind: ids of other minds simply match nothing.
        result = services.memory_verify_many(
            mind=mind,
            actor=Actor.for_user(request.user),
            memory_ids=ticked,
            expected_versions={pk: request.POST.get(f"version-{pk}", "") for pk in ticked},
        )
    except Invalid as exc:
        messages.error(request, exc.text())
        return redirect(back)
    done = result.verified
    if done:
        messages.success(request, f"Verified {done} memor{'y' if done == 1 else 'ies'}.")
    if result.stale:
        keys = ", ".join(f"“{memory.key}”" for memory in result.stale)
        messages.warning(
            request,
            f"Changed since you loaded the page, so not verified: {keys}. They are shown "
            "again with what they hold now: verify them if they are right.",
        )
    elif not done:
        messages.info(request, "Tick the memories to verify first.")
    return redirect(back)


@login_required
def activity(request: HttpRequest, mind_id: str) -> HttpResponse:
    """The mind's audit trail (as GET /memory/audit), deletions included, newest first."""
    mind = own_mind(request, mind_id)
    action = request.GET.get("action") or None
    if action not in MemoryEvent.Action.values:
        action = None
    page = _page(request, SelectorPages(audit.memory_events, mind=mind, action=action))
    return render(
        request,
        "dashboard/activity.html",
        {
            "mind": mind,
            "page": page,
            "present": memory_ids_present(mind=mind, ids={e.memory_id for e in page}),
            "action": action or "",
            "actions": MemoryEvent.Action.values,
        },
    )
