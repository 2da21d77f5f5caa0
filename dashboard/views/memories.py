"""A mind's memories: table, detail with history, review queue; every write via the services.

Every form that acts on a memory sends back the version the page showed (`version`, or
`version-<id>` on a row of the queue): a memory that changed since is not touched, and the
person sees its current text and is asked again.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import Conflict, Invalid, NotFound, QuotaExceeded, Stale
from dashboard.forms import MemoryEditForm, MemoryFilterForm
from dashboard.views.as_of import AsOfShown, as_of_asked
from dashboard.views.common import (
    SelectorPages,
    mind_at,
    mind_memory,
    next_url,
    offer_batch_undo,
    offer_undo,
    page_size,
    paged,
)
from memories import audit, services
from memories.actors import Actor
from memories.as_of import memory_as_of
from memories.filters import MemoryFilters
from memories.hygiene.flags import flagged_memories, memory_flags
from memories.hygiene.supersede import proposals_waiting
from memories.models import Memory, MemoryEvent
from memories.rules import parse_timestamp
from memories.search import memory_search, search_mode_default
from memories.selectors import (
    EXPIRING_SOON,
    diff_until,
    expiring_filters,
    memory_counts,
    memory_ids_present,
    memory_list,
    memory_related,
    memory_unverified_matching_ids,
    tags_most_used,
    tags_unused,
)
from minds.access import Level
from minds.models import Mind

# Related memories the memory page lists (the API's /memory/{id}/related pages through all).
RELATED_SHOWN = 5
# Flagged memories "verify all matching" lists by name.
FLAGGED_SHOWN = 50


def _detail_url(memory: Memory) -> str:
    return reverse("dashboard:memory", args=[memory.mind_id, memory.pk])


def _version_shown(request: HttpRequest, memory: Memory) -> str:
    """The version of `memory` the page showed: its row's field on the review queue, else the
    form's own. A form without one matches no version, so it asks again."""
    return request.POST.get(f"version-{memory.pk}") or request.POST.get("version", "")


def _back_to_row(url: str, memory: Memory) -> str:
    """`url` pointing at this memory's row (a review queue row's id), for a Cancel link."""
    return f"{url.split('#')[0]}#row-{memory.pk}"


def _changed_since(request: HttpRequest, memory: Memory, *, undone: str, again: str) -> None:
    messages.warning(
        request,
        f"“{memory.key}” changed since you loaded it, so it was not {undone}. "
        f"Here is what it holds now: {again}",
    )


@login_required
def memory_table(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.READ)
    form = MemoryFilterForm(request.GET)
    form.is_valid()  # invalid values are shown as errors and ignored
    filters, query = form.filters(), form.query()
    sort = form.cleaned_data.get("sort") or None
    # The same lists as the API's: a search is GET /memory/search's (by words and meaning
    # while embeddings are on), and every filter narrows the search itself.
    search_warnings: list[str] = []  # filled by the search: say when meaning took no part
    if query:
        pages = SelectorPages(
            partial(_search_rows, warnings=search_warnings),
            mind=mind,
            filters=filters,
            q=query,
            sort=sort,
        )
    else:
        pages = SelectorPages(memory_list, mind=mind, filters=filters, sort=sort)
    search_error = None
    try:
        page = paged(request, pages)
    except Invalid as exc:
        search_error = " ".join(exc.fields.get("q", [exc.detail]))
        page = Paginator([], page_size(request)).get_page(1)
        form.fields["q"].widget.attrs.update(
            {"aria-invalid": "true", "aria-describedby": "search-error"}
        )
    rows = page.object_list if query else [{"memory": memory} for memory in page]
    # A memory opened from a search or a filtered page leads back to it, and so does its
    # deletion (common.next_url checks the way back when it is used).
    here = request.get_full_path() if request.GET else ""
    nothing = not rows and not search_error and filters != MemoryFilters()
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
            "filtered": filters != MemoryFilters(),
            "sort_name": sort or "",
            "order": dict(form.fields["sort"].choices).get(sort or "", ""),  # type: ignore[attr-defined]
            "by_meaning": search_mode_default() == "hybrid" and not search_warnings,
            "search_warnings": search_warnings,
            "next_query": f"?{urlencode({'next': here})}" if here else "",
            # The mind's most used tags to pick from: a bounded list, however many it has.
            "tag_choices": tags_most_used(mind=mind, limit=TAG_CHOICES),
            "loosen": _loosen(request, mind, counted=not query) if nothing else [],
            "unused_tags": tags_unused(mind=mind, tags=filters.all_tags) if nothing else [],
        },
    )


