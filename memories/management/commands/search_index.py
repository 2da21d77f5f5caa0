"""`manage.py search_index [--rebuild] [--check]`: repair and verify the full-text index."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS

from memories.search import backend


class Command(BaseCommand):
    help = (
        "Rebuild the full-text search index from the memories table (--rebuild) and/or "
        "verify it (--check: triggers present, index equal to a fresh build; on SQLite also "
        "FTS5's integrity-check). Run --rebuild after restoring a backup or copying data in "
        "without triggers, or when --check reports a problem."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rebuild", action="store_true", help="Recreate and refill it.")
        parser.add_argument("--check", action="store_true", help="Verify it; exit 1 if bad.")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS, help="Database alias.")

    def handle(self, *args: Any, rebuild: bool, check: bool, database: str, **options: Any) -> None:
        if not (rebuild or check):
            raise CommandError("Say what to do: --rebuild, --check, or both.")
        try:
            search = backend(database)
        except NotImplementedError as exc:
            raise CommandError(str(exc)) from None
        if rebuild:
            count = search.rebuild_index(using=database)
            self.stdout.write(f"Search index rebuilt: {count} memories indexed.")
        if check:
            problems = search.index_problems(using=database)
            if problems:
                for problem in problems:
                    self.stderr.write(problem)
                raise CommandError("The search index is not sound (see above).")
            self.stdout.write("Search index OK.")
