"""What the dashboard says where there is little to show: a new person's welcome, a new mind's
review queue, and shares and counts that read right at any size."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.charts import share_chart
from tests.factories import many_memories

pytestmark = pytest.mark.django_db


def test_a_person_without_minds_is_welcomed_with_what_to_do_next(other_user):
    web = Client()
    web.force_login(other_user)
    page = web.get("/dashboard/").content.decode()
    assert "Welcome" in page
    assert "Create a mind" in page
    assert "Give its Mind Key to the agent" in page
    assert 'href="/dashboard/minds/new/"' in page


def test_a_new_minds_review_queue_says_what_will_fill_it(web, mind):
    page = web.get(f"/dashboard/minds/{mind.pk}/review/").content.decode()
    assert "Nothing to review yet" in page
    assert "agents store memories with this mind's key" in page
    assert f'href="/dashboard/minds/{mind.pk}/key/#snippets">How to connect an agent' in page
    assert "every memory that is not expired is verified" not in page


def test_a_review_queue_emptied_by_review_says_so(web, mind):
    many_memories(mind, 2, verified=True)
    page = web.get(f"/dashboard/minds/{mind.pk}/review/").content.decode()
    assert "every memory that is not expired is verified" in page
    assert "Nothing to review yet" not in page


def test_the_key_page_shows_how_to_connect_an_agent_without_the_key(web, owner_mind):
    mind = owner_mind.mind
    page = web.get(f"/dashboard/minds/{mind.pk}/key/").content.decode()
    assert 'id="snippets"' in page and "YOUR_MIND_KEY" in page
    assert owner_mind.key not in page


@pytest.mark.parametrize(
    ("part", "whole", "shown"),
    [
        (0, 5039, "0%"),
        (14, 5039, "<1%"),
        (50, 5039, "1%"),
        (5038, 5039, ">99%"),
        (5039, 5039, "100%"),
        (1, 3, "33%"),
        (0, 0, "0%"),
    ],
)
def test_a_share_never_says_none_or_all_when_it_is_not(part, whole, shown):
    assert share_chart(part, whole).percent_text == shown


def test_the_overview_shares_and_counts_read_right(web, mind):
    many_memories(mind, 1200, verified=lambda i: i < 3)
    page = web.get(f"/dashboard/minds/{mind.pk}/").content.decode()
    assert "<strong>&lt;1%</strong> verified: 3 of 1,200 memories" in page
    assert '<span class="stat-number">1,197</span> to review' in page
