"""minds/migrations/0003: a key an older dashboard left in a session row is dropped."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session

pytestmark = pytest.mark.django_db

forget = importlib.import_module("minds.migrations.0003_forget_keys_in_sessions")


def test_a_key_left_in_a_session_is_dropped_and_the_rest_kept():
    old = SessionStore()
    old[forget.OLD_ENTRY] = {"mind": "m_x", "key": "mk_secret_left_behind"}
    old["_auth_user_id"] = "1"
    old.save()
    other = SessionStore()
    other["theme"] = "dark"
    other.save()

    forget.forget_keys(apps, None)

    assert Session.objects.count() == 2
    assert SessionStore(session_key=old.session_key).load() == {"_auth_user_id": "1"}
    assert SessionStore(session_key=other.session_key).load() == {"theme": "dark"}
