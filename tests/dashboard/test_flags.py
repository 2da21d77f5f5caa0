"""Hygiene flags on the review queue, the memory page and "verify all matching"; related
memories on the memory page."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.hygiene.health import hygiene_check
from memories.models import Memory
from tests.dashboard.conftest import agent_store
from tests.dashboard.test_verify_matching import confirm

pytestmark = pytest.mark.django_db


PLACES = ["office", "gym", "dentist", "bakery", "school", "library", "bank", "tailor", "barber"]
CITIES = [
    ("Berlin", "Munich"),
    ("Hamburg", "Cologne"),
    ("Paris", "Lyon"),
    ("Vienna", "Graz"),
    ("Zurich", "Basel"),
    ("Rome", "Milan"),
    ("Madrid", "Seville"),
    ("Oslo", "Bergen"),
    ("Prague", "Brno"),
]
PLAIN = ["Has a cat called Miso", "Plays the cello on Sundays", "Allergic to peanuts"]


def _contradiction(mind, n=0):
    place, (here, there) = PLACES[n], CITIES[n]
    a = agent_store(mind, key=place, content=f"The {place} is in {here}")
    b = agent_store(mind, key=f"{place}_now", content=f"The {place} is in {there}")
    return a, b


def _row(html: str, memory: Memory) -> str:
    start = html.index(f'<tr id="row-{memory.pk}"')
    return html[start : html.index("</tr>", start)]


def test_a_review_row_says_what_it_contradicts_with_a_link(web, mind):
    a, b = _contradiction(mind)
    plain = agent_store(mind, key="plain", content=PLAIN[0])
    hygiene_check(mind=mind)
    html = web.get(f"/dashboard/minds/{mind.pk}/review/").content.decode()
    row = _row(html, a)
    assert "Contradicts:" in row
    assert f'href="/dashboard/minds/{mind.pk}/memories/{b.pk}/"><code>office_now</code>' in row
    assert "Different place" in row
    assert "Contradicts:" not in _row(html, plain) and "Near-repeat" not in _row(html, plain)


def test_a_review_row_names_a_near_repeat(web, mind):
    a = agent_store(mind, key="coffee", content="Likes strong black coffee in the morning")
    b = agent_store(mind, key="coffee_again", content="Likes strong black coffee every morning")
    hygiene_check(mind=mind)
    html = web.get(f"/dashboard/minds/{mind.pk}/review/").content.decode()
    assert re.search(rf"Near-repeat of:</span> <a href=\"[^\"]+/{b.pk}/\">", _row(html, a))


def _queries(web, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert web.get(url).status_code == 200
    return len(queries)


def test_the_review_page_reads_flags_in_a_fixed_number_of_queries(web, mind):
    url = f"/dashboard/minds/{mind.pk}/review/"
    _contradiction(mind)
    hygiene_check(mind=mind)
    few = _queries(web, url)
    for n in range(1, len(PLACES)):
        _contradiction(mind, n)
    hygiene_check(mind=mind)
    html = web.get(url).content.decode()
    assert html.count("Contradicts:") == 2 * len(PLACES)
    assert _queries(web, url) == few


def test_the_memory_page_shows_flags_and_related_memories(web, mind, stranger_mind):
    a = agent_store(mind, key="office", content="The office is in Berlin", tags=["work", "city"])
    b = agent_store(mind, key="office_now", content="The office is in Munich")
    near = agent_store(mind, key="desk", content="Sits by the window", tags=["work", "city"])
    far = agent_store(mind, key="lunch", content="Lunch at noon", tags=["work"])
    agent_store(mind, key="cat", content="Has a cat", tags=["home"])
    theirs = agent_store(stranger_mind.mind, key="their_office", content="x", tags=["work"])
    hygiene_check(mind=mind)
    html = web.get(f"/dashboard/minds/{mind.pk}/memories/{a.pk}/").content.decode()
    assert "Contradicts:" in html
    assert f'href="/dashboard/minds/{mind.pk}/memories/{b.pk}/"' in html
    assert f'href="/dashboard/minds/{mind.pk}/hygiene/"' in html
    related = html[html.index('id="related-heading"') : html.index('id="history-heading"')]
    assert related.index(near.key) < related.index(far.key)
    assert "2 shared tags" in related and "1 shared tag" in related
    assert "cat" not in related and theirs.pk not in related and "their_office" not in related


def test_a_memory_without_tags_or_flags(web, mind):
    lone = agent_store(mind, key="lone", content="Nothing like it")
    hygiene_check(mind=mind)
    html = web.get(f"/dashboard/minds/{mind.pk}/memories/{lone.pk}/").content.decode()
    assert "No other memory shares a tag with this one." in html
    assert "Contradicts:" not in html and "Near-repeat of:" not in html


def test_verify_matching_says_how_many_are_flagged(web, mind):
    a, b = _contradiction(mind)
    for n, text in enumerate(PLAIN):
        agent_store(mind, key=f"plain_{n}", content=text)
    hygiene_check(mind=mind)
    response, _ = confirm(web, mind, verified="no")
    html = response.content.decode()
    assert "<strong>2 of these 5</strong> are flagged as contradicting" in html
    assert f"/memories/{a.pk}/" in html and f"/memories/{b.pk}/" in html
    assert 'name="skip_flagged" checked' in html  # leaving them out is the default


def test_verify_matching_leaves_flagged_ones_out_when_ticked(web, mind):
    _contradiction(mind)
    plain = agent_store(mind, key="plain", content=PLAIN[1])
    hygiene_check(mind=mind)
    _, form = confirm(web, mind, verified="no")
    done = web.post(
        f"/dashboard/minds/{mind.pk}/memories/verify-all/",
        {**form, "skip_flagged": "on"},
        follow=True,
    )
    assert "Verified 1 memory; left 2 flagged memories unverified" in done.content.decode()
    verified = set(Memory.objects.filter(verified=True).values_list("pk", flat=True))
    assert verified == {plain.pk}
    # Unticked (the box sends nothing): every matching memory is verified.
    _, form = confirm(web, mind, verified="no")
    web.post(f"/dashboard/minds/{mind.pk}/memories/verify-all/", form)
    assert Memory.objects.filter(verified=True).count() == 3


def test_verify_matching_without_flags_says_nothing_of_them(web, mind):
    agent_store(mind, key="plain", content=PLAIN[1])
    hygiene_check(mind=mind)
    response, _ = confirm(web, mind, verified="no")
    html = response.content.decode()
    assert "flagged" not in html and "Verify all 1" in html
