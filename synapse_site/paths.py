"""Where Synapse keeps its files; read by settings.py and by gunicorn.conf.py (no Django there)."""

from __future__ import annotations

import os
from collections.abc import Mapping
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
