"""Which face a path belongs to, from the one setting that places them (FACE_PREFIXES).

The API (and the MCP endpoint, the guide, /health) answers every path no face claims.
"""

from __future__ import annotations

from django.conf import settings

# Pages for people: they read their own forms, and their errors are pages, not JSON.
HTML_FACES = frozenset({"admin", "dashboard", "accounts"})


def face_of(path: str) -> str:
    """ "admin", "dashboard", "accounts", "static", "api_docs", or "api" for the rest."""
    prefixes: dict[str, str] = settings.FACE_PREFIXES
    for face, prefix in prefixes.items():
        if path.startswith(prefix):
            return face
    return "api"
