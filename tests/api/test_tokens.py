"""A person's JWTs end when the password changes, the account goes, or they log out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import RevokedToken
from tests.conftest import bearer_client
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a brand new passphrase 7"


def log_in(email: str = "owner@example.com", password: str = PASSWORD) -> dict[str, str]:
    response = APIClient().post("/login", {"email": email, "password": password}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def refresh(token: str):
    return APIClient().post("/token/refresh", {"refresh": token}, format="json")


def assert_refused(response, words: str) -> None:
    assert response.status_code == 401, response.content
    body = response.json()
    assert body["error"] == "authentication_failed"
    assert words in body["detail"]
    assert "code:" not in body["detail"]  # a sentence, not simplejwt's flattened dict


def assert_tokens_work(tokens: dict[str, str]) -> None:
    assert bearer_client(tokens["access"]).get("/minds").status_code == 200
    assert refresh(tokens["refresh"]).status_code == 200


def assert_tokens_revoked(tokens: dict[str, str], words: str) -> None:
    assert_refused(bearer_client(tokens["access"]).get("/minds"), words)
    assert_refused(refresh(tokens["refresh"]), words)


def test_a_password_change_in_the_dashboard_revokes_every_token(owner, mind):
    tokens, others = log_in(), log_in()
    assert_tokens_work(tokens)
    browser = Client()
    browser.force_login(owner)
    response = browser.post(
        "/accounts/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    for pair in (tokens, others):
        assert_tokens_revoked(pair, "password changed")
    assert_tokens_work(log_in(password=NEW_PASSWORD))


def test_a_password_set_by_an_admin_or_in_code_revokes_every_token(owner, mind, django_user_model):
    tokens = log_in()
    admin = django_user_model.objects.create_superuser(email="admin@example.com", password="pw")
    staff = Client()
    staff.force_login(admin)
    response = staff.post(
        f"/admin/accounts/user/{owner.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    assert_tokens_revoked(tokens, "password changed")

    tokens = log_in(password=NEW_PASSWORD)
    owner.refresh_from_db()
    owner.set_password(PASSWORD)  # `manage.py changepassword`, a shell, any other path
    owner.save()
    assert_tokens_revoked(tokens, "password changed")


def test_a_deactivated_account_is_refused_with_a_sentence(owner, mind):
    tokens = log_in()
    owner.is_active = False
    owner.save()
    assert_tokens_revoked(tokens, "This account is deactivated.")
    owner.is_active = True
    owner.save()
    assert_tokens_work(tokens)  # the account, not the token, was off


def test_a_deleted_account_is_a_401_also_at_refresh(owner, mind):
    tokens = log_in()
    owner.delete()
    # The refresh was a 500 (simplejwt looked the user up with .get()).
    assert_tokens_revoked(tokens, "no longer exists")


def test_logout_ends_the_refresh_token_and_its_access_tokens(owner, mind):
    tokens, elsewhere = log_in(), log_in()
    minted = refresh(tokens["refresh"]).json()["access"]
    response = APIClient().post("/logout", {"refresh": tokens["refresh"]}, format="json")
    assert response.status_code == 200
    assert response.json() == {"logged_out": True}
    assert_tokens_revoked(tokens, "logged out")
    assert_refused(bearer_client(minted).get("/minds"), "logged out")
    assert_tokens_work(elsewhere)  # another login of the same person is not touched
    # Again: nothing left to end, still fine.
    again = APIClient().post("/logout/", {"refresh": tokens["refresh"]}, format="json")
    assert again.status_code == 200
    assert RevokedToken.objects.count() == 1


def test_logout_keeps_only_the_id_and_forgets_it_after_expiry(owner, mind):
    from django.utils import timezone

    tokens = log_in()
    RevokedToken.objects.create(jti="old", expires_at=timezone.now() - timezone.timedelta(days=1))
    APIClient().post("/logout", {"refresh": tokens["refresh"]}, format="json")
    [row] = RevokedToken.objects.all()
    assert len(row.jti) == 32 and row.jti not in tokens["access"] + tokens["refresh"]


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({}, 400, "invalid"),
        ({"refresh": ""}, 400, "invalid"),
        ({"refresh": 42}, 400, "invalid"),
        ({"refresh": "not a token\u0000"}, 400, "invalid"),
        ({"refresh": "abc.def.ghi"}, 401, "authentication_failed"),
    ],
)
def test_logout_with_a_bad_token_is_a_clear_4xx(anon, body, status, error):
    response = anon.post("/logout", body, format="json")
    assert response.status_code == status
    assert response.json()["error"] == error
    assert response.json()["detail"]


def test_an_access_token_is_not_a_refresh_token(owner, mind):
    tokens = log_in()
    assert_refused(refresh(tokens["access"]), "This is an access token")
    response = APIClient().post("/logout", {"refresh": tokens["access"]}, format="json")
    assert response.status_code == 401
    assert_tokens_work(tokens)


def _expired_access(user) -> str:
    token = AccessToken.for_user(user)
    token.set_exp(lifetime=-timedelta(minutes=1))
    return str(token)


@pytest.mark.parametrize(
    "header, words",
    [
        ("expired", "Your access token has expired: get a new one with POST /token/refresh"),
        ("Bearer abc.def.ghi", "not a valid access token of this server: log in with POST"),
        ("refresh", "This is a refresh token: send it to POST /token/refresh"),
        ("Bearer ", "must be `Bearer <token>`"),
        ("Bearer a b", "must be `Bearer <token>`"),
        (None, "No credentials: send `Authorization: Bearer <token>`"),
    ],
)
def test_a_refused_token_is_told_in_one_sentence_it_can_act_on(owner, header, words):
    if header == "expired":
        header = f"Bearer {_expired_access(owner)}"
    elif header == "refresh":
        header = f"Bearer {log_in()['refresh']}"
    client = APIClient()
    response = client.get("/memory", HTTP_AUTHORIZATION=header) if header else client.get("/memory")
    assert response.status_code == 401, response.content
    detail = response.json()["detail"]
    assert words in detail
    assert "code:" not in detail and "messages" not in detail and "{" not in detail
    assert response["WWW-Authenticate"]


@pytest.mark.parametrize(
    "token, words",
    [
        ("access", "This is an access token: send the `refresh` token"),
        ("garbage", "not a valid refresh token of this server"),
    ],
)
def test_a_refused_refresh_token_is_told_in_one_sentence(owner, token, words):
    raw = log_in()["access"] if token == "access" else "abc.def.ghi"
    response = refresh(raw)
    assert response.status_code == 401
    assert words in response.json()["detail"]
