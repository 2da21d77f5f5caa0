"""The bearer token a request carries, for every face that reads one (API, MCP, /metrics)."""

from __future__ import annotations

from django.http import HttpRequest


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if isinstance(header, str):
        # As the WSGI server decoded it; a token is ASCII, so anything else is no token.
        header = header.encode("iso-8859-1", errors="replace")
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != b"bearer":
        return None
    try:
        return parts[1].decode("ascii")
    except UnicodeDecodeError:
        return None
