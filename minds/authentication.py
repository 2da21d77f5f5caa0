"""`Authorization: Bearer mk_…`: an agent acting for one mind."""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from minds.access import MindAgent
from minds.models import MIND_KEY_PREFIX, Mind
from synapse_site.logs import bind_mind


def bearer_token(request: HttpRequest | Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    # The stubs want a DRF Request; it reads only `.headers`, which Django's request has too.
    header = authentication.get_authorization_header(request).split()  # type: ignore[arg-type]
    if len(header) != 2 or header[0].lower() != b"bearer":
        return None
    try:
        return header[1].decode("ascii")
    except UnicodeDecodeError:
        return None


class MindKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[MindAgent, Mind] | None:
        token = bearer_token(request)
        if token is None or not token.startswith(MIND_KEY_PREFIX):
            return None
        mind = Mind.objects.for_key(token)
        if mind is None:
            raise exceptions.AuthenticationFailed(
                "This Mind Key is not valid: it may have been rotated or revoked."
            )
        bind_mind(mind.pk)
        return MindAgent(mind=mind), mind

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="synapse"'
