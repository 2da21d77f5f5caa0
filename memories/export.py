"""A mind's memories as one JSON document or a CSV table, streamed row by row.

The two forms and what each holds: docs/operations.md#one-mind-export-and-import.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from memories.fields import CSV_COLUMNS, EXPORT_EXTRA, EXPORT_FIELDS, iso, memory_to_dict
from memories.models import Memory
from minds.models import Mind

FORMATS = ["json", "csv"]
CHUNK = 500
EXPORT_VERSION = 1
TAG_SEPARATOR = ", "


def _memories(mind: Mind) -> Iterator[Memory]:
    return Memory.objects.filter(mind=mind).order_by("category", "key").iterator(CHUNK)


def export_record(memory: Memory, *, now: datetime) -> dict[str, Any]:
    """The memory as exported: its public fields and whether it had expired."""
    record = {**memory_to_dict(memory), EXPORT_EXTRA: memory.is_expired(now)}
    return {name: record[name] for name in EXPORT_FIELDS}


def export_filename(mind: Mind, *, output: str, now: datetime) -> str:
    return f"synapse-{mind.pk}-{now:%Y%m%d-%H%M%S}.{output}"


def export_json(*, mind: Mind, now: datetime) -> Iterator[str]:
    """`{"synapse_export": 1, "mind": {…}, "exported_at": …, "memories": […], "total": N}`."""
    head = {
        "synapse_export": EXPORT_VERSION,
        "mind": {
            "id": mind.pk,
            "name": mind.name,
            "description": mind.description,
            "created_at": iso(mind.created_at),
        },
        "exported_at": iso(now),
    }
    yield json.dumps(head, ensure_ascii=False)[:-1] + ', "memories": ['
    total = 0
    lines: list[str] = []
    for memory in _memories(mind):
        separator = ",\n" if total else "\n"
        lines.append(separator + json.dumps(export_record(memory, now=now), ensure_ascii=False))
        total += 1
        if len(lines) >= CHUNK:
            yield "".join(lines)
            lines = []
    yield "".join(lines) + f'\n], "total": {total}}}\n'


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """Empty for null, true/false as in the JSON form, text that could run as a formula behind
    a `'`; anything else as it is."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def export_csv(*, mind: Mind, now: datetime) -> Iterator[str]:
    """A header row, then one row per memory (RFC 4180 quoting: commas, quotes, newlines)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for count, memory in enumerate(_memories(mind), start=1):
        record = export_record(memory, now=now)
        record["tags"] = TAG_SEPARATOR.join(record["tags"])
        writer.writerow([_cell(record[column]) for column in CSV_COLUMNS])
        if count % CHUNK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
