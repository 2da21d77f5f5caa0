"""The review queue and the default table order are read from their indexes: any page (the
last one too) and the count touch only the index and the page's rows, never a sort of the
whole mind."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.filters import MemoryFilters
from memories.models import Memory
from memories.selectors import memory_list

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite_only]


def plans(mind, **arguments) -> list[list[tuple[int, int, str]]]:
    """The query plan of each statement memory_list runs for these arguments: (id, parent,
    step) rows."""
    Memory.objects.create(mind=mind, category="fact", key="k", content="c")
    with CaptureQueriesContext(connection) as queries:
        memory_list(mind=mind, **arguments)
    shapes = []
    with connection.cursor() as cursor:
        for query in queries.captured_queries:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
            shapes.append([(row[0], row[1], row[3]) for row in cursor.fetchall()])
    return shapes


@pytest.mark.parametrize(
    ("filters", "sort", "index"),
    [
        (MemoryFilters(verified=False), "review", "memory_review_idx"),
        (MemoryFilters(), "-updated", "memory_updated_idx"),
        (MemoryFilters(), "updated", "memory_updated_idx"),
    ],
)
def test_a_deep_page_and_the_count_come_from_the_index(mind, filters, sort, index):
    count, page = plans(mind, filters=filters, sort=sort, offset=9000, limit=50)
    assert "COVERING INDEX" in " ".join(step for *_, step in count)  # no row read to count
    # The page's ids: from the index alone, in its order (no sort of the mind's memories);
    # then only their rows, by primary key (the 50 of them sorted).
    (subquery,) = [node for node, _, step in page if step.startswith("LIST SUBQUERY")]
    picking = " | ".join(step for _, parent, step in page if parent == subquery)
    assert f"COVERING INDEX {index}" in picking and "TEMP B-TREE" not in picking
    assert any("(id=?)" in step for _, parent, step in page if parent == 0)
