"""Steps of the OAuth flow for /mcp, as a remote MCP client takes them, on Django's test client."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client

ORIGIN = "http://testserver"
RESOURCE = ORIGIN + "/mcp"
REDIRECT = "http://127.0.0.1:33418/callback"


@dataclass
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def make(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


def register(client: Client | None = None, **metadata):
    body = {
        "client_name": "Hosted Assistant",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    return (client or Client()).post(
        "/oauth/register", data=json.dumps(body), content_type="application/json"
    )


def authorize_params(client_id: str, pkce: Pkce, **overrides) -> dict:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "state-123",
        "code_challenge": pkce.challenge,
        "code_challenge_method": "S256",
        "resource": RESOURCE,
        "scope": "mcp",
    }
    params.update(overrides)
    return {name: value for name, value in params.items() if value is not None}


def consent_url(client_id: str, pkce: Pkce, **overrides) -> str:
    return "/dashboard/connect/?" + urlencode(authorize_params(client_id, pkce, **overrides))


def consent_form(client: Client, client_id: str, pkce: Pkce, **overrides) -> dict:
    """The hidden fields the consent page carries (what the browser posts back)."""
    page = client.get(consent_url(client_id, pkce, **overrides))
    assert page.status_code == 200, page.content[:500]
    initial = page.context["form"].initial | {"scope": "mcp"}
    return {name: value for name, value in initial.items() if value is not None}


def redirect_query(response) -> dict[str, str]:
    assert response.status_code == 302, response.content[:500]
    location = response["Location"]
    assert location.startswith(REDIRECT), location
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def allow(client: Client, client_id: str, pkce: Pkce, mind_id: str) -> str:
    """Consent to `mind_id`; the authorization code the app receives."""
    form = consent_form(client, client_id, pkce)
    answer = client.post("/dashboard/connect/", {**form, "allow": "on", "mind": mind_id})
    query = redirect_query(answer)
    assert query["state"] == "state-123"
    return query["code"]


def token(**fields):
    return Client().post("/oauth/token", fields)


def exchange(client_id: str, code: str, pkce: Pkce, **extra):
    return token(
        grant_type="authorization_code",
        client_id=client_id,
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=pkce.verifier,
        resource=RESOURCE,
        **extra,
    )


def connect_app(person_client: Client, mind_id: str) -> tuple[str, dict]:
    """Register an app, consent to `mind_id`, exchange the code: (client_id, token answer)."""
    client_id = register().json()["client_id"]
    pkce = Pkce.make()
    code = allow(person_client, client_id, pkce, mind_id)
    answer = exchange(client_id, code, pkce)
    assert answer.status_code == 200, answer.content
    return client_id, answer.json()


def mcp(access_token: str, method: str = "tools/list", params: dict | None = None, **extra):
    body: dict = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    return Client().post(
        "/mcp",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {access_token}",
        **extra,
    )
