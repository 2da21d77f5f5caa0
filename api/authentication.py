"""Who is calling the API: `Authorization: Bearer mk_…` is an agent acting for one mind, any
other bearer token a person's JWT. The Mind Key class runs first; neither shadows the other."""

from __future__ import annotations

from typing import Any

from rest_framework import authentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import ExpiredTokenError, TokenError
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken, Token

from accounts.models import User
from api.tokens import is_token_of, token_user
from minds.access import MindAgent
from minds.models import MIND_KEY_PREFIX, Mind
from synapse_site.credentials import bearer_token
from synapse_site.logs import bind_mind

BEARER_WORDS = (b"Bearer", b"bearer")


class MindKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[MindAgent, Mind] | None:
        token = bearer_token(request)
        if token is None or not token.startswith(MIND_KEY_PREFIX):
            return None
        mind = Mind.objects.for_key(token)
        if mind is None:
            raise AuthenticationFailed(
                "This Mind Key is not valid: it may have been rotated or revoked."
            )
        bind_mind(mind.pk)
        return MindAgent(mind=mind), mind

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="synapse"'


class BearerJWTAuthentication(JWTAuthentication):
    """simplejwt's class, but a `Bearer mk_…` token is never parsed as a JWT.

    The Mind Key class runs first and answers for every `mk_` token (valid or not); this
    guard keeps the two from shadowing each other if the order ever changes. The account
    behind a token is checked by api.tokens (deleted, deactivated, password changed,
    logged out), and every refusal is one plain sentence saying what to do.
    """

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        token = bearer_token(request)
        if token is not None and token.startswith(MIND_KEY_PREFIX):
            return None
        return super().authenticate(request)

    def get_raw_token(self, header: bytes) -> bytes | None:
        parts = header.split()
        if parts and parts[0] in BEARER_WORDS and len(parts) != 2:
            raise AuthenticationFailed(
                "The Authorization header must be `Bearer <token>`, one token after one space "
                "(a Mind Key mk_… or the `access` token of POST /login).",
                code="bad_authorization_header",
            )
        return super().get_raw_token(header)

    def get_validated_token(self, raw_token: bytes) -> Token:
        try:
            return AccessToken(raw_token)  # type: ignore[arg-type]  # the stubs want a str
        except ExpiredTokenError:
            detail = (
                "Your access token has expired: get a new one with POST /token/refresh "
                "with your refresh token, or log in again with POST /login."
            )
        except TokenError:
            detail = (
                "This is not a valid access token of this server: log in with POST /login and "
                "send its `access` token, or send a Mind Key (mk_…)."
            )
            if is_token_of(RefreshToken, raw_token):
                detail = (
                    "This is a refresh token: send it to POST /token/refresh for an access "
                    "token, and send that one here."
                )
        raise AuthenticationFailed(detail, code="token_not_valid")

    # simplejwt types this with a TypeVar bound to nothing in the signature.
    def get_user(self, validated_token: Token) -> User:  # type: ignore[override]
        return token_user(validated_token)
