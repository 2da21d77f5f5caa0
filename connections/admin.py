from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from connections.models import Connection
from connections.services import disconnect

if TYPE_CHECKING:
    _ConnectionAdminBase = admin.ModelAdmin[Connection]
else:
    _ConnectionAdminBase = admin.ModelAdmin


@admin.register(Connection)
class ConnectionAdmin(_ConnectionAdminBase):
    list_display = ["application", "person", "mind", "connected_at", "last_used_at"]
    list_select_related = ["application", "person", "mind"]
    search_fields = ["application__name", "application__client_id", "person__email", "mind__name"]
    readonly_fields = ["application", "person", "mind", "resource", "connected_at", "last_used_at"]
    ordering = ["-connected_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a connection is a person's consent, given on the consent page

    def delete_model(self, request: HttpRequest, obj: Connection) -> None:
        disconnect(connection=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Connection]) -> None:
        for connection in queryset.select_related("application", "person"):
            disconnect(connection=connection)
