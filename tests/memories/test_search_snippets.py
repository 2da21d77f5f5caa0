"""A search snippet is always of the content, on both backends: the matched words marked
when the content matched, its start when only the key or a tag did (the key is shown beside
it, so a snippet of the key would show it twice and hide what the memory says)."""

from __future__ import annotations

import pytest

from memories.search import backend, memory_search
from memories.search.query import parse_query
from tests.factories import memory_row

pytestmark = pytest.mark.django_db

OFFICE = "Works from home every day except Wednesday"
LONG = (
    "Works from home every day except Wednesday, when the whole team meets at the Munich "
    "office on the third floor and everyone brings something for the long lunch table."
)


def snippet(mind, q: str) -> str:
    [hit] = memory_search(mind=mind, q=q, mode="keyword").hits
    return hit.snippet


def test_a_match_in_the_key_shows_the_content_not_the_key(mind):
    memory_row(mind, "office_days_2", OFFICE)
    assert snippet(mind, "office") == OFFICE


def test_a_match_in_a_tag_shows_the_content(mind):
    memory_row(mind, "note_lunch", "Brings pasta on Fridays.", tags=["canteen"])
    assert snippet(mind, "canteen") == "Brings pasta on Fridays."


def test_a_long_content_matched_by_its_key_shows_its_start(mind):
    memory_row(mind, "fact_schedule", LONG)
    shown = snippet(mind, "schedule")
    assert "«" not in shown and "fact_schedule" not in shown
    assert shown.startswith("Works from home every day") and shown.endswith("…")


def test_a_match_in_the_content_marks_it_there_even_when_the_key_matches_too(mind):
    memory_row(mind, "office_days", LONG)
    shown = snippet(mind, "office")
    assert "«office»" in shown and "office_days" not in shown


def test_snippets_of_given_memories_follow_the_same_rule(mind):
    """The snippets hybrid search reads for its page (the engine's `snippets`)."""
    by_key = memory_row(mind, "office_days_2", OFFICE)
    by_content = memory_row(mind, "note_floor", "The Munich office is on the third floor.")
    found = backend().snippets(
        mind_id=mind.pk, parsed=parse_query("office"), memories=[by_key, by_content]
    )
    assert found == {
        by_key.pk: OFFICE,
        by_content.pk: "The Munich «office» is on the third floor.",
    }


def test_another_minds_memory_gives_no_snippet(mind, stranger_mind):
    memory_row(stranger_mind.mind, "office_days_2", OFFICE)
    assert memory_search(mind=mind, q="office", mode="keyword").hits == []