TAG_CHOICES = 100


def _loosen(request: HttpRequest, mind: Mind, *, counted: bool) -> list[dict[str, Any]]:
    """For a list that nothing matches: each filter set (and each of several tags) as a link
    to the same list without it, with how many memories that shows (`counted`: without a
    search, where a count is one cheap query)."""
    form = MemoryFilterForm(request.GET)
    form.is_valid()
    ways: list[tuple[str, str, str]] = []  # (what is left out, the filter, what it keeps)
    for name, field in form.fields.items():
        value = form.cleaned_data.get(name)
        if name in ("q", "sort") or not value:
            continue
        if name != "tag":
            choices = dict(getattr(field, "choices", ()))
            ways.append((f"{field.label}: {choices.get(value, value)}", name, ""))
            continue
        tags = value.split(", ")
        ways.append((f"the tag{'s' if len(tags) > 1 else ''} “{value}”", name, ""))
        if len(tags) > 1:
            for tag in tags:
                ways.append((f"the tag “{tag}”", name, ", ".join(t for t in tags if t != tag)))
    found = []
    for label, name, kept in ways:
        params = request.GET.copy()
        params.pop("page", None)
        params.pop(name, None)
        if kept:
            params[name] = kept
        count = None
        if counted:
            looser = MemoryFilterForm(params)
            looser.is_valid()
            count = memory_list(mind=mind, filters=looser.filters(), limit=1).total
        found.append({"label": label, "url": f"?{params.urlencode()}", "count": count})
    return found


def _search_rows(*, warnings: list[str], **arguments: Any) -> tuple[list[dict[str, Any]], int]:
    """A page of memory_search as table rows: each memory with its snippet and `match`; the
    search's warnings (meaning unavailable right now) replace what `warnings` held."""
    found = memory_search(**arguments)
    warnings[:] = found.warnings
    rows = [{"memory": h.memory, "snippet": h.snippet, "match": h.match} for h in found.hits]
    return rows, found.total


