from __future__ import annotations

from io import TextIOBase
from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_search_index(
    sender: AppConfig,
    using: str,
    verbosity: int = 1,
    stdout: TextIOBase | None = None,
    **kwargs: Any,
) -> None:
    # On SQLite, a migration that alters memories_memory remakes the table, dropping the
    # FTS5 triggers and renumbering rowids: rebuild the index at the end of that migrate.
    from memories.search import sqlite

    if sqlite.ensure_index(using=using) and verbosity >= 1 and stdout is not None:
        stdout.write(f"Search index rebuilt on {using!r}: the memories table had been remade.\n")


def _ensure_vectors_version(sender: AppConfig, using: str, **kwargs: Any) -> None:
    # The same for the triggers that keep the mind's vectors version (search/semantic.py).
    from memories.search import semantic

    semantic.ensure_version_triggers(using=using)


def _wake_worker() -> None:
    # Imported on first use: huey opens its queue when its module loads.
    from memories.tasks import wake

    wake()


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        post_migrate.connect(_ensure_search_index, sender=self)
        post_migrate.connect(_ensure_vectors_version, sender=self)
        from memories.embeddings import outbox

        outbox.on_queued(_wake_worker)
