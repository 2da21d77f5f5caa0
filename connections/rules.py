"""What an app may register and ask for: one place for the registration endpoint, the
consent page and the token checks."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

# The one protected resource: the MCP endpoint of this server.
MCP_PATH = "/mcp"
SCOPE = "mcp"
GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
RESPONSE_TYPES = frozenset({"code"})
MAX_REDIRECT_URIS = 10
MAX_URI_LENGTH = 2000
MAX_CLIENT_NAME = 255
LOOPBACK_NAMES = frozenset({"localhost"})


def mcp_resource(origin: str) -> str:
    """The resource indicator (RFC 8707) of this server's MCP endpoint."""
    return origin.rstrip("/") + MCP_PATH


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redirect_uri_problem(uri: object) -> str | None:
    """Why `uri` may not be a registered redirect URI, or None: https anywhere, http only to
    this machine (RFC 8252's loopback callback), no fragment, no user:password@."""
    if not isinstance(uri, str) or not uri:
        return "Each redirect URI must be a non-empty string"
    if len(uri) > MAX_URI_LENGTH:
        return f"A redirect URI may be at most {MAX_URI_LENGTH} characters"
    if any(ch.isspace() for ch in uri):
        return "A redirect URI may not contain whitespace"
    try:
        parts = urlsplit(uri)
        host = parts.hostname or ""
    except ValueError:
        return f"{uri!r} is not a URL"
    if "#" in uri:
        return "A redirect URI may not have a fragment (#...)"
    if "@" in parts.netloc:
        return "A redirect URI may not carry a user name or password"
    if not host:
        return f"{uri!r} has no host"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http":
        if is_loopback(host):
            return None
        return (
            "Redirect URIs over http are allowed only on this machine (127.0.0.1, ::1, localhost)"
        )
    return f"Redirect URIs must be https (or http on 127.0.0.1), not {parts.scheme or 'none'}:"


def registration_problem(metadata: dict[str, object]) -> str | None:
    """Why a registration (RFC 7591 client metadata) is refused here, or None. What the OAuth
    library checks after this (auth method names, JSON types) is left to it."""
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        return "redirect_uris must be a non-empty list: the authorization code flow needs one"
    if len(uris) > MAX_REDIRECT_URIS:
        return f"At most {MAX_REDIRECT_URIS} redirect_uris"
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem:
            return problem
    grant_types = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or not set(grant_types) <= GRANT_TYPES:
        return "grant_types may hold only authorization_code and refresh_token"
    if "authorization_code" not in grant_types:
        return "grant_types must include authorization_code"
    response_types = metadata.get("response_types", ["code"])
    if not isinstance(response_types, list) or not set(response_types) <= RESPONSE_TYPES:
        return 'response_types may hold only "code"'
    name = metadata.get("client_name", "")
    if not isinstance(name, str) or len(name) > MAX_CLIENT_NAME:
        return f"client_name must be a string of at most {MAX_CLIENT_NAME} characters"
    scope = metadata.get("scope")
    if scope is not None and (not isinstance(scope, str) or set(scope.split()) - {SCOPE}):
        return f'scope may only be "{SCOPE}"'
    return None
