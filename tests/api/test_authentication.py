import pytest

from minds.models import Mind
from tests.conftest import bearer_client

pytestmark = pytest.mark.django_db


def test_for_key_finds_the_mind(owner_mind):
    assert Mind.objects.for_key(owner_mind.key) == owner_mind.mind


@pytest.mark.parametrize(
    "token",
    [
        "mk_",
        "mk_short",
        "mk_" + "A" * 43,
        "not-a-key",
        "",
    ],
)
def test_for_key_rejects_bad_keys(owner_mind, token):
    assert Mind.objects.for_key(token) is None


def test_key_with_right_prefix_but_wrong_rest_is_refused(owner_mind):
    forged = owner_mind.key[:11] + "x" * (len(owner_mind.key) - 11)
    assert Mind.objects.for_key(forged) is None
    response = bearer_client(forged).get("/minds")
    assert response.status_code == 401
    assert response.json()["error"] == "authentication_failed"


def test_forged_mk_token_never_reaches_jwt(anon, mind):
    response = bearer_client("mk_" + "z" * 40).get("/minds")
    assert response.status_code == 401
    assert "Mind Key" in response.json()["detail"]


def test_garbage_jwt_is_401(mind):
    response = bearer_client("eyJhbGciOi.garbage.token").get("/minds")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", ["Bearer", "Bearer a b", "Basic abc", "Token mk_x"])
def test_malformed_authorization_headers_are_401(anon, mind, header):
    anon.credentials(HTTP_AUTHORIZATION=header)
    assert anon.get("/minds").status_code == 401


def test_key_of_inactive_owner_is_refused(owner, owner_mind):
    owner.is_active = False
    owner.save()
    assert bearer_client(owner_mind.key).get("/minds").status_code == 401


def test_requests_are_rate_limited_per_credential(human, other_human, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": "2/min", "login": None},
    }
    assert human.get("/minds").status_code == 200
    assert human.get("/minds").status_code == 200
    response = human.get("/minds")
    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert int(response["Retry-After"]) >= 1
    # Another credential has its own bucket.
    assert other_human.get("/minds").status_code == 200


def test_rate_limit_off_disables_throttling(owner_mind, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": None},
    }
    client = bearer_client(owner_mind.key)
    assert all(client.get("/minds").status_code == 403 for _ in range(5))


def test_throttle_buckets_by_credential_kind(owner_mind, owner):
    from rest_framework.test import APIRequestFactory

    from minds.access import MindAgent
    from synapse_site.throttling import CredentialRateThrottle

    request = APIRequestFactory().get("/")
    throttle = CredentialRateThrottle()
    request.user = MindAgent(mind=owner_mind.mind)
    assert throttle.get_cache_key(request, None).endswith(f"mind:{owner_mind.mind.pk}")
    request.user = owner
    assert throttle.get_cache_key(request, None).endswith(f"user:{owner.pk}")


def test_forwarded_for_header_does_not_buy_a_fresh_login_bucket(anon, owner, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": "2/min"},
    }
    body = {"email": "owner@example.com", "password": "wrong"}
    for n in range(2):
        anon.post("/login", body, format="json", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}")
    response = anon.post("/login", body, format="json", HTTP_X_FORWARDED_FOR="10.0.0.99")
    assert response.status_code == 429


def test_forwarded_for_is_used_behind_a_configured_proxy(anon, owner, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": "2/min"},
        "NUM_PROXIES": 1,
    }
    body = {"email": "owner@example.com", "password": "wrong"}
    for _ in range(2):
        anon.post("/login", body, format="json", HTTP_X_FORWARDED_FOR="203.0.113.5")
    blocked = anon.post("/login", body, format="json", HTTP_X_FORWARDED_FOR="203.0.113.5")
    other = anon.post("/login", body, format="json", HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert blocked.status_code == 429
    assert other.status_code == 401