@login_required
def memory_detail(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    mind, memory = mind_memory(request, mind_id, memory_id, need=Level.READ)
    history = audit.memory_history(memory=memory)
    back = next_url(request, "")
    as_of = _memory_as_of(request, mind, memory)
    return render(
        request,
        "dashboard/memory_detail.html",
        {
            "mind": mind,
            "memory": memory,
            "history": history,
            "flags": memory_flags(mind=mind, memory_ids=[memory.pk]).get(memory.pk, []),
            "related": memory_related(mind=mind, memory=memory, limit=RELATED_SHOWN),
            "back": back,
            "next_query": f"?{urlencode({'next': back})}" if back else "",
            **as_of.context,
        },
        status=as_of.status,
    )


def _memory_as_of(request: HttpRequest, mind: Mind, memory: Memory) -> AsOfShown:
    """The memory as it was at the moment `?at=` names (`as_of_memory`; None when the mind
    did not hold it then), or the picker's error (as_of_asked; the core's folded-history
    message, a 409)."""
    shown = as_of_asked(request, timezone.now())
    if shown.at is None:
        return shown
    try:
        then: Memory | None = memory_as_of(mind=mind, memory_id=memory.pk, at=shown.at)
    except NotFound:
        then = None
    except Conflict as exc:
        return shown.refused(exc.detail)
    shown.context["as_of_memory"] = then
    return shown


@login_required
@require_http_methods(["GET", "POST"])
def memory_edit(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    mind, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
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
            _, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
            unsaved = form.cleaned_data["content"]
            form = MemoryEditForm(initial=MemoryEditForm.initial_for(memory))
            _changed_since(request, memory, undone="saved", again="edit it again if it needs it.")
        else:
            messages.success(request, "Saved. Your edit leaves the memory verified by you.")
            return redirect(next_url(request, detail_url))
    following = next_url(request, "")
    return render(
        request,
        "dashboard/memory_edit.html",
        {
            "mind": mind,
            "memory": memory,
            "form": form,
            "unsaved": unsaved,
            "next": following,
            "cancel": _back_to_row(following, memory) if following else "",
        },
    )


@login_required
@require_POST
def memory_verify_view(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    _, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
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
    if not memory.verified:  # else nothing was written, so there is nothing to undo
        offer_undo(request, memory=memory, action="verify")
    return redirect(next_url(request, _detail_url(memory)))


@login_required
@require_POST
def memory_unverify_view(request: HttpRequest, mind_id: str, memory_id: str) -> HttpResponse:
    _, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
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
    mind, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
    list_url = reverse("dashboard:memories", args=[mind.pk])
    if request.method == "POST":
        purge = request.POST.get("purge") == "1"
        try:
            (services.memory_purge if purge else services.memory_delete)(
                memory=memory,
                actor=Actor.for_user(request.user),
                expected_version=_version_shown(request, memory),
            )
        except Stale:
            # This page again, showing what the memory holds now.
            _changed_since(request, memory, undone="deleted", again="delete it if it is wrong.")
        else:
            if purge:
                messages.success(
                    request, f"Purged “{memory.key}”: its values are gone from the audit trail too."
                )
            else:
                messages.success(
                    request, f"Deleted “{memory.key}”. The audit trail keeps its values."
                )
                offer_undo(request, memory=memory, action="delete")
            target = next_url(request, list_url)
            # Back to the deleted memory's own pages would be a 404.
            return redirect(list_url if target.startswith(_detail_url(memory)) else target)
    following = next_url(request, "")
    return render(
        request,
        "dashboard/memory_delete.html",
        {
            "mind": mind,
            "memory": memory,
            "next": following,
            "cancel": _back_to_row(following, memory) if following else "",
        },
    )


@login_required
@require_POST
def memory_restore(
    request: HttpRequest, mind_id: str, memory_id: str, event_id: int
) -> HttpResponse:
    _, memory = mind_memory(request, mind_id, memory_id, need=Level.WRITE)
    detail_url = _detail_url(memory)
    try:
        restored = services.memory_restore(
            memory=memory,
            actor=Actor.for_user(request.user),
            event_id=event_id,
            expected_version=_version_shown(request, memory),
        )
    except NotFound as exc:
        raise Http404(exc.detail) from None
    except Stale:
        _changed_since(request, memory, undone="restored", again="restore it if you still want to.")
    except (Invalid, Conflict) as exc:  # a folded version, a key clash, a full mind
        messages.error(request, f"Could not restore that version: {exc.text()}")
    else:
        if not restored.changed:
            messages.info(request, "That version is what the memory holds now: nothing to restore.")
        else:
            when = restored.entry.event.at.strftime("%Y-%m-%d %H:%M:%S UTC")
            messages.success(request, f"Restored version {restored.entry.number}, of {when}.")
    return redirect(detail_url)


@login_required
def review_queue(request: HttpRequest, mind_id: str) -> HttpResponse:
    mind = mind_at(request, mind_id, need=Level.READ)
    # The same list as GET /memory/unverified and GET /memory/expiring.
    queue = SelectorPages(
        memory_list, mind=mind, filters=MemoryFilters(verified=False), sort="review"
    )
    expiring = memory_list(
        mind=mind, filters=expiring_filters(within=EXPIRING_SOON), sort="expires", limit=20
    )
    page = paged(request, queue)
    here = request.get_full_path()
    shown = list(page)
    flags = memory_flags(mind=mind, memory_ids=[memory.pk for memory in shown])
    rows = []
    for i, memory in enumerate(shown):
        # Where the person lands after acting on this row: the row after it (the row itself
        # leaves the queue), or the one before when it is the last.
        after = shown[i + 1] if i + 1 < len(shown) else shown[i - 1] if i else None
        rows.append(
            {
                "memory": memory,
                "after": f"{here}#row-{after.pk}" if after else here,
                "flags": flags.get(memory.pk, []),
            }
        )
    return render(
        request,
        "dashboard/review.html",
        {
            "mind": mind,
            "page": page,
            "rows": rows,
            "expiring": expiring.memories,
            "expiring_total": expiring.total,
            "expiring_days": EXPIRING_SOON.days,
            "proposal_count": proposals_waiting(mind=mind).count(),
            # An empty queue of a mind that has no memory yet says what will fill it.
            "new_mind": not page.paginator.count and not memory_counts(mind=mind)["total"],
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def verify_matching(request: HttpRequest, mind_id: str) -> HttpResponse:
    """Verify every unverified memory the table's filters and search (or the review queue)
    match, on every page: a page that says how many and asks, then one action. Memories
    written after that page was shown are left as they are."""
    mind = mind_at(request, mind_id, need=Level.WRITE)
    back = next_url(request, reverse("dashboard:memories", args=[mind.pk]))
    form = MemoryFilterForm(request.POST if request.method == "POST" else request.GET)
    if not form.is_valid():  # a filter left out would widen what is verified
        problems = " ".join(
            f"{form.fields[name].label if name in form.fields else ''}: {' '.join(map(str, e))}"
            for name, e in form.errors.items()
        )
        messages.error(request, f"Nothing was verified: {problems}")
        return redirect(back)
    filters, query = form.filters(), form.query()
    if request.method == "POST":
        try:
            result = services.memory_verify_matching(
                mind=mind,
                actor=Actor.for_user(request.user),
                seen_at=parse_timestamp(request.POST.get("seen", "")),
                filters=filters,
                q=query,
                skip_flagged=request.POST.get("skip_flagged") == "on",
            )
        except ValueError:
            messages.error(request, "That form is incomplete: nothing was verified.")
        except Invalid as exc:
            messages.error(request, f"Nothing was verified: {exc.text()}")
        else:
            _verified_matching(request, result)
            if result.batch is not None:
                offer_batch_undo(request, mind=mind, batch=result.batch, count=result.verified)
        return redirect(back)
    seen_at = diff_until(mind=mind)  # every write stamped before it is in the count
    try:
        ids = memory_unverified_matching_ids(mind=mind, filters=filters, q=query)
    except Invalid as exc:
        messages.error(request, f"Nothing to verify: {exc.text()}")
        return redirect(back)
    count = len(ids)
    flagged = flagged_memories(mind=mind, memory_ids=ids)
    return render(
        request,
        "dashboard/verify_matching.html",
        {
            "mind": mind,
            "count": count,
            "flagged": flagged[:FLAGGED_SHOWN],
            "flagged_count": len(flagged),
            "seen": seen_at.isoformat(),
            "described": [
                (form[name].label, _shown_value(form, name))
                for name in form.fields
                if name != "sort" and form.cleaned_data.get(name)
            ],
            "carried": [
                (name, form.cleaned_data[name])
                for name in form.fields
                if name != "sort" and form.cleaned_data.get(name)
            ],
            "next": back,
            "tab": "review"
            if filters == MemoryFilters(verified=False) and not query
            else "memories",
        },
    )


def _shown_value(form: MemoryFilterForm, name: str) -> str:
    """A filter's value as its control shows it (a choice's label)."""
    value = form.cleaned_data[name]
    choices = getattr(form.fields[name], "choices", None)
    return str(dict(choices).get(value, value)) if choices else str(value)


def _verified_matching(request: HttpRequest, result: services.VerifiedMatching) -> None:
    done, changed = result.verified, result.changed
    verified = f"Verified {done:,} memor{'y' if done == 1 else 'ies'}"
    if result.skipped:
        n = result.skipped
        verified += (
            f"; left {n:,} flagged memor{'y' if n == 1 else 'ies'} unverified (contradicting or "
            "nearly repeating another): look at them in the review queue"
        )
    if changed:
        left = f"{changed:,} changed since you looked and {'was' if changed == 1 else 'were'}"
        messages.warning(
            request, f"{verified}; {left} left as {'it is' if changed == 1 else 'they are'}."
        )
    elif done or result.skipped:
        messages.success(request, f"{verified}.")
    else:
        messages.info(request, "Nothing to verify: every memory these filters match is verified.")


@login_required
@require_POST
def memory_undo_view(request: HttpRequest, mind_id: str) -> HttpResponse:
    """Take back the person's verify or delete offered beside its message."""
    mind = mind_at(request, mind_id, need=Level.WRITE)
    back = next_url(request, reverse("dashboard:review", args=[mind.pk])).split("#")[0]
    action = request.POST.get("action", "")
    try:
        undone = services.memory_undo(
            mind=mind,
            actor=Actor.for_user(request.user),
            memory_id=request.POST.get("memory", ""),
            action=action,
        )
    except (Invalid, NotFound, Conflict, Stale) as exc:  # a quota refusal is a Conflict
        messages.warning(request, f"Not undone: {exc.text()}")
        return redirect(back)
    memory = undone.memory
    if undone.action == "verify":
        messages.success(request, f"Undone: “{memory.key}” is unverified again.")
    else:
        messages.success(request, f"Undone: “{memory.key}” is back, as it was.")
    return redirect(f"{back}#row-{memory.pk}")


@login_required
def activity(request: HttpRequest, mind_id: str) -> HttpResponse:
    """The mind's audit trail (as GET /memory/audit), deletions included, newest first."""
    mind = mind_at(request, mind_id, need=Level.READ)
    action = request.GET.get("action") or None
    if action not in MemoryEvent.Action.values:
        action = None
    page = paged(request, SelectorPages(audit.memory_events, mind=mind, action=action))
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
