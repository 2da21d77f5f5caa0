"""Random, non-sequential public ids such as `m_…` and `mem_…`."""

from __future__ import annotations

import secrets
import string

ID_ALPHABET = string.ascii_lowercase + string.digits


def random_id(prefix: str, length: int = 20) -> str:
    """`prefix` + `length` random characters (20 of 36 symbols is about 103 bits)."""
    return prefix + "".join(secrets.choice(ID_ALPHABET) for _ in range(length))
