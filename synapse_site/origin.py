"""This server's address as its clients reach it."""

from __future__ import annotations

from django.http import HttpRequest


def origin(request: HttpRequest) -> str:
    """Scheme and host of this server as the request reached it (behind a proxy, as
    SECURE_PROXY_SSL_HEADER and USE_X_FORWARDED_HOST say), without a trailing slash."""
    return request.build_absolute_uri("/").rstrip("/")
