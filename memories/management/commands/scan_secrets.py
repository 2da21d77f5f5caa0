"""`manage.py scan_secrets [--redact] [--mind m_…]`: the credentials stored memories hold.

Reports each one found (mind, memory id, key, field, kind: never the credential itself).
With --redact, each is replaced by `[redacted: <kind>]` through the core, as an edit by the
system, and the earlier values of that field leave the memory's audit trail (a purge of
those values: memories/services.py#memory_values_purge).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memories import services
from memories.actors import Actor
from memories.models import Memory
from memories.secrets import find_secrets, kinds, marker
from memories.secrets import redact as redacted


class Command(BaseCommand):
    help = (
        "Report the credentials stored memories hold (never printing them); with --redact, "
        "replace each by [redacted: <kind>] and purge that field's earlier values."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--redact", action="store_true", help="Redact what is found.")
        parser.add_argument("--mind", help="Only this mind (m_…).")

    def handle(self, *args: Any, redact: bool, mind: str | None, **options: Any) -> None:
        memories = Memory.objects.order_by("mind_id", "id")
        if mind:
            memories = memories.filter(mind_id=mind)
        found = 0
        for memory in memories.iterator(chunk_size=500):
            body: dict[str, Any] = {}
            content = find_secrets(memory.content)
            if content:
                body["content"] = redacted(memory.content, content)
                self._report(memory, "content", kinds(content))
            tags, changed = [], False
            for tag in memory.tags:
                in_tag = find_secrets(tag)
                if in_tag:
                    self._report(memory, "tags", kinds(in_tag))
                    changed = True
                tags.append(marker(in_tag[0].kind).lower() if in_tag else tag)
            if changed:
                body["tags"] = tags
            found += len(body)
            if redact and body:
                services.memory_change(memory=memory, actor=Actor.system(), body=body)
                services.memory_values_purge(memory=memory, fields=list(body))
        verb = "redacted" if redact else "found"
        self.stdout.write(f"{found} field(s) holding a credential {verb}.")

    def _report(self, memory: Memory, field: str, named: list[str]) -> None:
        self.stdout.write(
            f"{memory.mind_id}\t{memory.pk}\t{memory.key}\t{field}\t{', '.join(named)}"
        )
