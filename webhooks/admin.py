"""The admin's view of webhooks: each with its recent deliveries; enabling and disabling go
through the service, so a re-enabled webhook sends what waited."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from webhooks import services
from webhooks.models import Webhook, WebhookDelivery

if TYPE_CHECKING:
    _WebhookAdminBase = admin.ModelAdmin[Webhook]
    _DeliveryInlineBase = admin.TabularInline[WebhookDelivery, Webhook]
else:
    _WebhookAdminBase = admin.ModelAdmin
    _DeliveryInlineBase = admin.TabularInline

# Deliveries shown on a webhook's page: the newest.
INLINE_DELIVERIES = 20


class DeliveryInline(_DeliveryInlineBase):
    model = WebhookDelivery
    fields = ["id", "seq", "status", "attempts", "response_status", "error", "created_at"]
    readonly_fields = fields
    ordering = ["-created_at"]
    can_delete = False
    extra = 0
    show_change_link = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookDelivery]:
        newest = super().get_queryset(request).order_by("-created_at")
        ids = list(newest.values_list("pk", flat=True)[:INLINE_DELIVERIES])
        return super().get_queryset(request).filter(pk__in=ids)

    def has_add_permission(self, request: HttpRequest, obj: Webhook | None = None) -> bool:
        return False


@admin.register(Webhook)
class WebhookAdmin(_WebhookAdminBase):
    list_display = ["url", "id", "mind", "enabled", "disabled_reason", "created_at"]
    list_filter = ["enabled", "created_at"]
    search_fields = ["id", "url", "mind__id", "mind__name", "mind__owner__email"]
    list_select_related = ["mind"]
    fields = [
        "id",
        "mind",
        "url",
        "events",
        "enabled",
        "disabled_reason",
        "disabled_at",
        "previous_secret_until",
        "paused_until",
        "created_at",
        "updated_at",
    ]
    readonly_fields = fields  # changed only through the actions, which use the service
    inlines = [DeliveryInline]
    actions = ["enable", "disable"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # registered by the mind's agent or owner, who receive the secret

    @admin.action(description="Enable the selected webhooks (send what waited)")
    def enable(self, request: HttpRequest, queryset: QuerySet[Webhook]) -> None:
        for webhook in queryset:
            services.webhook_update(webhook=webhook, body={"enabled": True})
        messages.success(request, f"Enabled {queryset.count()} webhooks.")

    @admin.action(description="Disable the selected webhooks")
    def disable(self, request: HttpRequest, queryset: QuerySet[Webhook]) -> None:
        for webhook in queryset:
            services.webhook_update(webhook=webhook, body={"enabled": False})
        messages.success(request, f"Disabled {queryset.count()} webhooks.")
