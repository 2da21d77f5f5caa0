from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from minds import services
from minds.models import USAGE_FIELDS, Mind, Share

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    # Generic in the stubs only: at runtime ModelAdmin cannot be subscripted.
    _MindAdminBase = admin.ModelAdmin[Mind]
    _ShareInlineBase = admin.TabularInline[Share, Mind]
else:
    _MindAdminBase = admin.ModelAdmin
    _ShareInlineBase = admin.TabularInline


class _MemoryCount(TypedDict):
    _memory_count: int


# The new mind's raw key, from save_model to response_add: on the request, in memory only.
NEW_KEY_ATTR = "_synapse_new_mind_key"


def keys_page(
    request: HttpRequest,
    model_admin: MindAdmin,
    title: str,
    intro: str,
    keys: list[tuple[Mind, str]],
) -> TemplateResponse:
    """The one page that shows new keys: rendered directly, never stored in a message,
    a cookie or the session."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "intro": intro,
        "keys": keys,
        "opts": model_admin.model._meta,
    }
    response = TemplateResponse(request, "admin/minds/rotated_keys.html", context)
    response["Cache-Control"] = "no-store"
    return response


class ShareInline(_ShareInlineBase):
    """The mind's shares: who is invited, at which level, and whether they signed in since."""

    model = Share
    extra = 0
    fields = ["email", "acl", "user", "status", "created_at"]
    readonly_fields = ["user", "status", "created_at"]

    @admin.display(description="Status")
    def status(self, obj: Share) -> str:
        return obj.status


@admin.register(Mind)
class MindAdmin(_MindAdminBase):
    list_display = ["name", "id", "owner", "key_prefix", "memory_count", "created_at"]
    list_filter = ["created_at", ("owner", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["id", "name", "description", "owner__email", "key_prefix"]
    list_select_related = ["owner"]
    # What the mind holds (USAGE_FIELDS): content against SYNAPSE_MAX_MIND_BYTES, earlier
    # values in its audit trail against SYNAPSE_MAX_HISTORY_BYTES.
    readonly_fields = [
        "id",
        "key_prefix",
        "key_created_at",
        "created_at",
        "updated_at",
        *USAGE_FIELDS,
    ]
    fields = ["id", "owner", "name", "description", *readonly_fields[1:]]
    autocomplete_fields = ["owner"]
    actions = ["rotate_keys", "revoke_keys"]

    def get_inlines(
        self, request: HttpRequest, obj: Mind | None
    ) -> list[type[admin.options.InlineModelAdmin[Any, Any]]]:
        # Shares once the mind exists: the add page stays the one form it was.
        return [] if obj is None else [ShareInline]

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        for share_form in formset.forms:
            if isinstance(share_form.instance, Share) and share_form.instance.email:
                # As an invitation by the API: the address as accounts keep theirs.
                share_form.instance.email = services.share_email(share_form.instance.email)
        super().save_formset(request, form, formset, change)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Mind]:
        return super().get_queryset(request).annotate(_memory_count=Count("memories"))

    @admin.display(description="Memories", ordering="_memory_count")
    def memory_count(self, obj: WithAnnotations[Mind, _MemoryCount]) -> int:
        return obj._memory_count

    def save_model(self, request: HttpRequest, obj: Mind, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        # Staff decide for the accounts they manage: the per-account cap is for self-service.
        mind, raw_key = services.mind_create(
            owner=obj.owner, name=obj.name, description=obj.description, over_limit=True
        )
        obj.pk = mind.pk
        setattr(request, NEW_KEY_ATTR, raw_key)

    def response_add(
        self, request: HttpRequest, obj: Mind, post_url_continue: str | None = None
    ) -> HttpResponse:
        raw_key = getattr(request, NEW_KEY_ATTR, None)
        if raw_key is None:
            return super().response_add(request, obj, post_url_continue)
        intro = "Mind created. Its key is shown only now, on this page: copy it now."
        return keys_page(request, self, "New Mind Key", intro, [(obj, raw_key)])

    @admin.action(description="Rotate the key of the selected minds (shows the new keys once)")
    def rotate_keys(self, request: HttpRequest, queryset: QuerySet[Mind]) -> TemplateResponse:
        rotated = [(mind, services.mind_rotate_key(mind=mind)) for mind in queryset]
        intro = (
            "The old keys stopped working. Each new key is shown only on this page: copy it now."
        )
        return keys_page(request, self, "New Mind Keys", intro, rotated)

    @admin.action(description="Revoke the key of the selected minds")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[Mind]) -> None:
        for mind in queryset:
            services.mind_revoke_key(mind=mind)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")
