import pytest
from rest_framework.test import APIClient

from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def test_login_returns_a_token_pair_that_works(anon, owner):
    response = anon.post(
        "/login", {"email": "owner@example.com", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 200
    tokens = response.json()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens['access']}")
    assert client.get("/minds").status_code == 200


def test_login_email_is_case_insensitive(anon, owner):
    response = anon.post(
        "/login", {"email": "Owner@Example.COM", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 200


def test_wrong_password_is_401(anon, owner):
    response = anon.post(
        "/login", {"email": "owner@example.com", "password": "nope"}, format="json"
    )
    assert response.status_code == 401
    assert response.json()["error"] == "authentication_failed"


def test_inactive_user_cannot_log_in(anon, owner):
    owner.is_active = False
    owner.save()
    response = anon.post(
        "/login", {"email": "owner@example.com", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 401


def test_missing_fields_name_them(anon):
    response = anon.post("/login", {}, format="json")
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"email", "password"}


def test_login_attempts_are_throttled(anon, owner, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": "3/min"},
    }
    for _ in range(3):
        anon.post("/login", {"email": "owner@example.com", "password": "x"}, format="json")
    response = anon.post(
        "/login", {"email": "owner@example.com", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert int(response["Retry-After"]) > 0


def test_refresh_gives_a_new_access_token(anon, owner):
    tokens = anon.post(
        "/login", {"email": "owner@example.com", "password": PASSWORD}, format="json"
    ).json()
    response = anon.post("/token/refresh", {"refresh": tokens["refresh"]}, format="json")
    assert response.status_code == 200
    assert response.json()["access"]


def test_bad_refresh_token_is_401(anon):
    response = anon.post("/token/refresh", {"refresh": "garbage"}, format="json")
    assert response.status_code == 401
    assert response.json()["error"] in {"authentication_failed", "token_not_valid"}
