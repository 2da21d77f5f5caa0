"""Bulk actions on the memories a person ticks (review queue, memory table), and the Undo of
a whole batch offered beside their message; every write via the services."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import Conflict, Forbidden, Invalid, NotFound, Stale
from dashboard.views.common import mind_at, next_url, offer_batch_undo
from memories import services
from memories.actors import Actor
from memories.rules import parse_timestamp
from minds.access import Level
from minds.models import Mind


def _memories(count: int) -> str:
    return f"{count:,} memor{'y' if count == 1 else 'ies'}"


def _tags(request: HttpRequest) -> list[str]:
    """The tags the form names: one field, several tags separated by commas."""
    return [tag for tag in request.POST.get("tag", "").split(",") if tag.strip()]


# What each bulk action says it did, of N memories.
DONE = {
    "verify": "Verified {n}.",
    "unverify": "{n} unverified again.",
    "delete": "Deleted {n}. The audit trail keeps their values.",
    "tag": "Added {tags} to {n}.",
    "untag": "Took {tags} off {n}.",
}
# What the rows that changed since were not.
NOT_DONE = {
    "verify": "verified",
    "unverify": "unverified",
    "delete": "deleted",
    "tag": "tagged",
    "untag": "untagged",
}
# What it says when nothing was ticked.
NOTHING = {
    "verify": "Tick the memories to verify first.",
    "unverify": "Tick the memories to unverify first.",
    "delete": "Tick the memories to delete first.",
    "tag": "Tick the memories to tag first.",
    "untag": "Tick the memories to take the tag off first.",
}


@login_required
@require_POST
def bulk_change(request: HttpRequest, mind_id: str, action: str) -> HttpResponse:
    """Verify, unverify, delete, tag or untag the ticked memories (`memory`, each with the
    `version-<id>` its row showed); the message offers Undo of the whole batch."""
    mind = mind_at(request, mind_id, need=Level.WRITE)
    if action not in DONE:
        raise Http404("No such bulk action.")
    back = next_url(request, reverse("dashboard:review", args=[mind.pk]))
    ticked = request.POST.getlist("memory")
    if not ticked:
        messages.info(request, NOTHING[action])
        return redirect(back)
    # Scoped by the mind: ids of other minds simply match nothing.
    versions = {pk: request.POST.get(f"version-{pk}", "") for pk in ticked}
    tags = _tags(request)
    try:
        result = _bulk(action, mind, Actor.for_user(request.user), ticked, versions, tags)
    except (Invalid, Conflict) as exc:
        messages.error(request, f"Nothing was changed: {exc.text()}")
        return redirect(back)
    done, stale, batch = result.changed, result.stale, result.batch
    named = ", ".join(f"“{tag.strip().lower()}”" for tag in tags)
    if done:
        messages.success(request, DONE[action].format(n=_memories(done), tags=named))
        if batch is not None:
            offer_batch_undo(request, mind=mind, batch=batch, count=done)
    if stale:
        keys = ", ".join(f"“{memory.key}”" for memory in stale)
        messages.warning(
            request,
            f"Changed since you loaded the page, so not {NOT_DONE[action]}: {keys}. They are "
            f"shown again with what they hold now: {action} them if that still applies.",
        )
    elif not done:
        messages.info(request, "Nothing to change: the ticked memories already were so.")
    if action == "delete" and done:
        # Back to a deleted memory's own pages would be a 404.
        memories_url = reverse("dashboard:memories", args=[mind.pk])
        if "/memories/mem_" in back.split("?")[0]:
            back = memories_url
    return redirect(back)


def _bulk(
    action: str,
    mind: Mind,
    actor: Actor,
    ticked: list[str],
    versions: dict[str, str],
    tags: list[str],
) -> services.ChangedMany:
    """Run the service of a bulk action."""
    if action == "verify":
        verified = services.memory_verify_many(
            mind=mind, actor=actor, memory_ids=ticked, expected_versions=versions
        )
        return services.ChangedMany(verified.verified, verified.stale, verified.batch)
    if action == "unverify":
        return services.memory_unverify_many(
            mind=mind, actor=actor, memory_ids=ticked, expected_versions=versions
        )
    if action == "delete":
        return services.memory_delete_many(
            mind=mind, actor=actor, memory_ids=ticked, expected_versions=versions
        )
    return services.memory_retag_many(
        mind=mind,
        actor=actor,
        memory_ids=ticked,
        add=tags if action == "tag" else (),
        remove=tags if action == "untag" else (),
        expected_versions=versions,
    )


# What an undone batch says, of N memories.
UNDONE = {
    "verify": "{n} unverified again.",
    "unverify": "{n} verified again, as before.",
    "delete": "put back {n} as they were, at their own addresses.",
    "update": "put the tags of {n} back as they were.",
}


@login_required
@require_POST
def batch_undo(request: HttpRequest, mind_id: str) -> HttpResponse:
    """Take back the person's bulk action offered beside its message, as a whole."""
    mind = mind_at(request, mind_id, need=Level.WRITE)
    back = next_url(request, reverse("dashboard:review", args=[mind.pk])).split("#")[0]
    try:
        batch = services.Batch(request.POST.get("batch", ""), parse_timestamp(request.POST["at"]))
    except (KeyError, ValueError):
        messages.error(request, "That form is incomplete: nothing was undone.")
        return redirect(back)
    try:
        undone = services.memory_undo_batch(
            mind=mind, actor=Actor.for_user(request.user), batch=batch
        )
    except (Invalid, NotFound, Conflict, Stale, Forbidden) as exc:
        messages.warning(request, f"Not undone: {exc.text()}")
        return redirect(back)
    said = UNDONE[undone.action].format(n=_memories(len(undone.undone)))
    if undone.left:
        left = undone.left
        messages.warning(
            request,
            f"Undone: {said} {_memories(left)} changed since and {'was' if left == 1 else 'were'} "
            f"left as {'it is' if left == 1 else 'they are'}.",
        )
    else:
        messages.success(request, f"Undone: {said}")
    return redirect(back)
