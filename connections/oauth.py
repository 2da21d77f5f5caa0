"""The OAuth library's validator, narrowed to what Synapse allows."""

from __future__ import annotations

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator

from connections.rules import redirect_uri_problem


class Validator(OAuth2Validator):
    def validate_redirect_uri(
        self, client_id: str, redirect_uri: str, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        """Exactly one of the registered URIs, character for character (no loopback port
        leeway), and still one the rules allow (an app registered in the admin too)."""
        registered = request.client.redirect_uris.split()
        return redirect_uri in registered and redirect_uri_problem(redirect_uri) is None
