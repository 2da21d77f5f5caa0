"""Per-credential rate limits (SYNAPSE_RATE_LIMIT) and a stricter one for login.

Counted atomically in the cache, so the gunicorn workers of one machine (the default file
cache in data/cache/) or of several hosts (one Redis, CACHE_URL) enforce one limit: DRF's
SimpleRateThrottle reads a request log, appends and writes it back, and two workers doing
that at once each let a request through on the same count. Here each request is one atomic
increment of a counter that lives for the rate's period from the first request counted
(Redis INCR; the file cache increments under a lock on its directory, synapse_site/cache.py):
at most N requests per window, never more, whatever the number of workers.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from minds.access import MindAgent

if TYPE_CHECKING:
    # Annotations only: DRF imports this module while rest_framework.views loads.
    from django.http import HttpRequest
    from rest_framework.request import Request
    from rest_framework.views import APIView

    # The mixin is only ever combined with SimpleRateThrottle, whose attributes it uses.
    _ThrottleBase = SimpleRateThrottle
else:
    _ThrottleBase = object


def client_address(request: HttpRequest | Request) -> str | None:
    """The client's address as every limit counts it: X-Forwarded-For is believed only as far
    as SYNAPSE_NUM_PROXIES proxies of ours wrote it (DRF's rule, also used for the lockout).
    None when that is not an IP address (a forged header behind a miscounted proxy)."""
    ident = BaseThrottle().get_ident(request)  # type: ignore[arg-type]  # reads .META only
    try:
        return str(ipaddress.ip_address(ident))
    except ValueError:
        return None


class SettingsRateMixin:
    """Read the rate when a request comes, not at import (settings can change in tests)."""

    scope: str

    def get_rate(self) -> str | None:
        # The stubs type the rates as numbers; DRF's are strings such as "10/min".
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)  # type: ignore[return-value]


class AtomicCountMixin(_ThrottleBase):
    """allow_request/wait as one atomic counter per (scope, credential) and window."""

    # Set by SimpleRateThrottle.__init__ from the rate; the stubs do not declare them.
    num_requests: int
    duration: int

    def allow_request(self, request: Any, view: Any) -> bool:
        return self.admit(request, view, 1) == 1

    def admit(self, request: Any, view: Any, cost: int) -> int:
        """Count `cost` requests at once (an MCP batch's calls); how many of them fit in
        what the window had left, from 0 to `cost`. All are counted, as a refused request is."""
        if self.rate is None:
            return cost
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return cost
        self.now = self.timer()
        started_key = self.key + ":start"
        for _ in range(3):
            # add() only writes a missing key (SET NX on Redis): the first request of a
            # window starts it; the start time is kept beside it for Retry-After.
            self.cache.add(started_key, self.now, self.duration)
            self.cache.add(self.key, 0, self.duration)
            try:
                count = self.cache.incr(self.key, cost)
            except ValueError:  # the window expired between add() and incr(): start again
                continue
            return max(0, min(cost, self.num_requests - (count - cost)))
        return cost  # the cache keeps losing the key: do not refuse for our own trouble

    def wait(self) -> float | None:
        assert self.key is not None  # wait() follows a refusal, and allow_request set the key
        started: float | None = self.cache.get(self.key + ":start")
        if started is None:
            return None
        return max(1.0, self.duration - (self.now - started))


class CredentialRateThrottle(AtomicCountMixin, SettingsRateMixin, SimpleRateThrottle):
    """One bucket per Mind Key's mind, per user, or per client address when anonymous."""

    scope = "credential"

    def get_cache_key(self, request: Request, view: APIView | None) -> str:
        user = request.user
        if isinstance(user, MindAgent):
            ident = f"mind:{user.mind.pk}"
        elif user is not None and user.is_authenticated:
            ident = f"user:{user.pk}"
        else:
            ident = f"ip:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class LoginRateThrottle(AtomicCountMixin, SettingsRateMixin, SimpleRateThrottle):
    """Password guessing is slowed per client address."""

    scope = "login"

    def get_cache_key(self, request: Request, view: APIView | None) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class RegistrationRateThrottle(AtomicCountMixin, SettingsRateMixin, SimpleRateThrottle):
    """OAuth client registrations (open to anyone) are limited per client address."""

    scope = "oauth_register"

    def get_cache_key(self, request: Request, view: APIView | None) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
