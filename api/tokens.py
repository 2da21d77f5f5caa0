"""A person's JWTs: issued at login, checked on every use and at refresh, ended by logout.

A deleted or deactivated account, a changed password and a logout each end them.
Design notes: docs/internals.md#a-persons-tokens.
"""

from __future__ import annotations

from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed
from rest_framework_simplejwt.exceptions import ExpiredTokenError, TokenError
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken, Token
from rest_framework_simplejwt.utils import datetime_from_epoch, get_md5_hash_password

from accounts.models import RevokedToken, User

# The refresh token a token belongs to (a refresh token names itself).
REFRESH_CLAIM = "refresh_jti"

LOG_IN_AGAIN = "Log in again with POST /login."


def tokens_for(*, user: User) -> dict[str, str]:
    """A fresh access and refresh token pair for `user`."""
    refresh = RefreshToken.for_user(user)
    refresh[REFRESH_CLAIM] = refresh[api_settings.JTI_CLAIM]
    return {"access": str(refresh.access_token), "refresh": str(refresh)}


def token_user(token: Token) -> User:
    """The account a valid token speaks for; AuthenticationFailed when the token was revoked."""
    user_id = token.get(api_settings.USER_ID_CLAIM)
    user = User.objects.filter(pk=user_id).first() if user_id is not None else None
    if user is None:
        raise AuthenticationFailed(
            "The account of this token no longer exists.", code="user_not_found"
        )
    if not user.is_active:
        raise AuthenticationFailed("This account is deactivated.", code="user_inactive")
    if token.get(api_settings.REVOKE_TOKEN_CLAIM) != get_md5_hash_password(user.password):
        raise AuthenticationFailed(
            f"This token was revoked: the account's password changed. {LOG_IN_AGAIN}",
            code="password_changed",
        )
    refresh_jti = token.get(REFRESH_CLAIM)
    if refresh_jti is not None and RevokedToken.objects.filter(jti=refresh_jti).exists():
        raise AuthenticationFailed(f"This token was logged out. {LOG_IN_AGAIN}", code="logged_out")
    return user


def is_token_of(kind: type[Token], raw: str | bytes) -> bool:
    """Whether `raw` is a valid, unexpired token of `kind` (to tell a caller who sent the
    other kind of token which one to send)."""
    try:
        kind(raw)  # type: ignore[arg-type]  # the stubs want bytes; str works
    except TokenError:
        return False
    return True


def _refresh_token(raw: str) -> RefreshToken:
    try:
        return RefreshToken(raw)  # type: ignore[arg-type]  # the stubs want bytes; str works
    except ExpiredTokenError:
        detail = f"This refresh token has expired. {LOG_IN_AGAIN}"
    except TokenError:
        detail = f"This is not a valid refresh token of this server. {LOG_IN_AGAIN}"
        if is_token_of(AccessToken, raw):
            detail = (
                "This is an access token: send the `refresh` token that POST /login gave with "
                f"it. {LOG_IN_AGAIN}"
            )
    raise AuthenticationFailed(detail, code="token_not_valid")


def access_token_refresh(*, refresh: str) -> str:
    """A new access token from a refresh token that is still good."""
    token = _refresh_token(refresh)
    jti = token.get(api_settings.JTI_CLAIM)
    if RevokedToken.objects.filter(jti=jti).exists():
        raise AuthenticationFailed(
            f"This refresh token was logged out. {LOG_IN_AGAIN}", code="logged_out"
        )
    token_user(token)
    return str(token.access_token)


def refresh_token_revoke(*, refresh: str) -> None:
    """Log a refresh token out, with every access token made from it. Repeating is harmless."""
    token = _refresh_token(refresh)
    expires_at = datetime_from_epoch(token["exp"])
    RevokedToken.objects.get_or_create(
        jti=token.get(REFRESH_CLAIM) or token[api_settings.JTI_CLAIM],
        defaults={"expires_at": expires_at},
    )
    # Past its expiry a token is refused anyway: its row is no longer needed.
    RevokedToken.objects.filter(expires_at__lt=timezone.now()).delete()
