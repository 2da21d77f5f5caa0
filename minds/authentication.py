"""`Authorization: Bearer mk_…`: an agent acting for one mind."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions

from minds.models import MIND_KEY_PREFIX, Mind


def bearer_token(request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    header = authentication.get_authorization_header(request).split()
    if len(header) != 2 or header[0].lower() != b"bearer":
        return None
    try:
        return header[1].decode("ascii")
    except UnicodeDecodeError:
        return None


@dataclass(eq=False)
class MindAgent:
    """`request.user` for a Mind Key: an agent, never a human, bound to one mind."""

    mind: Mind
    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    @property
    def actor(self) -> str:
        return self.mind.key_prefix

    def __str__(self) -> str:
        return f"agent {self.mind.key_prefix}"


class MindKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        token = bearer_token(request)
        if token is None or not token.startswith(MIND_KEY_PREFIX):
            return None
        mind = Mind.objects.for_key(token)
        if mind is None:
            raise exceptions.AuthenticationFailed(
                "This Mind Key is not valid: it may have been rotated or revoked."
            )
        return MindAgent(mind=mind), mind

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="synapse"'


def is_human(user) -> bool:
    """True for a signed-in person (JWT or session), false for agents and anonymous."""
    return bool(user and user.is_authenticated and not isinstance(user, MindAgent))
