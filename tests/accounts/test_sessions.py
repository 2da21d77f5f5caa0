"""Sessions keep only a hash of their key in the database (accounts/sessions.py): a key read
from `django_session`, or from a backup of it, opens neither the dashboard nor the admin;
the cookie does. Login, logout, key cycling, collisions and `clearsessions` work as before."""

from __future__ import annotations

import importlib
import sqlite3
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.apps import apps
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore as ClearKeyStore
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from accounts.sessions import SessionStore, session_key_hash
from tests.factories import PASSWORD, user_make

pytestmark = pytest.mark.django_db

COOKIE = settings.SESSION_COOKIE_NAME
upgrade = importlib.import_module("accounts.migrations.0003_end_sessions_with_clear_keys")


@pytest.fixture
def staff():
    return user_make("admin@example.com", is_staff=True, is_superuser=True)


def signed_in(email: str, path: str = "/accounts/login/") -> Client:
    """A browser signed in with the real log-in form (no force_login shortcut)."""
    browser = Client()
    response = browser.post(path, {"username": email, "password": PASSWORD})
    assert response.status_code == 302, response.content
    return browser


def with_cookie(key: str) -> Client:
    browser = Client()
    browser.cookies[COOKIE] = key
    return browser


def assert_signed_out(browser: Client) -> None:
    assert browser.get("/dashboard/").status_code == 302
    assert browser.get("/admin/").status_code == 302


def test_the_engine_is_the_hashing_store():
    assert settings.SESSION_ENGINE == "accounts.sessions"


def test_a_key_read_from_the_database_opens_neither_dashboard_nor_admin(owner, staff):
    person, admin = signed_in(owner.email), signed_in(staff.email, "/admin/login/?next=/admin/")
    assert person.get("/dashboard/").status_code == 200  # the real cookies work
    assert admin.get("/admin/").status_code == 200
    rows = list(Session.objects.values_list("session_key", flat=True))
    assert len(rows) == 2
    cookies = {person.cookies[COOKIE].value, admin.cookies[COOKIE].value}
    assert not cookies & set(rows)  # the database holds no cookie's key
    assert set(rows) == {session_key_hash(cookie) for cookie in cookies}
    for row_key in rows:
        assert_signed_out(with_cookie(row_key))


@pytest.mark.sqlite_only  # the backup command copies SQLite files
@pytest.mark.django_db(transaction=True)
def test_a_key_read_from_a_backup_opens_nothing(owner, staff, tmp_path):
    person, admin = signed_in(owner.email), signed_in(staff.email, "/admin/login/?next=/admin/")
    target = tmp_path / "backup.sqlite3"
    call_command("backup", str(target))
    copy = sqlite3.connect(target)
    try:
        rows = [key for (key,) in copy.execute("SELECT session_key FROM django_session")]
    finally:
        copy.close()
    assert len(rows) == 2
    for row_key in rows:
        assert_signed_out(with_cookie(row_key))
    assert person.get("/dashboard/").status_code == 200
    assert admin.get("/admin/").status_code == 200


def test_login_cycles_the_key_and_logout_deletes_the_row(owner):
    browser = Client()
    browser.get("/accounts/login/")
    anonymous = SessionStore()
    anonymous["theme"] = "dark"
    anonymous.save()
    browser.cookies[COOKIE] = anonymous.session_key
    browser.post("/accounts/login/", {"username": owner.email, "password": PASSWORD})
    key = browser.cookies[COOKIE].value
    assert key != anonymous.session_key
    assert not Session.objects.filter(session_key=session_key_hash(anonymous.session_key)).exists()
    assert SessionStore(session_key=key).load()["theme"] == "dark"  # the data moved along
    assert browser.get("/dashboard/").status_code == 200
    browser.post("/accounts/logout/")
    assert not Session.objects.filter(session_key=session_key_hash(key)).exists()
    assert with_cookie(key).get("/dashboard/").status_code == 302


def test_exists_create_and_delete_go_by_the_hash(monkeypatch):
    taken = SessionStore()
    taken["n"] = 1
    taken.save()
    assert taken.exists(taken.session_key)
    assert not taken.exists(session_key_hash(taken.session_key))
    # A new key that collides with a stored one is drawn again.
    drawn = iter([taken.session_key, "b" * 32])
    fresh = SessionStore()
    monkeypatch.setattr(fresh, "_get_new_session_key", lambda: next(drawn))
    fresh.create()
    assert fresh.session_key == "b" * 32
    assert Session.objects.count() == 2
    fresh.delete()
    taken.delete(taken.session_key)
    assert Session.objects.count() == 0


def test_clearsessions_removes_expired_rows():
    old, current = SessionStore(), SessionStore()
    old.set_expiry(timezone.now() - timedelta(seconds=1))
    old.save()
    current.save()
    call_command("clearsessions")
    assert list(Session.objects.values_list("session_key", flat=True)) == [
        session_key_hash(current.session_key)
    ]


def test_sessions_stored_with_clear_keys_end_at_the_upgrade(owner):
    # A session as the store before this one wrote it: the cookie's key is the row's key,
    # and so is every backup's copy of it.
    before = ClearKeyStore()
    before["_auth_user_id"] = str(owner.pk)
    before["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    before["_auth_user_hash"] = owner.get_session_auth_hash()
    before.save()
    browser = signed_in(owner.email)
    upgrade.end_sessions_with_clear_keys(apps, None)
    assert list(Session.objects.values_list("session_key", flat=True)) == [
        session_key_hash(browser.cookies[COOKIE].value)
    ]
    assert with_cookie(before.session_key).get("/dashboard/").status_code == 302
    assert browser.get("/dashboard/").status_code == 200  # a hashed session goes on
    upgrade.end_hashed_sessions(apps, None)  # going back: the older store cannot use them
    assert Session.objects.count() == 0


def test_the_async_methods_go_by_the_hash_too():
    async def round_trip() -> tuple[bool, dict, bool]:
        store = SessionStore()
        await store.aset("n", 1)
        await store.asave()
        key = store.session_key
        found = await store.aexists(key)
        loaded = await SessionStore(session_key=key).aload()
        await store.adelete()
        return found, loaded, await store.aexists(key)

    found, loaded, after_delete = async_to_sync(round_trip)()
    assert found and loaded == {"n": 1} and not after_delete
    assert Session.objects.count() == 0
