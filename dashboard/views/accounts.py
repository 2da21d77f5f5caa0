"""Log in, sign up (a new account is logged in at once) and change a password with a
session: Django's views, the API's service and rate limit.

Every password form (these log-in pages, the password changes, the admin's) shares the
per-address login budget with `POST /login`, and django-axes locks an (email, address) pair
out after repeated wrong passwords, old passwords on a change form included
(synapse_site/lockout.py).
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.services import user_register
from core.errors import Invalid
from dashboard.forms import LoginForm, PasswordChangeForm, SignupForm
from minds.services import share_claim
from synapse_site.throttling import LoginRateThrottle


def too_many_attempts(request: HttpRequest) -> HttpResponse | None:
    """A 429 page when this address used up the login budget (shared with `POST /login`)."""
    throttle = LoginRateThrottle()
    if throttle.allow_request(request, None):
        return None
    wait = math.ceil(throttle.wait() or 60)
    return render(request, "registration/too_many_attempts.html", {"wait": wait}, status=429)


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return too_many_attempts(request) or super().post(request, *args, **kwargs)

    def form_valid(self, form: Any) -> HttpResponse:
        share_claim(user=form.get_user())
        return super().form_valid(form)


def admin_login(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
    """The admin's log-in page, with the same per-address budget as the others."""
    if request.method == "POST" and (refused := too_many_attempts(request)):
        return refused
    return admin.site.login(request, extra_context)


class PasswordChangeView(auth_views.PasswordChangeView):
    """The old password is a password guess like a login's: same budget, same lockout."""

    form_class = PasswordChangeForm

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return too_many_attempts(request) or super().post(request, *args, **kwargs)


@admin.site.admin_view
def admin_password_change(request: HttpRequest) -> HttpResponseBase:
    """The admin's own password change (staff only), with the dashboard's form and checks."""
    request.current_app = admin.site.name
    view = PasswordChangeView.as_view(
        success_url=reverse("admin:password_change_done"),
        extra_context=admin.site.each_context(request),
    )
    return view(request)


# A new account is logged in at once. An address that already had one gets this page and
# no session: that difference is the one thing the form tells about an address (the API's
# `POST /register` tells nothing), docs/security.md says why it is accepted.
SIGNED_UP = "Your account is ready and you are logged in."
ALREADY_AN_ACCOUNT = (
    "This address already has an account, left as it was: log in with its password."
)


# user_register names the password field `password`; the form has two.
FORM_FIELD = {"password": "password1"}


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if not settings.SYNAPSE_ALLOW_REGISTRATION:
        return render(request, "registration/signup_closed.html", status=403)
    if request.user.is_authenticated:
        return redirect("dashboard:minds")
    if request.method == "POST" and (refused := too_many_attempts(request)):
        return refused
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = user_register(
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password1"],
                name=form.cleaned_data["name"],
            )
        except Invalid as exc:
            for field, field_messages in exc.fields.items():
                for message in field_messages:
                    form.add_error(FORM_FIELD.get(field, field), str(message))
        else:
            if user is None:
                messages.info(request, ALREADY_AN_ACCOUNT)
                return redirect("login-page")
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, SIGNED_UP)
            return redirect("dashboard:minds")
    return render(request, "registration/signup.html", {"form": form})
