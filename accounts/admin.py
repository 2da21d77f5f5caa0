from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.forms import UserChangeForm, UserCreationForm
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.models import User

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    # Generic in the stubs only: at runtime these classes cannot be subscripted.
    _CreationForm = UserCreationForm[User]
    _ChangeForm = UserChangeForm[User]
    # The stubs bind UserAdmin to AbstractUser; Django's docs pair it with custom user models.
    _UserAdmin = BaseUserAdmin[User]  # type: ignore[type-var]
else:
    _CreationForm, _ChangeForm, _UserAdmin = UserCreationForm, UserChangeForm, BaseUserAdmin


class _MindCount(TypedDict):
    _mind_count: int


class SynapseUserCreationForm(_CreationForm):
    class Meta:
        model = User
        fields = ("email", "name")


class SynapseUserChangeForm(_ChangeForm):
    class Meta:
        model = User
        fields = "__all__"


@admin.register(User)
class UserAdmin(_UserAdmin):
    form = SynapseUserChangeForm
    add_form = SynapseUserCreationForm
    ordering = ["email"]
    list_display = ["email", "name", "is_staff", "is_active", "mind_count", "date_joined"]
    list_filter = ["is_staff", "is_superuser", "is_active"]
    search_fields = ["email", "name"]
    readonly_fields = ["date_joined", "last_login"]
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("name",)}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("email", "name", "password1", "password2")}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        from django.db.models import Count

        return super().get_queryset(request).annotate(_mind_count=Count("minds"))

    @admin.display(description="Minds", ordering="_mind_count")
    def mind_count(self, obj: WithAnnotations[User, _MindCount]) -> int:
        return obj._mind_count
