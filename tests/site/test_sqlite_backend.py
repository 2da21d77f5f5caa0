"""synapse_site/sqlite_backend: SQLite as Django runs it, whose BEGIN waits for the write
lock in short steps instead of SQLite's sleeping busy timeout, and fails as before once the
busy timeout has passed."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from django.conf import settings
from django.db import OperationalError, connection, connections, transaction

from minds.models import Mind
from synapse_site.sqlite_backend.base import DatabaseWrapper

pytestmark = [pytest.mark.sqlite_only, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def holder():
    """Another connection to the database file, holding its write lock until released
    (asked for after the fixtures that write)."""
    other = sqlite3.connect(
        connection.settings_dict["NAME"], isolation_level=None, check_same_thread=False
    )
    other.execute("BEGIN IMMEDIATE")
    yield other
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.close()


def busy_timeout() -> int:
    connection.ensure_connection()
    return int(connection.connection.execute("PRAGMA busy_timeout").fetchone()[0])


def test_the_sqlite_database_runs_on_this_backend():
    assert settings.DATABASES["default"]["ENGINE"] == "synapse_site.sqlite_backend"
    assert isinstance(connections["default"], DatabaseWrapper)
    assert connection.vendor == "sqlite"
    assert connection.busy_timeout_ms == busy_timeout() == 20000


def test_a_transaction_waits_for_the_lock_and_then_writes(mind, holder):
    released = threading.Event()

    def release() -> None:
        holder.execute("COMMIT")
        released.set()

    timer = threading.Timer(0.3, release)
    timer.start()
    try:
        with transaction.atomic():
            assert released.is_set()  # BEGIN came back only once the lock was free
            Mind.objects.filter(pk=mind.pk).update(description="written")
    finally:
        timer.cancel()
    assert Mind.objects.get(pk=mind.pk).description == "written"
    assert busy_timeout() == 20000  # other statements wait as SQLite does, as before


def test_it_gives_up_after_the_busy_timeout_as_sqlite_would(mind, holder, monkeypatch):
    connection.ensure_connection()
    monkeypatch.setattr(connection, "busy_timeout_ms", 200)
    with pytest.raises(OperationalError, match="database is locked"), transaction.atomic():
        Mind.objects.filter(pk=mind.pk).update(description="never")
    assert not connection.in_atomic_block
    assert busy_timeout() == 200  # put back: the connection's own value
    holder.execute("ROLLBACK")
    assert Mind.objects.get(pk=mind.pk).description != "never"


def test_other_errors_at_begin_are_not_retried(monkeypatch):
    calls = []

    def refuse(self):
        calls.append(1)
        raise OperationalError("disk I/O error") from sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(
        "django.db.backends.sqlite3.base.DatabaseWrapper._start_transaction_under_autocommit",
        refuse,
    )
    with pytest.raises(OperationalError, match="disk I/O"), transaction.atomic():
        pass
    assert calls == [1]
    assert busy_timeout() == 20000
