"""OAuth for /mcp (API.md §9.8): discovery, registration, consent, tokens, and their refusals."""

from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, RefreshToken

from connections.models import Connection
from memories.models import Memory
from minds.models import Share
from tests.conftest import jwt_for
from tests.factories import mind_make, share_make, user_make
from tests.mcp_server import TOOLS
from tests.mcp_server.oauth_flow import (
    REDIRECT,
    RESOURCE,
    Pkce,
    allow,
    connect_app,
    consent_form,
    consent_url,
    exchange,
    mcp,
    redirect_query,
    register,
    token,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def person_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def remember(access_token: str, key: str = "preference_editor") -> dict:
    arguments = {"category": "preference", "key": key, "content": "Uses Neovim"}
    answer = mcp(access_token, "tools/call", {"name": "remember", "arguments": arguments})
    assert answer.status_code == 200, answer.content
    return answer.json()


def refused(answer, detail: str = "") -> None:
    assert answer.status_code == 401, answer.content
    challenge = answer["WWW-Authenticate"]
    assert 'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"' in (
        challenge
    )
    assert 'error="invalid_token"' in challenge
    assert detail in answer.json()["error"]["message"]


# --- Discovery -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
def test_protected_resource_metadata_names_mcp_and_this_server(path):
    document = Client().get(path).json()
    assert document["resource"] == RESOURCE
    assert document["authorization_servers"] == ["http://testserver"]
    assert document["scopes_supported"] == ["mcp"]
    assert document["bearer_methods_supported"] == ["header"]


def test_authorization_server_metadata_offers_only_what_is_allowed():
    document = Client().get("/.well-known/oauth-authorization-server").json()
    assert document["issuer"] == "http://testserver"
    assert document["authorization_endpoint"] == "http://testserver/dashboard/connect/"
    assert document["token_endpoint"] == "http://testserver/oauth/token"
    assert document["registration_endpoint"] == "http://testserver/oauth/register"
    assert document["revocation_endpoint"] == "http://testserver/oauth/revoke"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["response_types_supported"] == ["code"]
    assert set(document["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert "none" in document["token_endpoint_auth_methods_supported"]


def test_mcp_without_a_token_points_to_the_metadata():
    answer = Client().post("/mcp", data="{}", content_type="application/json")
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"] == (
        'Bearer realm="synapse", '
        'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"'
    )


def test_mind_keys_keep_working(owner_mind):
    assert mcp(owner_mind.key).status_code == 200


# --- Registration (RFC 7591) ----------------------------------------------------------------


def test_registration_creates_a_public_client():
    answer = register()
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["redirect_uris"] == [REDIRECT]
    assert body["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in body
    application = Application.objects.get(client_id=body["client_id"])
    assert application.name == "Hosted Assistant"
    assert application.client_type == Application.CLIENT_PUBLIC
    assert application.user is None


def test_registration_of_a_confidential_client_returns_its_secret_once():
    answer = register(token_endpoint_auth_method="client_secret_post")
    assert answer.status_code == 201, answer.content
    secret = answer.json()["client_secret"]
    stored = Application.objects.get(client_id=answer.json()["client_id"]).client_secret
    assert stored != secret  # kept hashed


@pytest.mark.parametrize(
    ("metadata", "error", "words"),
    [
        ({"redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri", "over http"),
        ({"redirect_uris": ["cursor://anysphere/cb"]}, "invalid_redirect_uri", "https"),
        ({"redirect_uris": ["https://app.example/cb#x"]}, "invalid_redirect_uri", "fragment"),
        ({"redirect_uris": ["https://u:p@app.example/cb"]}, "invalid_redirect_uri", "password"),
        ({"redirect_uris": []}, "invalid_redirect_uri", "non-empty"),
        ({"redirect_uris": "https://app.example/cb"}, "invalid_redirect_uri", "list"),
        ({"redirect_uris": [7]}, "invalid_redirect_uri", "string"),
        ({"grant_types": ["password"]}, "invalid_client_metadata", "grant_types"),
        ({"grant_types": ["refresh_token"]}, "invalid_client_metadata", "authorization_code"),
        ({"response_types": ["token"]}, "invalid_client_metadata", "response_types"),
        ({"scope": "admin"}, "invalid_client_metadata", "scope"),
        ({"client_name": "x" * 300}, "invalid_client_metadata", "client_name"),
    ],
)
def test_registration_refuses_what_is_not_allowed(metadata, error, words):
    answer = register(**metadata)
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"] == error
    assert words in answer.json()["error_description"]
    assert not Application.objects.exists()


@pytest.mark.parametrize("body", ["not json", "[1, 2]", '"text"'])
def test_registration_needs_a_json_object(body):
    answer = Client().post("/oauth/register", data=body, content_type="application/json")
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_client_metadata"


def test_registration_is_a_post():
    answer = Client().get("/oauth/register")
    assert answer.status_code == 405
    assert answer["Allow"] == "POST"


def test_loopback_redirects_of_every_form_are_allowed():
    uris = ["http://127.0.0.1/cb", "http://[::1]:8080/cb", "http://localhost:5173/cb"]
    assert register(redirect_uris=uris).status_code == 201


def test_registration_floods_are_rate_limited_per_address(settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**rates, "oauth_register": "3/hour"},
    }
    assert [register().status_code for _ in range(3)] == [201, 201, 201]
    flood = register()
    assert flood.status_code == 429
    assert flood.json()["error"] == "rate_limited"
    assert int(flood["Retry-After"]) > 0
    assert Application.objects.count() == 3
    elsewhere = register(Client(REMOTE_ADDR="127.0.0.9"))
    assert elsewhere.status_code == 201


def test_registration_token_is_not_an_mcp_token():
    registration_token = register().json()["registration_access_token"]
    refused(mcp(registration_token))


# --- Consent --------------------------------------------------------------------------------


def test_consent_asks_a_signed_out_person_to_sign_in():
    client_id = register().json()["client_id"]
    answer = Client().get(consent_url(client_id, Pkce.make()))
    assert answer.status_code == 302
    assert urlsplit(answer["Location"]).path == "/accounts/login/"
    assert "next=" in answer["Location"]


def test_consent_page_names_the_app_and_offers_only_minds_the_person_may_write(
    owner, person_client, owner_mind, stranger_mind
):
    shared_write, _ = mind_make(user_make("a@example.com"), name="Team write")
    shared_read, _ = mind_make(user_make("b@example.com"), name="Team read")
    share_make(shared_write, owner, "write")
    share_make(shared_read, owner, "read")
    client_id = register().json()["client_id"]
    page = person_client.get(consent_url(client_id, Pkce.make()))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Hosted Assistant" in text
    assert "127.0.0.1:33418" in text
    offered = [value for value, _ in page.context["form"].fields["mind"].choices]
    assert offered[0] == ""  # none picked in advance
    assert set(offered[1:]) == {owner_mind.mind.pk, shared_write.pk}
    assert page["Cache-Control"] == "no-store"
    assert "form-action 'self' http://127.0.0.1:33418" in page["Content-Security-Policy"]


def test_allow_records_the_connection_and_issues_a_code(owner, person_client, owner_mind):
    client_id = register().json()["client_id"]
    code = allow(person_client, client_id, Pkce.make(), owner_mind.mind.pk)
    assert code
    connection = Connection.objects.get()
    assert (connection.person, connection.mind) == (owner, owner_mind.mind)
    assert connection.resource == RESOURCE


def test_deny_tells_the_app_and_connects_nothing(person_client, owner_mind):
    client_id = register().json()["client_id"]
    form = consent_form(person_client, client_id, Pkce.make())
    query = redirect_query(person_client.post("/dashboard/connect/", form))
    assert query["error"] == "access_denied"
    assert query["state"] == "state-123"
    assert not Connection.objects.exists()


def test_another_persons_mind_cannot_be_chosen(person_client, stranger_mind):
    client_id = register().json()["client_id"]
    form = consent_form(person_client, client_id, Pkce.make())
    for mind_id in (stranger_mind.mind.pk, "", "no-such-mind"):
        answer = person_client.post("/dashboard/connect/", {**form, "allow": "on", "mind": mind_id})
        assert answer.status_code == 400
        assert "Pick the mind this app may use" in answer.content.decode()
    assert not Connection.objects.exists()


def test_a_mind_shared_for_reading_cannot_be_chosen(owner, person_client):
    shared, _ = mind_make(name="Team read")
    share_make(shared, owner, "read")
    client_id = register().json()["client_id"]
    form = consent_form(person_client, client_id, Pkce.make())
    answer = person_client.post("/dashboard/connect/", {**form, "allow": "on", "mind": shared.pk})
    assert answer.status_code == 400
    assert not Connection.objects.exists()


@pytest.mark.parametrize(
    "overrides",
    [
        {"code_challenge_method": "plain"},
        {"code_challenge_method": None},
        {"code_challenge": None, "code_challenge_method": None},
    ],
)
def test_pkce_s256_is_required(person_client, overrides):
    client_id = register().json()["client_id"]
    answer = person_client.get(consent_url(client_id, Pkce.make(), **overrides))
    assert redirect_query(answer)["error"] == "invalid_request"


def test_a_token_for_another_resource_is_not_issued(person_client):
    client_id = register().json()["client_id"]
    answer = person_client.get(
        consent_url(client_id, Pkce.make(), resource="https://elsewhere.example/mcp")
    )
    query = redirect_query(answer)
    assert query["error"] == "invalid_target"
    assert "http://testserver/mcp" in query["error_description"]


def test_a_tampered_consent_form_is_refused(person_client, owner_mind):
    client_id = register().json()["client_id"]
    form = consent_form(person_client, client_id, Pkce.make())
    for tampered in (
        {"code_challenge_method": "plain"},
        {"resource": "https://elsewhere.example/mcp"},
    ):
        answer = person_client.post(
            "/dashboard/connect/",
            {**form, **tampered, "allow": "on", "mind": owner_mind.mind.pk},
        )
        assert answer.status_code == 400
    assert not Connection.objects.exists()


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://127.0.0.1:33418/callback/",
        "http://127.0.0.1:33419/callback",
        "http://localhost:33418/callback",
        "https://attacker.example/callback",
    ],
)
def test_redirect_uris_are_matched_exactly_and_never_followed_otherwise(
    person_client, redirect_uri
):
    client_id = register().json()["client_id"]
    answer = person_client.get(consent_url(client_id, Pkce.make(), redirect_uri=redirect_uri))
    assert answer.status_code == 400
    assert "Location" not in answer
    assert "cannot go on" in answer.content.decode()


def test_an_unknown_client_is_refused_on_the_page(person_client):
    answer = person_client.get(consent_url("no-such-client", Pkce.make()))
    assert answer.status_code == 400
    assert "Location" not in answer


def test_a_person_without_a_mind_to_write_is_told_so(person_client, owner_mind):
    owner_mind.mind.delete()
    client_id = register().json()["client_id"]
    page = person_client.get(consent_url(client_id, Pkce.make()))
    assert "You have no mind you may write" in page.content.decode()


# --- Tokens ---------------------------------------------------------------------------------


def test_the_token_acts_as_the_minds_agent(owner, person_client, owner_mind):
    _, tokens = connect_app(person_client, owner_mind.mind.pk)
    assert tokens["token_type"] == "Bearer"
    assert tokens["scope"] == "mcp"
    assert tokens["refresh_token"]
    listed = mcp(tokens["access_token"]).json()["result"]["tools"]
    assert {tool["name"] for tool in listed} == TOOLS  # no verify
    assert remember(tokens["access_token"])["result"]["isError"] is False
    memory = Memory.objects.get(key="preference_editor")
    assert memory.mind == owner_mind.mind
    assert memory.verified is False
    assert memory.source == "agent"
    connection = Connection.objects.get()
    assert connection.last_used_at is not None


def test_tokens_are_stored_hashed(person_client, owner_mind):
    _, tokens = connect_app(person_client, owner_mind.mind.pk)
    assert not AccessToken.objects.filter(token=tokens["access_token"]).exists()
    assert not RefreshToken.objects.filter(token=tokens["refresh_token"]).exists()
    assert AccessToken.objects.filter(user__isnull=False).count() == 1


def test_a_wrong_pkce_verifier_gets_no_token(person_client, owner_mind):
    client_id = register().json()["client_id"]
    pkce = Pkce.make()
    code = allow(person_client, client_id, pkce, owner_mind.mind.pk)
    answer = exchange(client_id, code, Pkce.make())
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_grant"
    assert exchange(client_id, code, Pkce("", "")).status_code == 400
    assert not AccessToken.objects.filter(user__isnull=False).exists()


def test_a_code_is_used_once(person_client, owner_mind):
    client_id = register().json()["client_id"]
    pkce = Pkce.make()
    code = allow(person_client, client_id, pkce, owner_mind.mind.pk)
    assert exchange(client_id, code, pkce).status_code == 200
    assert exchange(client_id, code, pkce).status_code == 400


def test_a_token_asked_for_another_resource_is_refused(person_client, owner_mind):
    client_id = register().json()["client_id"]
    pkce = Pkce.make()
    code = allow(person_client, client_id, pkce, owner_mind.mind.pk)
    answer = token(
        grant_type="authorization_code",
        client_id=client_id,
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=pkce.verifier,
        resource="https://elsewhere.example/mcp",
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_target"
    assert answer["Content-Type"] == "application/json"


def test_a_token_bound_to_another_resource_is_refused_here(person_client, owner_mind):
    _, tokens = connect_app(person_client, owner_mind.mind.pk)
    AccessToken.objects.update(resource=["https://elsewhere.example/mcp"])
    refused(mcp(tokens["access_token"]))


def test_a_connection_for_another_server_is_refused(person_client, owner_mind):
    _, tokens = connect_app(person_client, owner_mind.mind.pk)
    Connection.objects.update(resource="https://elsewhere.example/mcp")
    refused(mcp(tokens["access_token"]))


def test_an_expired_token_is_refused(person_client, owner_mind):
    _, tokens = connect_app(person_client, owner_mind.mind.pk)
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    refused(mcp(tokens["access_token"]), "expired")


def test_a_refresh_gives_new_tokens_and_a_replayed_one_ends_the_family(person_client, owner_mind):
    client_id, first = connect_app(person_client, owner_mind.mind.pk)
    refreshed = token(
        grant_type="refresh_token", client_id=client_id, refresh_token=first["refresh_token"]
    )
    assert refreshed.status_code == 200, refreshed.content
    second = refreshed.json()
    assert second["access_token"] != first["access_token"]
    assert mcp(second["access_token"]).status_code == 200
    refused(mcp(first["access_token"]))
    replay = token(
        grant_type="refresh_token", client_id=client_id, refresh_token=first["refresh_token"]
    )
    assert replay.status_code == 400
    refused(mcp(second["access_token"]))


def test_revocation_by_the_app_ends_the_token(person_client, owner_mind):
    client_id, tokens = connect_app(person_client, owner_mind.mind.pk)
    answer = Client().post(
        "/oauth/revoke", {"token": tokens["access_token"], "client_id": client_id}
    )
    assert answer.status_code == 200
    refused(mcp(tokens["access_token"]))


def test_the_rest_api_refuses_an_oauth_token(person_client, owner_mind):
    _, tokens = connect_app(person_client, owner_mind.mind.pk)
    answer = Client().get("/memory", HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}")
    assert answer.status_code == 401


def test_a_persons_login_token_is_refused_on_mcp(owner):
    refused(mcp(jwt_for(owner)), "login token")


def test_a_lost_share_ends_the_apps_access(owner, person_client):
    shared, _ = mind_make(name="Team")
    share = share_make(shared, owner, "write")
    _, tokens = connect_app(person_client, shared.pk)
    assert mcp(tokens["access_token"]).status_code == 200
    Share.objects.filter(pk=share.pk).update(acl="read")
    refused(mcp(tokens["access_token"]))
    share.delete()
    refused(mcp(tokens["access_token"]))


def test_a_deactivated_person_ends_the_apps_access(owner, person_client, owner_mind):
    _, tokens = connect_app(person_client, owner_mind.mind.pk)
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    refused(mcp(tokens["access_token"]))


def test_consenting_again_to_another_mind_moves_the_app_and_ends_old_tokens(
    owner, person_client, owner_mind
):
    second_mind, _ = mind_make(owner, name="Second")
    client_id, first = connect_app(person_client, owner_mind.mind.pk)
    pkce = Pkce.make()
    code = allow(person_client, client_id, pkce, second_mind.pk)
    refused(mcp(first["access_token"]))
    second = exchange(client_id, code, pkce).json()
    remember(second["access_token"])
    assert Memory.objects.get(key="preference_editor").mind == second_mind
    assert Connection.objects.get().mind == second_mind


def test_one_persons_token_never_reaches_another_mind(owner_mind, stranger_mind):
    stranger_client = Client()
    stranger_client.force_login(stranger_mind.mind.owner)
    _, tokens = connect_app(stranger_client, stranger_mind.mind.pk)
    remember(tokens["access_token"], key="preference_theme")
    assert not Memory.objects.filter(mind=owner_mind.mind).exists()
    assert Memory.objects.get(key="preference_theme").mind == stranger_mind.mind


def test_a_malformed_bearer_is_refused(owner_mind):
    for value in ("not-a-token", "a" * 5000, "\u00e9t\u00e9"):
        answer = Client().post(
            "/mcp",
            data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {value}",
        )
        assert answer.status_code in (400, 401)


# --- The Connected apps panel ---------------------------------------------------------------


def test_the_settings_panel_lists_the_app(person_client, owner_mind):
    connect_app(person_client, owner_mind.mind.pk)
    page = person_client.get(f"/dashboard/minds/{owner_mind.mind.pk}/settings/")
    text = page.content.decode()
    assert 'id="connections"' in text
    assert "Hosted Assistant" in text
    assert "http://testserver/mcp" in text


def test_revoke_asks_then_ends_every_token_at_once(person_client, owner_mind):
    _, tokens = connect_app(person_client, owner_mind.mind.pk)
    connection = Connection.objects.get()
    url = f"/dashboard/minds/{owner_mind.mind.pk}/connections/{connection.pk}/revoke/"
    confirm = person_client.get(url)
    assert confirm.status_code == 200
    assert "Disconnect “Hosted Assistant”?" in confirm.content.decode()
    assert mcp(tokens["access_token"]).status_code == 200
    done = person_client.post(url)
    assert done.status_code == 302
    assert done["Location"].endswith("/settings/#connections")
    refused(mcp(tokens["access_token"]))
    assert not Connection.objects.exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_revoke_of_another_minds_connection_is_a_404(person_client, owner_mind, stranger_mind):
    stranger_client = Client()
    stranger_client.force_login(stranger_mind.mind.owner)
    connect_app(stranger_client, stranger_mind.mind.pk)
    connection = Connection.objects.get()
    mine = f"/dashboard/minds/{owner_mind.mind.pk}/connections/{connection.pk}/revoke/"
    theirs = f"/dashboard/minds/{stranger_mind.mind.pk}/connections/{connection.pk}/revoke/"
    assert person_client.post(mine).status_code == 404
    assert person_client.post(theirs).status_code == 404
    assert Connection.objects.exists()


def test_a_writer_may_connect_but_not_revoke(owner_mind):
    writer = user_make("writer@example.com")
    share_make(owner_mind.mind, writer, "write")
    writer_client = Client()
    writer_client.force_login(writer)
    connect_app(writer_client, owner_mind.mind.pk)
    connection = Connection.objects.get()
    url = f"/dashboard/minds/{owner_mind.mind.pk}/connections/{connection.pk}/revoke/"
    assert writer_client.post(url).status_code == 403
    assert Connection.objects.exists()


def test_the_daily_sweep_removes_expired_tokens_only(person_client, owner_mind):
    from connections.tasks import clear_expired_tokens_daily

    old_app, old = connect_app(person_client, owner_mind.mind.pk)
    _, fresh = connect_app(person_client, owner_mind.mind.pk)
    first = AccessToken.objects.filter(user__isnull=False).order_by("pk").first()
    # Expired for longer than a refresh token lives: the pair is dead and is swept.
    AccessToken.objects.filter(pk=first.pk).update(expires=timezone.now() - timedelta(days=31))
    assert clear_expired_tokens_daily.call_local() == 1
    assert not AccessToken.objects.filter(pk=first.pk).exists()
    refused(mcp(old["access_token"]))
    again = token(grant_type="refresh_token", client_id=old_app, refresh_token=old["refresh_token"])
    assert again.status_code == 400
    assert mcp(fresh["access_token"]).status_code == 200


def test_an_app_changes_its_registration_under_the_same_rules():
    registered = register().json()
    url = f"/oauth/register/{registered['client_id']}"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {registered['registration_access_token']}"}
    body = {"client_name": "Renamed", "redirect_uris": ["http://evil.example/cb"]}
    refused_change = Client().put(url, json.dumps(body), "application/json", **auth)
    assert refused_change.status_code == 400
    assert refused_change.json()["error"] == "invalid_redirect_uri"
    application = Application.objects.get(client_id=registered["client_id"])
    assert application.redirect_uris == REDIRECT
    body["redirect_uris"] = ["https://app.example/cb"]
    changed = Client().put(url, json.dumps(body), "application/json", **auth)
    assert changed.status_code == 200, changed.content
    application.refresh_from_db()
    assert (application.name, application.redirect_uris) == ("Renamed", "https://app.example/cb")
    assert Client().get(url).status_code == 401  # no registration token


def test_a_consent_the_library_refuses_connects_nothing(person_client, owner_mind):
    client_id = register().json()["client_id"]
    form = consent_form(person_client, client_id, Pkce.make())
    tampered = {**form, "redirect_uri": "https://attacker.example/cb"}
    answer = person_client.post(
        "/dashboard/connect/", {**tampered, "allow": "on", "mind": owner_mind.mind.pk}
    )
    assert "attacker.example" not in answer.get("Location", "")
    assert not Connection.objects.exists()


def test_a_refused_form_names_only_a_registered_redirect(person_client):
    client_id = register().json()["client_id"]
    form = consent_form(person_client, client_id, Pkce.make())
    tampered = {**form, "redirect_uri": "https://attacker.example/cb", "allow": "on"}
    answer = person_client.post("/dashboard/connect/", tampered)  # no mind: refused
    assert answer.status_code == 400
    assert "attacker.example" not in answer["Content-Security-Policy"]
    assert "<strong>attacker.example" not in answer.content.decode()  # not named as the app's
    fine = person_client.post("/dashboard/connect/", {**form, "allow": "on"})
    assert "127.0.0.1:33418" in fine["Content-Security-Policy"]
