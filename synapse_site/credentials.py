"""The bearer token a request carries, for every face that reads one (API, MCP, /metrics)."""

from __future__ import annotations

from django.http import HttpRequest


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    header: str = request.headers.get("Authorization", "")
    # Split as bytes, as DRF and simplejwt read the header: on ASCII white space only.
    parts = header.encode("iso-8859-1", errors="replace").split()
    if len(parts) != 2 or parts[0].lower() != b"bearer" or not parts[1].isascii():
        return None  # a token is ASCII: anything else is no token
    return parts[1].decode("ascii")
