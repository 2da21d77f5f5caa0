import re

import pytest
from django.test import Client

from accounts.models import User
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def test_signup_creates_the_account_and_logs_the_person_in(client):
    page = client.get("/accounts/signup/")
    assert page.status_code == 200
    assert 'for="id_email"' in page.content.decode()
    before = client.session.session_key
    response = client.post(
        "/accounts/signup/",
        {"email": "New@Example.com", "name": "Nia", "password1": PASSWORD, "password2": PASSWORD},
        follow=True,
    )
    assert response.redirect_chain == [("/dashboard/", 302)]
    user = User.objects.get(email="new@example.com")
    assert user.name == "Nia" and user.check_password(PASSWORD)
    assert response.context["user"] == user
    assert client.session.session_key != before  # a new session: none fixed in advance
    html = response.content.decode()
    assert "Your account is ready and you are logged in." in html
    assert "Create your first mind" in html  # the empty minds page


def test_signup_with_a_taken_address_changes_nothing_and_logs_no_one_in(client, owner):
    form = {"email": "Owner@Example.com", "name": "Mallory", "password1": "x" + PASSWORD}
    response = client.post("/accounts/signup/", {**form, "password2": form["password1"]})
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert "already has an account" in client.get("/accounts/login/").content.decode()
    assert client.get("/dashboard/").status_code == 302  # not signed in
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD) and owner.name == "Olive"  # left as it was


def test_the_apis_sign_up_still_answers_a_taken_address_like_a_new_one(client, owner):
    answers = []
    for email in ("Owner@Example.com", "someone.new@example.com"):
        body = {"email": email, "password": "x" + PASSWORD}
        response = client.post("/register", body, content_type="application/json")
        answers.append((response.status_code, response.content))
    assert answers[0] == answers[1]


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"password1": "short", "password2": "short"}, "password1", "too short"),
        ({"password1": PASSWORD, "password2": "different"}, "password2", "differ"),
    ],
)
def test_signup_errors_are_shown_on_the_field(client, owner, data, field, message):
    form = {"email": "x@example.com", "password1": PASSWORD, "password2": PASSWORD, **data}
    response = client.post("/accounts/signup/", form)
    assert response.status_code == 200
    assert message in " ".join(response.context["form"].errors[field])
    assert User.objects.count() == 1


def test_signup_names_every_password_problem_at_once_whoever_has_the_address(owner):
    answers = []
    for email in ("owner@example.com", "someone.new@example.com"):
        form = {"email": email, "name": "Mallory", "password1": "1234", "password2": "12345"}
        response = Client().post("/accounts/signup/", form)
        errors = response.context["form"].errors
        answers.append({field: list(messages) for field, messages in errors.items()})
        html = response.content.decode()
        assert "data-error-summary" in html and 'href="#id_password2"' in html
        assert f'value="{email}"' in html and 'value="Mallory"' in html
    # The same problems whether or not the address has an account.
    assert answers[0] == answers[1]
    first = " ".join(answers[0]["password1"])
    assert "too short" in first and "too common" in first and "entirely numeric" in first
    assert answers[0]["password2"] == ["The two passwords differ."]
    assert User.objects.count() == 1


def test_signup_closed_when_registration_is_off(client, settings):
    settings.SYNAPSE_ALLOW_REGISTRATION = False
    assert client.get("/accounts/signup/").status_code == 403
    response = client.post(
        "/accounts/signup/",
        {"email": "x@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 403
    assert not User.objects.exists()
    assert "/accounts/signup/" not in client.get("/accounts/login/").content.decode()


def test_login_with_email_and_password(client, owner):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post(
        "/accounts/login/", {"username": "OWNER@example.com", "password": PASSWORD}
    )
    assert response.status_code == 302
    assert response["Location"] == "/dashboard/"
    assert client.get("/dashboard/").status_code == 200


def test_wrong_password_stays_on_login(client, owner):
    response = client.post("/accounts/login/", {"username": owner.email, "password": "nope"})
    assert response.status_code == 200
    assert response.context["form"].non_field_errors()
    assert client.get("/dashboard/").status_code == 302


def test_login_follows_next(client, owner, mind):
    target = f"/dashboard/minds/{mind.pk}/review/"
    response = client.post(
        f"/accounts/login/?next={target}",
        {"username": owner.email, "password": PASSWORD, "next": target},
    )
    assert response["Location"] == target


def test_logout_needs_post_and_ends_the_session(web):
    assert web.get("/accounts/logout/").status_code == 405
    response = web.post("/accounts/logout/")
    assert response.status_code == 302
    assert web.get("/dashboard/").status_code == 302


def test_password_change(web, owner):
    assert web.get("/accounts/password/").status_code == 200
    new = "another long passphrase 42"
    response = web.post(
        "/accounts/password/",
        {"old_password": PASSWORD, "new_password1": new, "new_password2": new},
    )
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/done/"
    owner.refresh_from_db()
    assert owner.check_password(new)
    assert web.get("/dashboard/").status_code == 200  # this session stays signed in


def test_password_change_needs_login(client):
    response = client.get("/accounts/password/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_csrf_is_enforced_on_login_and_dashboard_posts(owner, mind):
    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/accounts/login/", {"username": owner.email, "password": PASSWORD})
    assert response.status_code == 403
    strict.force_login(owner)
    response = strict.post(f"/dashboard/minds/{mind.pk}/rotate-key/")
    assert response.status_code == 403
    old_hash = mind.key_hash
    mind.refresh_from_db()
    assert mind.key_hash == old_hash
    # With the token from the form, the same POST goes through.
    page = strict.get(f"/dashboard/minds/{mind.pk}/rotate-key/")
    token = page.cookies["csrftoken"].value
    form_token = re.search(r'name="form_token" value="([^"]+)"', page.content.decode())[1]
    response = strict.post(
        f"/dashboard/minds/{mind.pk}/rotate-key/",
        {"csrfmiddlewaretoken": token, "form_token": form_token},
    )
    assert response.status_code == 200  # the page with the new key


def test_login_attempts_are_rate_limited_per_address(client, owner):
    for _ in range(10):
        client.post("/accounts/login/", {"username": owner.email, "password": "guess"})
    response = client.post("/accounts/login/", {"username": owner.email, "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many attempts" in response.content.decode()
    assert client.get("/dashboard/").status_code == 302
    assert client.get("/accounts/login/").status_code == 200  # the page itself still shows


def test_signup_attempts_share_the_login_budget(client):
    for n in range(10):
        client.post("/accounts/signup/", {"email": f"u{n}@example.com", "password1": "x"})
    response = client.post(
        "/accounts/signup/",
        {"email": "late@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 429
    assert not User.objects.filter(email="late@example.com").exists()
