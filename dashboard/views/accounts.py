"""Sign-up: the same `user_register` service as `POST /register`, then a session."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from rest_framework.exceptions import ValidationError

from accounts.services import user_register
from dashboard.forms import SignupForm

# user_register names the password field `password`; the form has two.
FORM_FIELD = {"password": "password1"}


@require_http_methods(["GET", "POST"])
def signup(request):
    if not settings.SYNAPSE_ALLOW_REGISTRATION:
        return render(request, "registration/signup_closed.html", status=403)
    if request.user.is_authenticated:
        return redirect("dashboard:minds")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = user_register(
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password1"],
                name=form.cleaned_data["name"],
            )
        except ValidationError as exc:
            for field, messages in exc.detail.items():
                for message in messages:
                    form.add_error(FORM_FIELD.get(field, field), str(message))
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("dashboard:minds")
    return render(request, "registration/signup.html", {"form": form})
