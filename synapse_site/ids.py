"""Random, non-sequential public ids such as `m_…` and `mem_…`."""

from __future__ import annotations

import secrets
import string

ID_ALPHABET = string.ascii_lowercase + string.digits


def random_id(prefix: str, length: int = 20) -> str:
    """`prefix` + `length` random characters (20 of 36 symbols is about 103 bits).

    One draw from the whole id space, written in base 36: uniform like drawing each
    character separately, at a seventh of the cost (bulk sync makes an id per memory).
    """
    number = secrets.randbelow(len(ID_ALPHABET) ** length)
    chars = []
    for _ in range(length):
        number, digit = divmod(number, len(ID_ALPHABET))
        chars.append(ID_ALPHABET[digit])
    return prefix + "".join(chars)
