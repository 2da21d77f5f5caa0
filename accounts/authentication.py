"""JWT bearer authentication that leaves Mind Keys to their own class."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework_simplejwt.authentication import JWTAuthentication

from minds.authentication import bearer_token
from minds.models import MIND_KEY_PREFIX


class BearerJWTAuthentication(JWTAuthentication):
    """simplejwt's class, but a `Bearer mk_…` token is never parsed as a JWT.

    The Mind Key class runs first and answers for every `mk_` token (valid or not); this
    guard keeps the two from shadowing each other if the order ever changes.
    """

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        token = bearer_token(request)
        if token is not None and token.startswith(MIND_KEY_PREFIX):
            return None
        return super().authenticate(request)
