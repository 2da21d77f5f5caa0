import pytest

from accounts.models import User
from api.accounts import REGISTERED
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def test_register_creates_the_account_then_login_gives_the_tokens(anon):
    response = anon.post(
        "/register",
        {"email": "New@Example.com", "password": "a long passphrase 42", "name": "Nia"},
        format="json",
    )
    assert response.status_code == 202
    assert response.json() == {"detail": REGISTERED}
    user = User.objects.get(email="new@example.com")
    assert user.name == "Nia" and user.check_password("a long passphrase 42")
    login = anon.post(
        "/login", {"email": "new@example.com", "password": "a long passphrase 42"}, format="json"
    )
    assert login.status_code == 200 and login.json()["access"]


def test_register_with_trailing_slash_works_too(anon):
    response = anon.post(
        "/register/", {"email": "a@example.com", "password": "another long phrase"}, format="json"
    )
    assert response.status_code == 202


def test_a_taken_address_gets_the_answer_a_new_one_gets(anon, owner):
    def register(email: str, password: str = "a long passphrase 42"):
        response = anon.post(
            "/register", {"email": email, "password": password, "name": "Mallory"}, format="json"
        )
        return response.status_code, response.json(), sorted(response.headers)

    assert register("OWNER@example.com") == register("fresh@example.com")
    assert register("owner@example.com", "12345678") == register("fresh2@example.com", "12345678")
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD) and owner.name == "Olive"  # left as it was
    assert User.objects.filter(email="fresh@example.com").exists()
    assert not User.objects.filter(email="fresh2@example.com").exists()  # weak password: 400


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
