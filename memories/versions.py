"""A memory's version: what a reader sends back so that its change, verification or deletion
lands only on the memory it read (the API's ETag and If-Match, the dashboard's forms).

The version is a digest of the memory as every face shows it (`fields.memory_to_dict`), so
every write changes it: content, tags, verification and `updated_at` are all in it, and it
needs no column that a write could forget to bump. Two writes within one clock tick still
give two versions unless they leave the memory exactly as it was, and then the version names
exactly what the reader saw.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from memories.fields import memory_to_dict
from memories.models import Memory

# A version as a caller gives it: one, any of several (a list of ETags), or None (no check).
Expected = str | Sequence[str] | None


def memory_version(memory: Memory) -> str:
    """The memory's current version: 32 hexadecimal digits."""
    # ASCII-only JSON: any stored text, lone surrogates included, encodes the same way.
    shown = json.dumps(memory_to_dict(memory), ensure_ascii=True, separators=(",", ":"))
    return hashlib.blake2b(shown.encode("ascii"), digest_size=16).hexdigest()


def is_version(memory: Memory, expected: Expected) -> bool:
    """Whether `memory` is the version the caller expects (always, when it expects none)."""
    if expected is None:
        return True
    versions = (expected,) if isinstance(expected, str) else expected
    return memory_version(memory) in versions
