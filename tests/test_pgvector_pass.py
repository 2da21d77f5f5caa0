"""tests/pgvector_pass.py starts its PostgreSQL wherever the checkout is: as root, from a
checkout in a private (0700) folder that the server's own user cannot enter."""

from __future__ import annotations

import os
import pwd
import stat

import psycopg
import pytest

from tests import pgvector_pass

pytestmark = pytest.mark.slow


def _postgres_user() -> bool:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return True


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the server as root would (as `make test`)")
@pytest.mark.skipif(not _postgres_user(), reason="no 'postgres' user to run the server as")
def test_the_server_starts_from_a_checkout_in_a_private_folder(tmp_path, monkeypatch):
    try:
        installed = pgvector_pass.bin_dir()
    except pgvector_pass.CannotStart as exc:
        pytest.skip(str(exc))
    private = tmp_path / "home"
    private.mkdir()
    os.chmod(private, 0o700)  # whatever the umask
    in_private = pgvector_pass.copy_installation(installed, private / "checkout" / "site-packages")
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    monkeypatch.setattr(pgvector_pass, "bin_dir", lambda: in_private)

    with pgvector_pass.server() as url:
        socket_dir = url.split("@", 1)[1].rsplit("/", 1)[0].replace("%2F", "/")
        with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres") as db:
            db.execute("CREATE EXTENSION vector")
            assert db.execute("SELECT '[1,2]'::vector <-> '[1,2]'::vector").fetchone() == (0.0,)
