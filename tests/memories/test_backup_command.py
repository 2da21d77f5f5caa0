"""`manage.py backup`: a consistent, owner-only copy; never over a file unless --force."""

from __future__ import annotations

import sqlite3
import stat
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections

from memories.services import memory_upsert
from tests.factories import AGENT, remember


def copy_counts(path) -> tuple[str, int]:
    copy = sqlite3.connect(path)
    try:
        integrity = copy.execute("PRAGMA integrity_check").fetchone()[0]
        return integrity, copy.execute("SELECT count(*) FROM memories_memory").fetchone()[0]
    finally:
        copy.close()


@pytest.mark.sqlite_only  # the backup command copies SQLite files
@pytest.mark.django_db(transaction=True)
def test_backup_writes_a_consistent_owner_only_copy(mind, tmp_path, capsys):
    for n in range(5):
        remember(mind, f"k{n}", f"memory {n}")
    target = tmp_path / "synapse-backup.sqlite3"
    call_command("backup", str(target))
    assert copy_counts(target) == ("ok", 5)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert "Backed up 5 memories of 1 minds" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synapse-backup.sqlite3"]


@pytest.mark.sqlite_only  # the backup command copies SQLite files
@pytest.mark.django_db(transaction=True)
def test_backup_refuses_to_overwrite_unless_forced(mind, tmp_path):
    target = tmp_path / "backup.sqlite3"
    target.write_text("something precious")
    with pytest.raises(CommandError, match="--force"):
        call_command("backup", str(target))
    assert target.read_text() == "something precious"
    call_command("backup", str(target), "--force")
    assert copy_counts(target)[0] == "ok"


@pytest.mark.sqlite_only  # the backup command copies SQLite files
@pytest.mark.django_db(transaction=True)
def test_backup_refuses_the_live_database(mind):
    with pytest.raises(CommandError, match="live database"):
        call_command("backup", connection.settings_dict["NAME"], "--force")


@pytest.mark.sqlite_only  # the backup command copies SQLite files
@pytest.mark.django_db(transaction=True)
def test_backup_makes_its_folder_owner_only_as_the_readme_prints_it(mind, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    call_command("backup", "backups/synapse.sqlite3")
    assert copy_counts(tmp_path / "backups" / "synapse.sqlite3")[0] == "ok"
    assert stat.S_IMODE((tmp_path / "backups").stat().st_mode) == 0o700


@pytest.mark.sqlite_only  # the backup command copies SQLite files
@pytest.mark.django_db(transaction=True)
def test_backup_while_a_writer_runs_is_a_consistent_snapshot(mind, tmp_path):
    stop = threading.Event()
    written: list[int] = []

    def write() -> None:
        try:
            n = 0
            while not stop.is_set():
                memory_upsert(mind=mind, actor=AGENT, category="note", key=f"w{n}", content="x")
                written.append(n)
                n += 1
        finally:
            connections.close_all()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while len(written) < 20:
            stop.wait(0.01)
        targets = [tmp_path / f"backup-{i}.sqlite3" for i in range(3)]
        for target in targets:
            call_command("backup", str(target))
    finally:
        stop.set()
        writer.join()
    counts = [copy_counts(target) for target in targets]
    assert all(integrity == "ok" for integrity, _ in counts)
    assert [n for _, n in counts] == sorted(n for _, n in counts)
    assert counts[0][1] >= 20 and counts[-1][1] <= len(written)


def test_backup_on_postgresql_points_to_pg_dump(monkeypatch):
    monkeypatch.setattr(connections["default"], "vendor", "postgresql")
    with pytest.raises(CommandError, match="pg_dump"):
        call_command("backup", "/tmp/never-written.sqlite3")
