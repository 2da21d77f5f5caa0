"""The admin's view of chats: messages and the chat's audit trail, read-only (a message is
written through the API, the dashboard or MCP, whose services number, audit and announce
it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest

from chat.models import ChatEvent, ChatMessage

if TYPE_CHECKING:
    _MessageAdminBase = admin.ModelAdmin[ChatMessage]
    _EventAdminBase = admin.ModelAdmin[ChatEvent]
else:
    _MessageAdminBase = _EventAdminBase = admin.ModelAdmin


class _ReadOnly:
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ChatMessage)
class ChatMessageAdmin(_ReadOnly, _MessageAdminBase):
    list_display = ["number", "mind", "role", "author", "short_content", "created_at", "read_at"]
    list_filter = ["role", "created_at"]
    search_fields = ["content", "mind__id", "mind__name", "author__email"]
    list_select_related = ["mind", "author"]
    date_hierarchy = "created_at"

    @admin.display(description="content")
    def short_content(self, message: ChatMessage) -> str:
        return message.content[:80]


@admin.register(ChatEvent)
class ChatEventAdmin(_ReadOnly, _EventAdminBase):
    list_display = ["at", "action", "mind", "actor", "number", "count", "memory_id"]
    list_filter = ["action", "actor_type", "at"]
    search_fields = ["actor", "mind__id", "mind__name", "memory_id"]
    list_select_related = ["mind"]
    date_hierarchy = "at"
