from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from minds.access import is_human


class IsHuman(BasePermission):
    """Signed-in people only: a Mind Key is refused with 403."""

    message = "This needs a person's login (JWT); a Mind Key cannot do it."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return is_human(request.user)
