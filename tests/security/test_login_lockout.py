"""Password guessing (OWASP API2): every login form locks an (email, address) pair out.

After SYNAPSE_LOGIN_FAILURE_LIMIT wrong passwords for one email from one address, logins to
that email from that address are refused, the right password included, until the cool-off
has passed (django-axes, synapse_site/lockout.py). The per-address login rate limit still comes
first on every form; most tests here switch it off to look at the lockout alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
WRONG = "not the password at all"
STAFF_EMAIL = "admin@example.com"


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_superuser(email=STAFF_EMAIL, password=PASSWORD)


@pytest.fixture
def no_rate_limit(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": None},
    }


@pytest.fixture
def limit(settings) -> int:
    assert settings.AXES_ENABLED
    return settings.AXES_FAILURE_LIMIT


def admin_login(browser: Client, email: str, password: str, **extra):
    return browser.post(
        "/admin/login/?next=/admin/",
        {"username": email, "password": password, "next": "/admin/"},
        **extra,
    )


def dashboard_login(browser: Client, email: str, password: str):
    return browser.post("/accounts/login/", {"username": email, "password": password})


def api_login(client: APIClient, email: str, password: str):
    return client.post("/login", {"email": email, "password": password}, format="json")


def assert_locked_page(response) -> None:
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert int(response["Retry-After"]) == 15 * 60


def test_admin_login_refuses_even_the_right_password_after_repeated_failures(
    staff, no_rate_limit, limit
):
    browser = Client()
    for _ in range(limit - 1):
        assert admin_login(browser, STAFF_EMAIL, WRONG).status_code == 200  # the form again
    assert_locked_page(admin_login(browser, STAFF_EMAIL, WRONG))
    for _ in range(30):  # guessing on changes nothing and writes nothing
        assert_locked_page(admin_login(browser, STAFF_EMAIL, WRONG))
    assert_locked_page(admin_login(browser, STAFF_EMAIL, PASSWORD))
    assert browser.get("/admin/").status_code == 302  # not signed in
    assert AccessAttempt.objects.get().failures_since_start == limit


def test_the_lockout_is_per_email_and_address_and_ignores_case(staff, owner, no_rate_limit, limit):
    browser = Client()
    for n in range(limit):
        email = STAFF_EMAIL.upper() if n % 2 else STAFF_EMAIL
        admin_login(browser, email, WRONG)
    assert_locked_page(admin_login(browser, "Admin@Example.com", PASSWORD))
    # The same person from another address, and another account from this one, get in.
    elsewhere = Client(REMOTE_ADDR="192.0.2.7")
    assert admin_login(elsewhere, STAFF_EMAIL, PASSWORD).status_code == 302
    assert dashboard_login(Client(), owner.email, PASSWORD).status_code == 302


def test_the_lockout_ends_after_the_cool_off(staff, no_rate_limit, limit):
    browser = Client()
    for _ in range(limit):
        admin_login(browser, STAFF_EMAIL, WRONG)
    assert_locked_page(admin_login(browser, STAFF_EMAIL, PASSWORD))
    attempt = AccessAttempt.objects.get()
    attempt.attempt_time -= timedelta(minutes=15, seconds=1)
    attempt.save()
    assert admin_login(browser, STAFF_EMAIL, PASSWORD).status_code == 302


def test_every_login_form_counts_toward_one_lockout(owner, no_rate_limit, limit):
    api, browser = APIClient(), Client()
    for n in range(limit):
        if n % 3 == 0:
            assert api_login(api, owner.email, WRONG).status_code in (401, 429)
        elif n % 3 == 1:
            dashboard_login(browser, owner.email, WRONG)
        else:
            admin_login(browser, owner.email, WRONG)
    assert_locked_page(dashboard_login(browser, owner.email, PASSWORD))
    assert browser.get("/dashboard/").status_code == 302
    response = api_login(api, owner.email, PASSWORD)
    assert response.status_code == 429
    body = response.json()
    assert body["error"] == "rate_limited"
    assert "Too many failed logins" in body["detail"]
    assert int(response["Retry-After"]) == 15 * 60
    assert "access" not in body


def test_the_api_login_answers_the_lockout_in_json(owner, no_rate_limit, limit):
    api = APIClient()
    statuses = [api_login(api, owner.email, WRONG).status_code for _ in range(limit)]
    assert statuses == [401] * (limit - 1) + [429]
    response = api_login(api, owner.email, PASSWORD)
    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    assert set(response.json()) == {"error", "detail", "retry_after"}


def test_a_successful_login_clears_the_count(owner, no_rate_limit, limit):
    browser = Client()
    for _ in range(limit - 1):
        dashboard_login(browser, owner.email, WRONG)
    assert dashboard_login(browser, owner.email, PASSWORD).status_code == 302
    browser.post("/accounts/logout/")
    for _ in range(limit - 1):
        dashboard_login(browser, owner.email, WRONG)
    assert dashboard_login(browser, owner.email, PASSWORD).status_code == 302


def test_a_forwarded_for_header_buys_no_fresh_attempts(staff, no_rate_limit, limit, settings):
    browser = Client()
    for n in range(limit):
        admin_login(browser, STAFF_EMAIL, WRONG, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")
    assert_locked_page(
        admin_login(browser, STAFF_EMAIL, PASSWORD, HTTP_X_FORWARDED_FOR="198.51.100.200")
    )
    # Behind one proxy of ours (SYNAPSE_NUM_PROXIES=1) the header names the client, as it
    # does for the rate limits: another client behind that proxy is not locked out.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    for _ in range(limit):
        admin_login(browser, STAFF_EMAIL, WRONG, HTTP_X_FORWARDED_FOR="203.0.113.1")
    assert_locked_page(
        admin_login(browser, STAFF_EMAIL, PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.1")
    )
    other = admin_login(browser, STAFF_EMAIL, PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.2")
    assert other.status_code == 302


def test_the_admin_login_shares_the_per_address_rate_limit(staff, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": "3/min"},
    }
    browser = Client()
    for n in range(3):  # three different accounts: no lockout, only the rate
        assert admin_login(browser, f"user{n}@example.com", WRONG).status_code == 200
    response = admin_login(browser, STAFF_EMAIL, PASSWORD)
    assert response.status_code == 429
    assert "Too many attempts" in response.content.decode()
    assert admin_login(Client(REMOTE_ADDR="192.0.2.9"), STAFF_EMAIL, PASSWORD).status_code == 302


def test_force_login_and_sessions_are_untouched(owner, mind, no_rate_limit, limit):
    for _ in range(limit):
        dashboard_login(Client(), owner.email, WRONG)
    browser = Client()
    browser.force_login(owner)  # a session login without a password: no lockout applies
    assert browser.get("/dashboard/").status_code == 200


# --- Password changes: the old password is a guess like a login's ------------------------

NEW = "a brand new passphrase 42"


def change_password(browser: Client, old: str, *, path: str = "/accounts/password/"):
    return browser.post(path, {"old_password": old, "new_password1": NEW, "new_password2": NEW})


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def assert_password_change_locked(response) -> None:
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many wrong passwords" in page and "Your password was not changed" in page
    assert int(response["Retry-After"]) == 15 * 60


def test_wrong_old_passwords_lock_the_password_change_and_the_logins(owner, no_rate_limit, limit):
    browser = signed_in(owner)
    for _ in range(limit - 1):
        response = change_password(browser, WRONG)
        assert response.status_code == 200  # the form again, with its error
        assert "old password was entered incorrectly" in response.content.decode()
    assert_password_change_locked(change_password(browser, WRONG))
    assert_password_change_locked(change_password(browser, PASSWORD))  # the right one too
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD) and not owner.check_password(NEW)
    # One lockout for the pair: logins to this email from this address wait as well.
    assert_locked_page(dashboard_login(Client(), owner.email, PASSWORD))
    assert api_login(APIClient(), owner.email, PASSWORD).status_code == 429
    # From another address the person still gets in, and may change the password there.
    elsewhere = Client(REMOTE_ADDR="192.0.2.7")
    assert dashboard_login(elsewhere, owner.email, PASSWORD).status_code == 302
    assert change_password(elsewhere, PASSWORD).status_code == 302


def test_failed_logins_lock_the_password_change_too(owner, no_rate_limit, limit):
    for _ in range(limit):
        api_login(APIClient(), owner.email, WRONG)
    assert_password_change_locked(change_password(signed_in(owner), PASSWORD))
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)


def test_a_failed_password_change_keeps_no_password_in_the_attempts_table(
    owner, no_rate_limit, limit
):
    browser = signed_in(owner)
    change_password(browser, WRONG)
    stored = AccessAttempt.objects.get()
    assert stored.username == owner.email and stored.failures_since_start == 1
    for secret in (WRONG, NEW, PASSWORD):
        assert secret not in stored.post_data


def test_the_password_change_shares_the_per_address_rate_limit(owner, other_user, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": "3/min"},
    }
    for n in range(3):  # three other accounts: no lockout, only the rate
        dashboard_login(Client(), f"user{n}@example.com", WRONG)
    response = change_password(signed_in(owner), PASSWORD)
    assert response.status_code == 429
    assert "Too many attempts" in response.content.decode()
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)
    elsewhere = signed_in(other_user)
    elsewhere.defaults["REMOTE_ADDR"] = "192.0.2.9"
    assert change_password(elsewhere, PASSWORD).status_code == 302


def test_the_admin_password_change_counts_toward_the_same_lockout(staff, no_rate_limit, limit):
    browser = signed_in(staff)
    path = "/admin/password_change/"
    assert browser.get(path).status_code == 200
    for _ in range(limit - 1):
        assert change_password(browser, WRONG, path=path).status_code == 200
    assert_password_change_locked(change_password(browser, WRONG, path=path))
    assert_password_change_locked(change_password(browser, PASSWORD, path=path))
    assert_locked_page(admin_login(Client(), STAFF_EMAIL, PASSWORD))
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD)


def test_the_admin_password_change_works_and_is_staff_only(staff, owner, no_rate_limit):
    path = "/admin/password_change/"
    outsider = signed_in(owner)
    assert outsider.get(path).status_code == 302  # to the admin's log-in page
    assert change_password(outsider, PASSWORD, path=path).status_code == 302
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)
    browser = signed_in(staff)
    response = change_password(browser, PASSWORD, path=path)
    assert response.status_code == 302
    assert response["Location"] == "/admin/password_change/done/"
    staff.refresh_from_db()
    assert staff.check_password(NEW)
    assert browser.get("/admin/").status_code == 200  # this session stays signed in


SETTINGS_SCRIPT = (
    "import django, os, json; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
    "'synapse_site.settings'); django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.AXES_ENABLED, s.AXES_FAILURE_LIMIT, "
    "s.AXES_COOLOFF_TIME.total_seconds()]))"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("limit_env", "cooloff_env", "expected"),
    [("", "", [True, 5, 900.0]), ("3", "60", [True, 3, 3600.0]), ("0", "", [False, 1, 900.0])],
)
def test_the_lockout_follows_the_environment(tmp_path, limit_env, cooloff_env, expected):
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    env.update(
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        SYNAPSE_LOGIN_FAILURE_LIMIT=limit_env,
        SYNAPSE_LOGIN_COOLOFF_MINUTES=cooloff_env,
    )
    result = subprocess.run(
        [sys.executable, "-c", SETTINGS_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expected
