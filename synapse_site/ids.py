"""Random, non-sequential public ids such as `m_…` and `mem_…`."""

from __future__ import annotations

import secrets
import string

ID_ALPHABET = string.ascii_lowercase + string.digits

# How many leading characters the ids of one batch share (random_ids).
SHARED_LENGTH = 4


def random_id(prefix: str, length: int = 20) -> str:
    """`prefix` + `length` random characters (20 of 36 symbols is about 103 bits).

    One draw from the whole id space, written in base 36: uniform like drawing each
    character separately, for less work (bulk sync makes an id per memory).
    """
    number = secrets.randbelow(len(ID_ALPHABET) ** length)
    chars = []
    for _ in range(length):
        number, digit = divmod(number, len(ID_ALPHABET))
        chars.append(ID_ALPHABET[digit])
    return prefix + "".join(chars)


def random_ids(prefix: str, count: int, length: int = 20) -> list[str]:
    """`count` ids of random_id's form for rows written together, sharing their first
    SHARED_LENGTH characters (themselves random, drawn once per call).

    Each id is still random and unrelated to time or order: 16 characters of its own (about
    83 bits) after a random shared start. What the shared start buys is locality. Indexes
    keyed by the id (the primary key, the audit rows' and the tag rows' memory id) then take
    a batch's ids as one run in one place, instead of one at a random spot each: a bulk sync
    changes a few index pages instead of one per memory (docs/performance.md).
    """
    if count <= 1:
        return [random_id(prefix, length) for _ in range(count)]
    shared = prefix + random_id("", SHARED_LENGTH)
    return [random_id(shared, length - SHARED_LENGTH) for _ in range(count)]
