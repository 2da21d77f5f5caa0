"""Where Synapse keeps its files; read by settings.py and by gunicorn.conf.py (no Django there)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """SYNAPSE_DATA_DIR, or data/ in the project."""
    return Path(environ.get("SYNAPSE_DATA_DIR", str(BASE_DIR / "data")).strip())


def private_dir(path: Path) -> Path:
    """`path`, made owner-only when missing, with each missing folder above it: they hold
    people's memories and the signing key (Path.mkdir would give the parents default modes)."""
    for folder in (*reversed(path.parents), path):
        if not folder.is_dir():
            folder.mkdir(mode=0o700, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """`path`, created empty and owner-only when missing, or made owner-only when others may
    read it: a new file's mode follows the umask (0644, usually), not its folder's, and a
    folder that already existed keeps whatever mode it had."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        # Gone meanwhile, another user's or on a read-only disk: left as it is.
        with suppress(OSError):
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)
    except OSError:
        pass  # no such folder, or not writable: whatever opens the file next says so
    else:
        os.close(fd)
    return path


def private_sqlite_file(path: Path) -> Path:
    """A SQLite database file made owner-only before SQLite opens it (SQLite would make it by
    the umask), with its -wal and -shm files when they exist: SQLite makes those with the
    database file's mode, so new ones follow."""
    for companion in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if companion.exists():
            private_file(companion)
    return private_file(path)
