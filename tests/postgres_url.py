"""Which PostgreSQL the second pass of `make test` uses, if one answers.

    .venv/bin/python tests/postgres_url.py   # prints the URL; exit 1 (with why) if none

SYNAPSE_TEST_DATABASE_URL names it (default postgres://postgres@127.0.0.1:5432/synapse);
the tests then create and drop test_<name><SYNAPSE_TEST_DB_SUFFIX> on that server (with _gw0,
_gw1 … appended, one a pytest-xdist worker).
SYNAPSE_TEST_POSTGRES=required (as .ci/run sets) makes a missing server exit 2: an error,
not a skip.
"""

from __future__ import annotations

import os
import sys

import dj_database_url
import psycopg

DEFAULT = "postgres://postgres@127.0.0.1:5432/synapse"


def main() -> int:
    url = os.environ.get("SYNAPSE_TEST_DATABASE_URL", "").strip() or DEFAULT
    required = os.environ.get("SYNAPSE_TEST_POSTGRES", "").strip().lower() == "required"
    db = dj_database_url.parse(url)
    shown = url.replace(f":{db['PASSWORD']}@", ":***@") if db.get("PASSWORD") else url
    if db["ENGINE"] != "django.db.backends.postgresql":
        print(f"SYNAPSE_TEST_DATABASE_URL={shown} is not a postgres:// URL.", file=sys.stderr)
        return 2
    params = {
        "host": db["HOST"] or None,
        "port": db["PORT"] or None,
        "user": db["USER"] or None,
        "password": db["PASSWORD"] or None,
        "connect_timeout": 3,
    }
    error = None
    # The database itself need not exist: Django creates test_<name> from the "postgres" one.
    for dbname in (db["NAME"], "postgres"):
        try:
            psycopg.connect(dbname=dbname, **params).close()
            break
        except psycopg.Error as exc:
            error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    else:
        verdict = "required but unreachable" if required else "skipped"
        print(
            f"== PostgreSQL pass {verdict}: no answer from {shown} ({error}). Start PostgreSQL "
            "or set SYNAPSE_TEST_DATABASE_URL.",
            file=sys.stderr,
        )
        return 2 if required else 1
    test_db = f"test_{db['NAME']}{os.environ.get('SYNAPSE_TEST_DB_SUFFIX', '').strip()}"
    databases = f"test database {test_db}, or {test_db}_gw<n> for each xdist worker"
    print(f"== PostgreSQL pass on {shown} ({databases})", file=sys.stderr)
    print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
