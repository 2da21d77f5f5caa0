"""Three actors every test can use: an owner with a mind, a second user, a stranger mind
(made with tests/factories.py, where every test's users, minds and memories come from).

- `owner` owns `mind`; `agent` is an API client holding `mind`'s Mind Key, `human` one
  holding the owner's JWT.
- `other_user` is a second person with no minds; `other_human` is their JWT client.
- `stranger_mind` belongs to someone else; `stranger_agent` holds its key. It must never
  see the owner's data, and the owner must never see its data.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from dataclasses import dataclass

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import RefreshToken

from accounts.models import User
from minds.models import Mind
from tests.factories import mind_make, user_make


def pytest_configure(config):
    from django.conf import settings

    # Fast hashing and plain static storage (no collectstatic manifest) in tests.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    # Background tasks run at once, in the process that enqueues them, on an in-memory queue.
    from huey.contrib.djhuey import HUEY

    HUEY.immediate = True
    # The default file cache, in a directory of this run's own: two test runs on one machine
    # must not share (or clear) each other's rate-limit counters.
    if settings.CACHES["default"]["BACKEND"] == "synapse_site.cache.SharedFileCache":
        location = tempfile.mkdtemp(prefix="synapse-test-cache-")
        config.add_cleanup(lambda: shutil.rmtree(location, ignore_errors=True))
        settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": location}}


def pytest_collection_modifyitems(config, items):
    # `make test` runs the suite twice, on SQLite and on PostgreSQL; a test of one backend's
    # internals is marked and skipped, with the reason, on the other.
    from django.db import connection

    vendor = connection.vendor
    for item in items:
        if "sqlite_only" in item.keywords and vendor != "sqlite":
            item.add_marker(pytest.mark.skip(reason=f"SQLite only; this pass runs on {vendor}"))
        if "postgres_only" in item.keywords and vendor != "postgresql":
            item.add_marker(pytest.mark.skip(reason=f"PostgreSQL only; this pass runs on {vendor}"))
    # Under xdist, files with slow tests first (pyproject.toml keeps this order for the
    # scheduler): the workers start on the long files and end on short ones, instead of one
    # worker finishing a long tail alone.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        slow_files = {item.path for item in items if "slow" in item.keywords}
        items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture(autouse=True)
def _fresh_cache():
    # Throttle buckets and other cached state must not leak between tests.
    cache.clear()
    yield
    cache.clear()


@dataclass
class MindWithKey:
    mind: Mind
    key: str


def bearer_client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def jwt_for(user: User) -> str:
    return str(RefreshToken.for_user(user).access_token)


@pytest.fixture
def owner(db) -> User:
    return user_make("owner@example.com", name="Olive")


@pytest.fixture
def owner_mind(owner) -> MindWithKey:
    mind, key = mind_make(owner, "Olive's Mind")
    return MindWithKey(mind, key)


@pytest.fixture
def mind(owner_mind) -> Mind:
    return owner_mind.mind


@pytest.fixture
def agent(owner_mind) -> APIClient:
    """The owner's agent: Bearer Mind Key of `mind`."""
    return bearer_client(owner_mind.key)


@pytest.fixture
def human(owner, owner_mind) -> APIClient:
    """The owner in person: Bearer JWT (owns exactly one mind, so no ?mind= is needed)."""
    return bearer_client(jwt_for(owner))


@pytest.fixture
def other_user(db) -> User:
    return user_make("other@example.com")


@pytest.fixture
def other_human(other_user) -> APIClient:
    return bearer_client(jwt_for(other_user))


@pytest.fixture
def stranger_owner(db) -> User:
    return user_make("stranger@example.com")


@pytest.fixture
def stranger_mind(stranger_owner) -> MindWithKey:
    mind, key = mind_make(stranger_owner, "Stranger's Mind")
    return MindWithKey(mind, key)


@pytest.fixture
def stranger_agent(stranger_mind) -> APIClient:
    return bearer_client(stranger_mind.key)


@pytest.fixture
def admin_client(client, django_user_model):
    """A staff member signed in to the admin (an email account: the user model has no username)."""
    admin = django_user_model.objects.create_superuser(email="admin@example.com", password="pw")
    client.force_login(admin)
    return client


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture
def no_network(monkeypatch):
    """A refusal must be decided without a connection or a lookup."""

    def refuse(*args, **kwargs):
        raise AssertionError("the server tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
