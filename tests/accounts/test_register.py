import pytest

from accounts.models import User

pytestmark = pytest.mark.django_db


def test_register_creates_user_and_returns_tokens(anon):
    response = anon.post(
        "/register",
        {"email": "New@Example.com", "password": "a long passphrase 42", "name": "Nia"},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert body["user"]["email"] == "new@example.com"
    assert body["user"]["name"] == "Nia"
    assert body["access"] and body["refresh"]
    assert User.objects.get(email="new@example.com").check_password("a long passphrase 42")


def test_register_with_trailing_slash_works_too(anon):
    response = anon.post(
        "/register/", {"email": "a@example.com", "password": "another long phrase"}, format="json"
    )
    assert response.status_code == 201


def test_weak_password_is_a_field_error(anon):
    response = anon.post(
        "/register", {"email": "weak@example.com", "password": "12345678"}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid"
    assert "password" in body["fields"]
    assert not User.objects.filter(email="weak@example.com").exists()


def test_password_similar_to_email_is_refused(anon):
    response = anon.post(
        "/register",
        {"email": "marmalade.sandwich@example.com", "password": "marmalade.sandwich"},
        format="json",
    )
    assert response.status_code == 400
    assert "password" in response.json()["fields"]


def test_duplicate_email_is_refused_case_insensitively(anon, owner):
    response = anon.post(
        "/register",
        {"email": "OWNER@example.com", "password": "a long passphrase 42"},
        format="json",
    )
    assert response.status_code == 400
    assert "email" in response.json()["fields"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"password": "a long passphrase 42"}, "email"),
        ({"email": "not-an-email", "password": "a long passphrase 42"}, "email"),
        ({"email": "x@example.com"}, "password"),
        ({"email": ["x@example.com"], "password": "a long passphrase 42"}, "email"),
    ],
)
def test_bad_registration_names_the_field(anon, body, field):
    response = anon.post("/register", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["fields"]


def test_registration_can_be_closed(anon, settings):
    settings.SYNAPSE_ALLOW_REGISTRATION = False
    response = anon.post(
        "/register",
        {"email": "late@example.com", "password": "a long passphrase 42"},
        format="json",
    )
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert not User.objects.filter(email="late@example.com").exists()


def test_malformed_json_is_a_400(anon):
    response = anon.generic("POST", "/register", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "malformed_body"


def test_form_encoded_body_is_415(anon):
    response = anon.post("/register", {"email": "f@example.com", "password": "x"})
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"
