"""Admin: inspect and moderate memories, read the audit log.

Memories are read-only here: edits go through the API or the dashboard, whose services keep
tags, verification and the audit trail right. Verify, unverify and delete call the same
services, recorded under the admin's email.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memories import services
from memories.actors import Actor
from memories.fields import ADMIN_FIELDS
from memories.models import Memory, MemoryEvent

if TYPE_CHECKING:
    # Generic in the stubs only: at runtime ModelAdmin cannot be subscripted.
    _MemoryAdminBase = admin.ModelAdmin[Memory]
    _MemoryEventAdminBase = admin.ModelAdmin[MemoryEvent]
else:
    _MemoryAdminBase = _MemoryEventAdminBase = admin.ModelAdmin


def _actor(request: HttpRequest) -> Actor:
    return Actor.for_user(request.user)


@admin.register(Memory)
class MemoryAdmin(_MemoryAdminBase):
    list_display = [
        "key",
        "category",
        "mind",
        "priority",
        "source",
        "verified",
        "expires_at",
        "updated_at",
    ]
    list_filter = ["category", "priority", "source", "verified", "expires_at", "updated_at"]
    search_fields = ["key", "content", "mind__id", "mind__name", "mind__owner__email"]
    list_select_related = ["mind"]
    readonly_fields = list(ADMIN_FIELDS)
    # The stubs type `fields` as an invariant list of field groups, which rejects list[str].
    fields = readonly_fields  # type: ignore[assignment]
    date_hierarchy = "updated_at"
    actions = ["verify_selected", "unverify_selected", "delete_selected_memories"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_actions(
        self, request: HttpRequest
    ) -> dict[str, tuple[Callable[..., str], str, str] | None]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # replaced by one that goes through the service
        return actions

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        pass  # every field is read-only here; writes go through the services

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        services.memory_delete(memory=obj, actor=_actor(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for memory in queryset:
            services.memory_delete(memory=memory, actor=_actor(request))

    @admin.action(description="Verify the selected memories", permissions=["change"])
    def verify_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for memory in queryset:
            services.memory_verify(memory=memory, actor=_actor(request))
        self.message_user(request, f"Verified {len(queryset)} memories.", messages.SUCCESS)

    @admin.action(description="Unverify the selected memories", permissions=["change"])
    def unverify_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for memory in queryset:
            services.memory_unverify(memory=memory, actor=_actor(request))
        self.message_user(request, f"Unverified {len(queryset)} memories.", messages.SUCCESS)

    @admin.action(description="Delete the selected memories", permissions=["delete"])
    def delete_selected_memories(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        count = len(queryset)
        self.delete_queryset(request, queryset)
        self.message_user(request, f"Deleted {count} memories.", messages.SUCCESS)


@admin.register(MemoryEvent)
class MemoryEventAdmin(_MemoryEventAdminBase):
    """The audit log: read-only."""

    list_display = ["at", "action", "memory_id", "category", "key", "actor", "actor_type", "mind"]
    list_filter = ["action", "actor_type", "at"]
    search_fields = ["memory_id", "key", "actor", "mind__id", "mind__name"]
    list_select_related = ["mind"]
    date_hierarchy = "at"
    readonly_fields = [
        "at",
        "action",
        "memory_id",
        "mind",
        "category",
        "key",
        "actor",
        "actor_type",
        "changes",
        "size",
    ]
    fields = readonly_fields  # type: ignore[assignment]  # as in MemoryAdmin

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: MemoryEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: MemoryEvent | None = None) -> bool:
        return False
