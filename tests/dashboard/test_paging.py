"""Paging the dashboard's lists: page numbers, first and last, a jump, and a page size."""

from __future__ import annotations

import re
from functools import partial

import pytest

from memories.models import Memory
from tests.dashboard.conftest import agent_store
from tests.factories import many_memories

pytestmark = pytest.mark.django_db


seed = partial(
    many_memories, category="fact", key=lambda n: f"k{n:03}", content=lambda n: f"Fact {n}"
)


def keys(response) -> list[str]:
    return [m.key for m in response.context["page"]]


def test_page_last_shows_the_last_page(web, mind):
    seed(mind, 120)
    url = f"/dashboard/minds/{mind.pk}/memories/"
    last = web.get(url, {"sort": "key", "page": "last"})
    assert keys(last) == [f"k{n:03}" for n in range(100, 120)]
    assert "Page 3 of 3" in last.content.decode()


def test_page_numbers_name_the_first_and_the_last(web, mind):
    seed(mind, 30)
    url = f"/dashboard/minds/{mind.pk}/memories/"
    html = web.get(url, {"sort": "key", "per_page": "25", "page": "1"}).content.decode()
    assert "Page 1 of 2" in html
    assert re.search(r'<span class="page-current" aria-current="page">.*?1</span>', html)
    assert (
        'href="?sort=key&amp;per_page=25&amp;page=2"><span class="visually-hidden">Last page'
        in html
    )

    # Far from both ends: the first and last stay, the gaps are an ellipsis.
    seed_more = [f"x{n:03}" for n in range(300)]
    Memory.objects.bulk_create(
        Memory(mind=mind, category="fact", key=key, content="More") for key in seed_more
    )
    html = web.get(url, {"per_page": "25", "page": "7"}).content.decode()
    numbers = re.findall(
        r'<li>(?:<a href="[^"]*page=(\d+)"><span class="visually-hidden">'
        r'|<span class="page-(current|gap)")',
        html,
    )
    assert numbers[0] == ("1", "") and numbers[-1] == ("14", "")
    assert ("", "gap") in numbers and ("", "current") in numbers


def test_the_jump_form_keeps_the_filters_and_the_page_size(web, mind):
    seed(mind, 60)
    url = f"/dashboard/minds/{mind.pk}/memories/"
    html = web.get(url, {"category": "fact", "per_page": "25", "page": "2"}).content.decode()
    jump = html[html.index('<label for="page-jump">') - 400 : html.index('<label for="page-jump">')]
    assert '<input type="hidden" name="category" value="fact">' in jump
    assert '<input type="hidden" name="per_page" value="25">' in jump
    assert 'name="page"' not in jump
    assert 'id="page-jump" min="1" max="3" value="2"' in html


def test_page_size_is_chosen_bounded_and_carried(web, mind):
    seed(mind, 230)
    url = f"/dashboard/minds/{mind.pk}/memories/"
    assert len(keys(web.get(url, {"per_page": "200"}))) == 200
    assert len(keys(web.get(url, {"per_page": "25"}))) == 25
    assert len(keys(web.get(url, {"per_page": "100000"}))) == 50  # not offered: the default
    assert len(keys(web.get(url, {"per_page": "abc"}))) == 50
    html = web.get(url, {"per_page": "100", "category": "fact"}).content.decode()
    # Links carry it; the filter form carries it; the size form keeps the filters.
    assert 'href="?per_page=100&amp;category=fact&amp;page=2"' in html
    start = html.index('class="filters"')
    filters = html[start : html.index("</form>", start)]
    assert '<input type="hidden" name="per_page" value="100">' in filters
    assert '<option value="100" selected>100</option>' in html


def test_the_review_queue_and_the_activity_page_the_same_way(web, mind):
    for n in range(30):
        agent_store(mind, key=f"q{n:02}", confidence=n / 100)
    review = web.get(f"/dashboard/minds/{mind.pk}/review/", {"per_page": "25", "page": "last"})
    assert [m.key for m in review.context["page"]] == [f"q{n:02}" for n in range(25, 30)]
    assert "Page 2 of 2" in review.content.decode()
    activity = web.get(f"/dashboard/minds/{mind.pk}/activity/", {"per_page": "25", "page": "2"})
    assert len(activity.context["page"].object_list) == 5
    html = activity.content.decode()
    start = html.index("filters-inline")
    inline = html[start : html.index("</form>", start)]
    assert '<input type="hidden" name="per_page" value="25">' in inline


def test_one_list_query_per_page(web, mind, django_assert_max_num_queries):
    seed(mind, 120)
    url = f"/dashboard/minds/{mind.pk}/memories/"
    with django_assert_max_num_queries(20) as queries:
        web.get(url, {"page": "2"})
    counts = [
        q
        for q in queries.captured_queries
        if "COUNT(" in q["sql"].upper()
        and "memorytag" not in q["sql"]  # the tags offered
        and "chat_chatmessage" not in q["sql"]  # the chat tab's unread badge
    ]
    assert len(counts) == 1  # the page and its total read once, not once for the paginator
