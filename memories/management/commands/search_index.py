"""`manage.py search_index [--rebuild] [--check]`: repair and verify the full-text index."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import connection


class Command(BaseCommand):
    help = (
        "Rebuild the full-text search index from the memories table (--rebuild) and/or "
        "verify it (--check: triggers present, FTS5 integrity-check, index equal to a fresh "
        "build). Run --rebuild after restoring a backup, after a migration that rebuilt "
        "the memories table, or when --check reports a problem."
    )

    def add_arguments(self, parser):
        parser.add_argument("--rebuild", action="store_true", help="Recreate and refill it.")
        parser.add_argument("--check", action="store_true", help="Verify it; exit 1 if bad.")

    def handle(self, *args, rebuild: bool, check: bool, **options):
        if connection.vendor != "sqlite":
            raise CommandError("The search index is managed here only on SQLite.")
        from memories.search import sqlite

        if not (rebuild or check):
            raise CommandError("Say what to do: --rebuild, --check, or both.")
        if rebuild:
            count = sqlite.rebuild_index()
            self.stdout.write(f"Search index rebuilt: {count} memories indexed.")
        if check:
            problems = sqlite.index_problems()
            if problems:
                for problem in problems:
                    self.stderr.write(problem)
                raise CommandError("The search index is not sound (see above).")
            self.stdout.write("Search index OK.")
