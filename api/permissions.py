from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from minds.access import MindAgent, is_human


class IsHuman(BasePermission):
    """Signed-in people only: a Mind Key is refused with 403."""

    message = "This needs a person's login (JWT); a Mind Key cannot do it."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return is_human(request.user)


class IsAgent(BasePermission):
    """A mind's agent only (its Mind Key): a person is refused with 403."""

    message = (
        "This is the agent's side of the chat: call it with the mind's Mind Key. "
        "People use GET /chat/history, GET /chat/unread and POST /chat/send."
    )

    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.user, MindAgent)
