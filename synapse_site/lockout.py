"""The lockout after repeated failed logins (django-axes), as Synapse configures it.

Failures are counted per (email, client address) on every password form: the API's
`POST /login`, the dashboard's log-in page and the admin's, and the old password of their
password change forms. After SYNAPSE_LOGIN_FAILURE_LIMIT
failures that pair is refused for SYNAPSE_LOGIN_COOLOFF_MINUTES, the right password included;
the person from another address, and other accounts from this one, are not affected.
"""

from __future__ import annotations

import math
from typing import Any

from axes.helpers import get_cool_off  # type: ignore[import-untyped]
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.models import email_normalized

# The URL names of the password change forms (dashboard, admin): their page says so.
PASSWORD_CHANGES = frozenset({"password_change", "admin-password-change"})


def attempted_email(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """The email a login attempt names, as the login compares it (case-insensitively)."""
    raw = (credentials or {}).get("username")
    if raw is None:
        raw = request.POST.get("username")
    if not isinstance(raw, str):
        return None
    return email_normalized(raw.strip())


def cool_off_seconds() -> int:
    cool_off = get_cool_off()
    return math.ceil(cool_off.total_seconds()) if cool_off else 0


def locked_out_page(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any
) -> HttpResponse:
    """The page a locked-out login form gets: 429, like every other "too many"."""
    wait = cool_off_seconds()
    match = request.resolver_match
    response = render(
        request,
        "registration/locked_out.html",
        {
            "minutes": math.ceil(wait / 60),
            "changing_password": match is not None and match.url_name in PASSWORD_CHANGES,
        },
        status=429,
    )
    response["Retry-After"] = str(wait)
    return response
