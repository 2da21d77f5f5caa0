"""Credentials and the browser side (OWASP API2 broken authentication, API8 misconfiguration).

- Mind Keys exist only as SHA-256 hashes (plus an 11-character display prefix): the raw key
  is nowhere in the database (sessions included), in no cookie and never in a log line, also
  not when a request fails. A new key is shown only on the answer that made it.
- JWTs are short-lived; login, registration and token refresh are throttled per address.
- The dashboard: CSRF on every form, cookies Secure/HttpOnly behind TLS, security headers,
  and a Content-Security-Policy on our own pages.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.messages.storage.cookie import CookieStorage
from django.contrib.sessions.models import Session
from django.db import connection
from django.http import HttpRequest
from django.test import Client, override_settings
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken

from minds.models import Mind
from minds.services import mind_create, mind_rotate_key
from tests.conftest import bearer_client
from tests.factories import PASSWORD, remember

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def every_stored_value() -> str:
    """Every value of every row of every table, as text."""
    values = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            if table.startswith(("sqlite_", "memories_memory_fts")):
                continue
            cursor.execute(f'SELECT * FROM "{table}"')
            values += [str(row) for row in cursor.fetchall()]
    return "\n".join(values)


def test_mind_keys_are_stored_only_as_hashes(owner):
    mind, raw_key = mind_create(owner=owner, name="Hashed")
    rotated = mind_rotate_key(mind=mind)
    mind.refresh_from_db()
    assert mind.key_hash == hashlib.sha256(rotated.encode()).hexdigest()
    assert mind.key_prefix == rotated[:11]
    stored = every_stored_value()
    for key in (raw_key, rotated):
        assert key not in stored
        assert key[11:] not in stored  # the secret part, beyond the display prefix


def every_session() -> str:
    """Every stored session, raw and decoded (the rows are signed and compressed, not secret)."""
    return "\n".join(f"{row.session_data}\n{row.get_decoded()}" for row in Session.objects.all())


def every_cookie(*responses) -> str:
    """Every cookie the responses set, the messages cookie decoded (signed, not encrypted)."""
    texts = []
    for response in responses:
        for name, morsel in response.cookies.items():
            texts.append(f"{name}={morsel.value}")
            if name == "messages":
                decoded = CookieStorage(HttpRequest())._decode(morsel.value) or []
                texts += [message.message for message in decoded]
    return "\n".join(texts)


def form_token(web: Client, url: str) -> str:
    """The one-time token of the form on the page at `url`."""
    return re.search(r'name="form_token" value="([^"]+)"', web.get(url).content.decode())[1]


def assert_shown_once_and_kept_nowhere(key: str, page, *later) -> None:
    assert key.startswith("mk_") and key in page.content.decode()
    assert "no-store" in page["Cache-Control"]
    for text in (every_session(), every_cookie(page, *later), every_stored_value()):
        assert key not in text and key[11:] not in text


def test_a_new_key_in_the_dashboard_is_in_no_session_and_no_cookie(owner):
    web = Client()
    web.force_login(owner)
    created = web.post(
        "/dashboard/minds/new/",
        {
            "name": "Fresh",
            "description": "",
            "form_token": form_token(web, "/dashboard/minds/new/"),
        },
    )
    mind = Mind.objects.get(name="Fresh")
    key = created.context["raw_key"]
    assert Mind.objects.for_key(key) == mind
    # The person goes elsewhere without looking again: nothing kept the key for later.
    later = web.get("/dashboard/")
    assert_shown_once_and_kept_nowhere(key, created, later)
    assert key not in web.get(f"/dashboard/minds/{mind.pk}/key/").content.decode()

    rotate = f"/dashboard/minds/{mind.pk}/rotate-key/"
    rotated = web.post(rotate, {"form_token": form_token(web, rotate)})
    new_key = rotated.context["raw_key"]
    assert new_key != key and Mind.objects.for_key(new_key) == mind
    assert_shown_once_and_kept_nowhere(new_key, rotated, web.get("/dashboard/"))


def test_a_new_key_in_the_admin_is_in_no_message_cookie_and_no_session(owner, django_user_model):
    staff = django_user_model.objects.create_superuser(email="admin@example.com", password="pw")
    admin = Client()
    admin.force_login(staff)
    created = admin.post(
        "/admin/minds/mind/add/", {"owner": owner.pk, "name": "From admin", "description": ""}
    )
    assert created.status_code == 200
    mind = Mind.objects.get(name="From admin")
    key = created.content.decode().split("<code>")[1].split("</code>")[0]
    assert Mind.objects.for_key(key) == mind
    assert_shown_once_and_kept_nowhere(key, created, admin.get("/admin/minds/mind/"))

    rotated = admin.post(
        "/admin/minds/mind/", {"action": "rotate_keys", "_selected_action": [mind.pk]}
    )
    new_key = rotated.content.decode().split("<code>")[1].split("</code>")[0]
    assert Mind.objects.for_key(new_key) == mind
    assert_shown_once_and_kept_nowhere(new_key, rotated, admin.get("/admin/minds/mind/"))


def test_a_mind_key_never_reaches_the_log(owner_mind, caplog, monkeypatch):
    key = owner_mind.key
    agent = bearer_client(key)
    caplog.set_level(logging.DEBUG)  # everything, from every logger
    with override_settings(DEBUG=False):
        remember(owner_mind.mind, "logged", "x")
        agent.get("/memory")
        agent.post("/memory", {"category": "fact", "content": "x"}, format="json")
        agent.get("/memory?limit=0")  # 400
        agent.get("/memory/mem_nosuch")  # 404
        agent.post("/memory/mem_nosuch/verify")  # 403
        agent.put("/memory/recall", {}, format="json")  # 405
        bearer_client(key + "x").get("/memory")  # 401: a key that is almost right
        bearer_client(key[:-1] + "A").get("/memory")
        Client().get(f"/memory?key={key}")  # a key in the URL is not read, nor logged
        Client(HTTP_AUTHORIZATION=f"Bearer {key}").post(
            "/mcp", data="{", content_type="application/json"
        )
        # A 500 while a key is in the Authorization header: the traceback is logged.
        from memories import selectors

        def boom(**kwargs):
            raise RuntimeError("kaboom")

        monkeypatch.setattr(selectors, "memory_stats", boom)
        agent.raise_request_exception = False
        assert agent.get("/memory/stats").status_code == 500
    assert "kaboom" in caplog.text  # the log was captured
    assert key not in caplog.text
    assert key[11:] not in caplog.text
    assert key[11:30] not in caplog.text


def test_jwt_lifetimes_are_short(owner, anon, settings):
    assert settings.SIMPLE_JWT["ACCESS_TOKEN_LIFETIME"] == timedelta(minutes=15)
    assert settings.SIMPLE_JWT["REFRESH_TOKEN_LIFETIME"] == timedelta(days=7)
    tokens = anon.post("/login", {"email": owner.email, "password": PASSWORD}, format="json").json()
    access, refresh = AccessToken(tokens["access"]), RefreshToken(tokens["refresh"])
    assert access["exp"] - access["iat"] == 15 * 60
    assert refresh["exp"] - refresh["iat"] == 7 * 24 * 3600


@pytest.mark.slow
def test_jwt_lifetimes_follow_the_environment(tmp_path):
    script = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
        "'synapse_site.settings'); django.setup(); from django.conf import settings; "
        "print(settings.SIMPLE_JWT['ACCESS_TOKEN_LIFETIME'].total_seconds(), "
        "settings.SIMPLE_JWT['REFRESH_TOKEN_LIFETIME'].total_seconds())"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    env.update(
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        SYNAPSE_JWT_ACCESS_MINUTES="5",
        SYNAPSE_JWT_REFRESH_DAYS="1",
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["300.0", "86400.0"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/login", {"email": "owner@example.com", "password": "wrong"}),
        ("/register", {"email": "new@example.com", "password": "short"}),
        ("/token/refresh", {"refresh": "not-a-token"}),
    ],
)
def test_login_registration_and_refresh_are_throttled(anon, owner, settings, path, body):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": "3/min"},
    }
    statuses = [anon.post(path, body, format="json").status_code for _ in range(4)]
    assert 429 not in statuses[:3] and statuses[3] == 429
    response = anon.post(path, body, format="json")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"] == "rate_limited"


def test_dashboard_forms_need_the_csrf_token(owner, mind):
    from memories.versions import memory_version

    memory = remember(mind, "csrf", "x")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    url = f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/verify/"
    assert browser.post(url).status_code == 403
    memory.refresh_from_db()
    assert not memory.verified
    page = browser.get(f"/dashboard/minds/{mind.pk}/memories/{memory.pk}/")  # the CSRF cookie
    token = browser.cookies["csrftoken"].value
    # The form also sends the version of the memory the page showed.
    form = {"csrfmiddlewaretoken": token, "version": memory_version(page.context["memory"])}
    assert browser.post(url, form).status_code == 302
    memory.refresh_from_db()
    assert memory.verified


SETTINGS_SCRIPT = (
    "import django, os, json; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
    "'synapse_site.settings'); django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY,"
    " s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER]))"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("behind_tls", "expected"),
    [
        ("true", [True, True, True, True, 31536000, ["HTTP_X_FORWARDED_PROTO", "https"]]),
        ("false", [False, False, True, False, 0, None]),
    ],
)
def test_cookies_are_secure_behind_tls(tmp_path, behind_tls, expected):
    import json

    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    env.update(
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        SYNAPSE_BEHIND_TLS=behind_tls,
    )
    result = subprocess.run(
        [sys.executable, "-c", SETTINGS_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expected


def test_security_headers_on_pages_and_api(owner, mind, human):
    browser = Client()
    browser.force_login(owner)
    pages = [
        browser.get("/dashboard/"),
        browser.get(f"/dashboard/minds/{mind.pk}/"),
        Client().get("/accounts/login/"),
        Client().get("/", HTTP_ACCEPT="text/html"),
    ]
    for response in pages:
        assert response.status_code == 200
        assert response["X-Frame-Options"] == "DENY"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Referrer-Policy"] == "same-origin"
        policy = response["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "unsafe-inline" not in policy
    api = human.get("/memory")
    assert api["X-Content-Type-Options"] == "nosniff"
    assert api["X-Frame-Options"] == "DENY"


def test_our_templates_have_nothing_inline_that_the_policy_would_block():
    # The policy forbids inline scripts, styles and handlers; keep the templates that way.
    for template in (ROOT / "templates").rglob("*.html"):
        if "admin" in template.parts:
            continue
        text = template.read_text()
        assert "<script>" not in text and "<script type" not in text, template
        assert "<style" not in text and " style=" not in text, template
        assert " onclick=" not in text and " onload=" not in text, template
        assert "javascript:" not in text, template


def test_the_policy_leaves_the_admin_and_the_api_docs_alone(db):
    for path in ("/admin/login/", "/api/docs"):
        response = Client().get(path)
        assert response.status_code == 200
        assert "Content-Security-Policy" not in response
