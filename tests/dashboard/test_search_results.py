"""The memory table's search results: the preview shows the content (the key once, as the
title), a memory opened from a search leads back to it and so does its deletion, and the
tag filter takes several tags (all must match), offers the mind's tags and, when nothing
matches, says which filter to loosen."""

from __future__ import annotations

from html import unescape
from urllib.parse import quote

import pytest

from memories.models import Memory
from tests.dashboard.conftest import agent_store, shown

pytestmark = pytest.mark.django_db

OFFICE = "Works from home every day except Wednesday"


def url(mind, rest: str = "") -> str:
    return f"/dashboard/minds/{mind.pk}/memories/{rest}"


def keys(response) -> list[str]:
    return [row["memory"].key for row in response.context["rows"]]


@pytest.fixture
def tagged(mind):
    agent_store(mind, key="office_days_2", content=OFFICE, tags=["office", "munich"])
    agent_store(
        mind,
        key="note_berlin",
        content="Berlin office opens at 8",
        tags=["office"],
        category="note",
    )
    agent_store(mind, key="note_lunch", content="Lunch in Munich", tags=["munich", "food"])
    return mind


# --- the preview --------------------------------------------------------------------------


def test_a_key_match_previews_the_content_and_shows_the_key_once(web, tagged):
    # "office" is in office_days_2's key and tags, not in its content.
    memory = Memory.objects.get(key="office_days_2")
    html = web.get(url(tagged), {"q": "office"}).content.decode()
    start = html.index(f'id="row-{memory.pk}"')
    row = html[start : html.index("</tr>", start)]
    assert f'<div class="preview">{OFFICE}</div>' in row
    assert row.count("office_days_2") == 1


def test_a_content_match_is_marked_in_the_content(web, tagged):
    html = web.get(url(tagged), {"q": "wednesday"}).content.decode()
    assert "except <mark>Wednesday</mark>" in html


# --- back to the search after a delete ------------------------------------------------------


def test_a_memory_opened_from_a_search_deletes_back_to_that_search(web, tagged):
    search = url(tagged) + "?q=office&tag=munich&per_page=25"
    memory = Memory.objects.get(key="office_days_2")
    page = web.get(search)
    detail = url(tagged, f"{memory.pk}/")
    link = f'href="{detail}?next={quote(search, safe="")}"'
    assert link in page.content.decode()

    opened = web.get(detail, {"next": search})
    html = opened.content.decode()
    assert f'href="{url(tagged, f"{memory.pk}/delete/")}?next={quote(search, safe="")}"' in html
    assert "Back to the results" in html

    confirm = url(tagged, f"{memory.pk}/delete/")
    form = shown(web, confirm, next=search)
    assert unescape(form["next"]) == search
    response = web.post(confirm, {"version": form["version"], "next": search})
    assert response.status_code == 302 and response["Location"] == search
    assert not Memory.objects.filter(pk=memory.pk).exists()


@pytest.mark.parametrize(
    "unsafe", ["https://evil.example/", "//evil.example/x", "javascript:alert(1)"]
)
def test_an_unsafe_next_is_refused(web, tagged, unsafe):
    memory = Memory.objects.get(key="office_days_2")
    detail = web.get(url(tagged, f"{memory.pk}/"), {"next": unsafe}).content.decode()
    assert "evil.example" not in detail and "javascript:" not in detail
    assert "Back to the results" not in detail
    confirm = url(tagged, f"{memory.pk}/delete/")
    version = shown(web, confirm)["version"]
    response = web.post(confirm, {"version": version, "next": unsafe})
    assert response["Location"] == url(tagged)


def test_a_plain_list_adds_no_next(web, tagged):
    memory = Memory.objects.get(key="office_days_2")
    html = web.get(url(tagged)).content.decode()
    assert f'href="{url(tagged, f"{memory.pk}/")}"' in html


# --- several tags ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [{"tag": "office,munich"}, {"tag": " Office ,  MUNICH, office"}, {"tag": ["office", "munich"]}],
)
def test_several_tags_must_all_match(web, tagged, params):
    response = web.get(url(tagged), params)
    assert keys(response) == ["office_days_2"]
    assert response.context["form"].cleaned_data["tag"] == "office, munich"


def test_several_tags_narrow_a_search_too(web, tagged):
    assert keys(web.get(url(tagged), {"q": "munich", "tag": "munich, food"})) == ["note_lunch"]


def test_one_tag_still_works(web, tagged):
    assert set(keys(web.get(url(tagged), {"tag": "office"}))) == {"office_days_2", "note_berlin"}


def test_too_many_tags_are_an_error_not_a_500(web, tagged):
    response = web.get(url(tagged), {"tag": ",".join(f"t{i}" for i in range(11))})
    assert response.status_code == 200
    assert "At most 10 tags" in str(response.context["form"].errors["tag"])


def test_an_unknown_tag_is_named_and_each_filter_can_be_loosened(web, tagged):
    response = web.get(url(tagged), {"tag": "office, nowhere", "category": "note"})
    assert keys(response) == []
    html = response.content.decode()
    assert "No memory of this mind has the tag “nowhere”." in html
    loosen = {way["label"]: way for way in response.context["loosen"]}
    # Without "nowhere": the note tagged office; without both tags: every note.
    assert loosen["the tag “nowhere”"]["count"] == 1
    assert loosen["the tag “nowhere”"]["url"] == "?category=note&tag=office"
    assert loosen["the tags “office, nowhere”"] == {
        "label": "the tags “office, nowhere”",
        "url": "?category=note",
        "count": 1,
    }
    assert loosen["Category: note"]["count"] == 0
    assert loosen["the tag “office”"]["count"] == 0


def test_the_mind_s_tags_are_offered_with_counts_and_no_one_else_s(web, tagged, stranger_mind):
    agent_store(stranger_mind.mind, key="secret", tags=["stranger-only"])
    html = web.get(url(tagged)).content.decode()
    assert '<datalist id="mind-tags">' in html
    assert '<option value="office" data-tag="office">2 memories</option>' in html
    assert '<option value="food" data-tag="food">1 memory</option>' in html
    assert "stranger-only" not in html
    assert 'list="mind-tags"' in html and "Tags (all must match)" in html


def test_the_offered_tags_are_bounded(web, mind):
    for i in range(120):
        agent_store(mind, key=f"k{i}", tags=[f"tag{i:03}"])
    html = web.get(url(mind)).content.decode()
    assert html.count('data-tag="') == 100
