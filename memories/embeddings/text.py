"""What a memory is embedded from: one text per memory, and its digest.

The key carries the topic in the agent's own naming ("preference_coffee"), the tags the broad
subjects; underscores and dashes become spaces so the tokenizer sees words. A write that
changes one of EMBEDDED_FIELDS queues the memory for a new vector (memories/embeddings/
outbox.py); `text_hash` is stored with the vector, so a vector always names the text it is of.
"""

from __future__ import annotations

import hashlib

from memories.models import Memory

# The memory's fields the text is made of: a change to any other field keeps the vector.
EMBEDDED_FIELDS = frozenset({"key", "content", "tags"})


def embedding_text(memory: Memory) -> str:
    """The text the memory's vector is computed from: key as words, content, tags."""
    key = memory.key.replace("_", " ").replace("-", " ")
    tags = ", ".join(memory.tags)
    return f"{key}: {memory.content}" + (f" (tags: {tags})" if tags else "")


def text_hash(text: str) -> str:
    """32 hex characters naming `text` (MemoryVector.text_hash)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
