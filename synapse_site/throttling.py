"""Per-credential rate limits (SYNAPSE_RATE_LIMIT) and a stricter one for login."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from minds.authentication import MindAgent


class SettingsRateMixin:
    """Read the rate when a request comes, not at import (settings can change in tests)."""

    scope: str

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class CredentialRateThrottle(SettingsRateMixin, SimpleRateThrottle):
    """One bucket per Mind Key's mind, per user, or per client address when anonymous."""

    scope = "credential"

    def get_cache_key(self, request, view):
        user = request.user
        if isinstance(user, MindAgent):
            ident = f"mind:{user.mind.pk}"
        elif user is not None and user.is_authenticated:
            ident = f"user:{user.pk}"
        else:
            ident = f"ip:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class LoginRateThrottle(SettingsRateMixin, SimpleRateThrottle):
    """Password guessing is slowed per client address."""

    scope = "login"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
