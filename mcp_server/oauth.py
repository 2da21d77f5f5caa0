"""OAuth 2.1 for /mcp, as the MCP authorization specification asks.

django-oauth-toolkit issues, stores (hashed) and checks the tokens; this module adds what
it leaves to us: the protected resource's metadata (RFC 9728) for the one resource, /mcp;
the rules and rate limit in front of dynamic client registration (RFC 7591); and the step
from a valid access token to the mind it acts on (connections/). The consent page is the
dashboard's (dashboard/views/oauth.py). Threat model: docs/security.md#remote-mcp-with-oauth.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.views import (
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
    OAuthProtectedResourceMetadataView,
)
from oauth2_provider.views import TokenView as LibraryTokenView

from connections.models import Connection
from connections.rules import MCP_PATH, SCOPE, mcp_resource, registration_problem
from connections.selectors import connection_for_token
from connections.services import note_use
from synapse_site.origin import origin
from synapse_site.throttling import RegistrationRateThrottle

RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource" + MCP_PATH


def resource_metadata_url(request: HttpRequest) -> str:
    return origin(request) + RESOURCE_METADATA_PATH


class ResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728, at /.well-known/oauth-protected-resource and …/mcp: the one protected
    resource here is the MCP endpoint, and this server is its authorization server."""

    def get_resource(self, request: HttpRequest) -> str:
        return mcp_resource(origin(request))

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [origin(request)]

    def get_resource_name(self) -> str:
        return "Synapse MCP"


class TokenView(LibraryTokenView):
    """The library's token endpoint; every answer is JSON (RFC 6749 §5), including the
    errors it leaves without a content type (invalid_target among them)."""

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        response: HttpResponse = super().post(request, *args, **kwargs)
        response["Content-Type"] = "application/json"
        return response


def _oauth_error(status: int, error: str, description: str, **headers: str) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    response["Cache-Control"] = "no-store"
    for name, value in headers.items():
        response[name] = value
    return response


_register = DynamicClientRegistrationView.as_view()


@csrf_exempt
@never_cache
def register(request: HttpRequest) -> HttpResponseBase:
    """POST /oauth/register (RFC 7591): open to any client, limited per address, and held to
    connections/rules.py before the library creates the application."""
    if request.method != "POST":
        return _oauth_error(
            405, "invalid_request", "Register a client with POST (RFC 7591).", Allow="POST"
        )
    throttle = RegistrationRateThrottle()
    if not throttle.allow_request(request, None):
        wait = str(max(1, math.ceil(throttle.wait() or 60)))
        return _oauth_error(
            429,
            "rate_limited",
            f"Too many client registrations from this address; retry in {wait} s.",
            **{"Retry-After": wait},
        )
    refusal = _metadata_refusal(request)
    if refusal is not None:
        return refusal
    created: HttpResponseBase = _register(request)
    return created


def _metadata_refusal(request: HttpRequest) -> JsonResponse | None:
    """The 400 for client metadata connections/rules.py refuses, or None."""
    try:
        metadata = json.loads(request.body)
    except (ValueError, RecursionError):
        return _oauth_error(400, "invalid_client_metadata", "The body must be a JSON object.")
    if not isinstance(metadata, dict):
        return _oauth_error(400, "invalid_client_metadata", "The body must be a JSON object.")
    problem = registration_problem(metadata)
    if problem is None:
        return None
    error = "invalid_redirect_uri" if "redirect" in problem.lower() else "invalid_client_metadata"
    return _oauth_error(400, error, problem + ".")


class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """RFC 7592 for an app's own registration (by its registration token): a change is held
    to the same rules as the registration."""

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        refusal = _metadata_refusal(request)
        if refusal is not None:
            return refusal
        changed: HttpResponse = super().put(request, client_id, *args, **kwargs)
        return changed


def connection_of(request: HttpRequest) -> Connection | None:
    """The connection an OAuth access token on this request acts through, or None: unknown,
    expired or revoked token, another scope, another resource, or consent withdrawn."""
    valid, oauth_request = get_oauthlib_core().verify_request(request, scopes=[SCOPE])
    if not valid:
        return None
    connection = connection_for_token(
        token=oauth_request.access_token, resource=mcp_resource(origin(request))
    )
    if connection is not None:
        note_use(connection=connection)
    return connection
